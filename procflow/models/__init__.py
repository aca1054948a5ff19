"""Layer 1: the ``LanguageModel`` protocol, providers over httpx, and the model-id router."""

from procflow.models.anthropic import AnthropicModel
from procflow.models.base import LanguageModel, ModelRequest, ModelResponse, ToolChoice
from procflow.models.openai_compatible import OpenAICompatibleModel
from procflow.models.router import resolve_model

__all__ = [
    "AnthropicModel",
    "LanguageModel",
    "ModelRequest",
    "ModelResponse",
    "OpenAICompatibleModel",
    "ToolChoice",
    "resolve_model",
]

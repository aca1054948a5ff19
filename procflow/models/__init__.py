"""Layer 1: the ``LanguageModel`` protocol, providers over httpx, and the model-id router."""

from procflow.models.base import LanguageModel, ModelRequest, ModelResponse, ToolChoice
from procflow.models.router import resolve_model

__all__ = ["LanguageModel", "ModelRequest", "ModelResponse", "ToolChoice", "resolve_model"]

"""Layer 1: the ``LanguageModel`` protocol, providers over httpx, and the model-id router.

The provider classes load on first use, so code that only needs the protocol (a scripted model, an
agent on a model object) never imports httpx.
"""

import importlib as _importlib
import typing as _typing

from procflow.models.base import LanguageModel, ModelRequest, ModelResponse, ToolChoice
from procflow.models.router import resolve_model

if _typing.TYPE_CHECKING:
    from procflow.models.anthropic import AnthropicModel
    from procflow.models.openai_compatible import OpenAICompatibleModel

__all__ = [
    "AnthropicModel",
    "LanguageModel",
    "ModelRequest",
    "ModelResponse",
    "OpenAICompatibleModel",
    "ToolChoice",
    "resolve_model",
]

_LAZY = {
    "AnthropicModel": "procflow.models.anthropic",
    "OpenAICompatibleModel": "procflow.models.openai_compatible",
}


def __getattr__(name: str) -> object:
    home = _LAZY.get(name)
    if home is None:
        raise AttributeError(f"module 'procflow.models' has no attribute {name!r}")
    value = getattr(_importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

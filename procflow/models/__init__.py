"""Layer 1: the ``LanguageModel`` protocol, providers over httpx, the model-id router, and the provider
prompt (``PromptMessage`` and its parts) a model request carries.

The provider classes load on first use, so code that only needs the protocol (a scripted model, an
agent on a model object) never imports httpx.
"""

import importlib as _importlib
import typing as _typing

from procflow._messages.prompt import (
    PromptFile,
    PromptMessage,
    PromptReasoning,
    PromptText,
    PromptToolCall,
    PromptToolResult,
)
from procflow._public import publish as _publish
from procflow._tools import ToolSpec
from procflow.models._base import LanguageModel, ModelRequest, ModelResponse
from procflow.models._router import resolve_model

if _typing.TYPE_CHECKING:
    from procflow.models._anthropic import AnthropicModel
    from procflow.models._openai_compatible import OpenAICompatibleModel

__all__ = [
    "AnthropicModel",
    "LanguageModel",
    "ModelRequest",
    "ModelResponse",
    "OpenAICompatibleModel",
    "PromptFile",
    "PromptMessage",
    "PromptReasoning",
    "PromptText",
    "PromptToolCall",
    "PromptToolResult",
    "ToolSpec",
    "resolve_model",
]

_LAZY = {
    "AnthropicModel": "procflow.models._anthropic",
    "OpenAICompatibleModel": "procflow.models._openai_compatible",
}


_publish(__name__, globals(), [name for name in __all__ if name not in _LAZY])


def __getattr__(name: str) -> object:
    home = _LAZY.get(name)
    if home is None:
        raise AttributeError(f"module 'procflow.models' has no attribute {name!r}")
    value = getattr(_importlib.import_module(home), name)
    _publish(__name__, {name: value}, [name])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

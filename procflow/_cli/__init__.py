"""Layer 5: the ``procflow`` command — run pipelines over stored conversations, draw, check, chat, serve.

Private: the command is the interface (``procflow …`` or ``python -m procflow …``). The names below are
what the command's modules, the scale-out runners and the tests share.

The names load on first use, so the ``procflow`` command starts without importing the engine.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from procflow._chat.format import (
        Conversation,
        ConversationFormatError,
        conversation_to_record,
        parse_conversation,
    )
    from procflow._cli.app import build_parser, main
    from procflow._cli.loading import DEFAULT_PIPELINE, LoadedPipeline, PipelineLoadError, load_pipeline
    from procflow._cli.processing import ConversationProcessor, Outcome, PhaseMode
    from procflow._scale import run_ray

__all__ = [
    "DEFAULT_PIPELINE",
    "Conversation",
    "ConversationFormatError",
    "ConversationProcessor",
    "LoadedPipeline",
    "Outcome",
    "PhaseMode",
    "PipelineLoadError",
    "build_parser",
    "conversation_to_record",
    "load_pipeline",
    "main",
    "parse_conversation",
    "run_ray",
]

_HOMES = {
    "build_parser": "app",
    "main": "app",
    "Conversation": "procflow._chat.format",
    "ConversationFormatError": "procflow._chat.format",
    "conversation_to_record": "procflow._chat.format",
    "parse_conversation": "procflow._chat.format",
    "DEFAULT_PIPELINE": "loading",
    "LoadedPipeline": "loading",
    "PipelineLoadError": "loading",
    "load_pipeline": "loading",
    "ConversationProcessor": "processing",
    "Outcome": "processing",
    "PhaseMode": "processing",
    "run_ray": "procflow._scale",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'procflow._cli' has no attribute {name!r}")
    module = home if "." in home else f"procflow._cli.{home}"
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

"""Layer 5: the ``procflow`` command — run pipelines over stored conversations, draw, check, chat.

Also importable: the chat-format conversion (:func:`parse_conversation`, :func:`conversation_to_record`),
pipeline loading (:func:`load_pipeline`), the bundled guard (:func:`default_pipeline`) and the Ray
Data engine of ``procflow run --engine ray`` (:func:`run_ray`).

The names load on first use, so the ``procflow`` command starts without importing the engine.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from procflow._scale import run_ray
    from procflow.cli.app import build_parser, main
    from procflow.cli.chat_format import (
        Conversation,
        ConversationFormatError,
        conversation_to_record,
        parse_conversation,
    )
    from procflow.cli.loading import DEFAULT_PIPELINE, LoadedPipeline, PipelineLoadError, load_pipeline
    from procflow.cli.processing import ConversationProcessor, Outcome, PhaseMode

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
    "Conversation": "chat_format",
    "ConversationFormatError": "chat_format",
    "conversation_to_record": "chat_format",
    "parse_conversation": "chat_format",
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
        raise AttributeError(f"module 'procflow.cli' has no attribute {name!r}")
    module = home if "." in home else f"procflow.cli.{home}"
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

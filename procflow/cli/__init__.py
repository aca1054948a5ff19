"""Layer 5: the ``procflow`` command — run pipelines over stored conversations, draw, check, chat.

Also importable: the chat-format conversion (:func:`parse_conversation`, :func:`conversation_to_record`),
pipeline loading (:func:`load_pipeline`) and the bundled guard (:func:`default_pipeline`).
"""

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
]

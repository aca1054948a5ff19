"""procflow: processors around an LLM agent, composed on a small workflow engine.

The public packages are ``procflow`` (this one: the agent, messages, chunks, tools, tripwires),
:mod:`procflow.processors`, :mod:`procflow.workflows`, :mod:`procflow.models`, :mod:`procflow.testing`,
:mod:`procflow.errors`, and the feature packages :mod:`procflow.memory`, :mod:`procflow.cache` and
:mod:`procflow.server`. Every module or package whose name starts with ``_`` is private.

``import procflow`` is cheap: the agent, messages and processors load on first use of their names
(``procflow.Agent``, ``from procflow import Message``), so a program that only needs the processors
never imports the providers' HTTP stack, and the ``procflow`` command starts in a few milliseconds.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

from procflow._logging import is_tracing, set_tracing
from procflow._public import publish as _publish
from procflow.errors import (
    APICallError,
    ConfigurationError,
    ProcessorResultError,
    ProcflowError,
    WorkflowDefinitionError,
)

if _typing.TYPE_CHECKING:
    from procflow._agent import Agent, CallOptions, GenerateResult, StreamOutput
    from procflow._messages import (
        Chunk,
        DataPart,
        FilePart,
        ImagePart,
        Message,
        MessageContent,
        MessageList,
        ReasoningPart,
        RequestContext,
        SourcePart,
        TextPart,
        ToolCall,
        ToolInvocationPart,
        TripWire,
        TripwireInfo,
        Usage,
    )
    from procflow._tools import Tool, ToolContext, tool
    from procflow.processors import Processor, ProcessorViolation

__version__ = "0.1.0"

_publish(__name__, globals(), ("is_tracing", "set_tracing"))

__all__ = [
    "APICallError",
    "Agent",
    "CallOptions",
    "Chunk",
    "ConfigurationError",
    "DataPart",
    "FilePart",
    "GenerateResult",
    "ImagePart",
    "Message",
    "MessageContent",
    "MessageList",
    "Processor",
    "ProcessorResultError",
    "ProcessorViolation",
    "ProcflowError",
    "ReasoningPart",
    "RequestContext",
    "SourcePart",
    "StreamOutput",
    "TextPart",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolInvocationPart",
    "TripWire",
    "TripwireInfo",
    "Usage",
    "WorkflowDefinitionError",
    "__version__",
    "is_tracing",
    "set_tracing",
    "tool",
]

_LAZY = {
    **dict.fromkeys(("Agent", "CallOptions", "GenerateResult", "StreamOutput"), "procflow._agent"),
    **dict.fromkeys(
        (
            "Chunk",
            "DataPart",
            "FilePart",
            "ImagePart",
            "Message",
            "MessageContent",
            "MessageList",
            "ReasoningPart",
            "RequestContext",
            "SourcePart",
            "TextPart",
            "ToolCall",
            "ToolInvocationPart",
            "TripWire",
            "TripwireInfo",
            "Usage",
        ),
        "procflow._messages",
    ),
    **dict.fromkeys(("Tool", "ToolContext", "tool"), "procflow._tools"),
    **dict.fromkeys(("Processor", "ProcessorViolation"), "procflow.processors"),
}
"""Where each lazily loaded name lives; its package's import rewrites its ``__module__`` to ``procflow``."""


def __getattr__(name: str) -> object:
    home = _LAZY.get(name)
    if home is None:
        raise AttributeError(f"module 'procflow' has no attribute {name!r}")
    value = getattr(_importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

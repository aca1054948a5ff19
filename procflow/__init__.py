"""procflow: processors around an LLM agent, composed on a small workflow engine.

``import procflow`` is cheap: the agent, messages and processors load on first use of their names
(``procflow.Agent``, ``from procflow import Message``), so a program that only needs the processors
never imports the providers' HTTP stack, and the ``procflow`` command starts in a few milliseconds.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

from procflow._logging import is_tracing, set_tracing
from procflow.errors import (
    APICallError,
    ConfigurationError,
    ProcessorResultError,
    ProcflowError,
    WorkflowDefinitionError,
)

if _typing.TYPE_CHECKING:
    from procflow.agent import Agent
    from procflow.messages import Chunk, Message, MessageList, RequestContext, TripWire, TripwireInfo
    from procflow.processors import Processor, ProcessorViolation

__version__ = "0.1.0"

__all__ = [
    "APICallError",
    "Agent",
    "Chunk",
    "ConfigurationError",
    "Message",
    "MessageList",
    "Processor",
    "ProcessorResultError",
    "ProcessorViolation",
    "ProcflowError",
    "RequestContext",
    "TripWire",
    "TripwireInfo",
    "WorkflowDefinitionError",
    "__version__",
    "is_tracing",
    "set_tracing",
]

_LAZY = {
    "Agent": "procflow.agent",
    "Chunk": "procflow.messages",
    "Message": "procflow.messages",
    "MessageList": "procflow.messages",
    "RequestContext": "procflow.messages",
    "TripWire": "procflow.messages",
    "TripwireInfo": "procflow.messages",
    "Processor": "procflow.processors",
    "ProcessorViolation": "procflow.processors",
}


def __getattr__(name: str) -> object:
    home = _LAZY.get(name)
    if home is None:
        raise AttributeError(f"module 'procflow' has no attribute {name!r}")
    value = getattr(_importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

"""procflow: processors around an LLM agent, composed on a small workflow engine."""

from procflow._logging import is_tracing, set_tracing
from procflow.agent import Agent
from procflow.errors import (
    APICallError,
    ConfigurationError,
    ProcessorResultError,
    ProcflowError,
    WorkflowDefinitionError,
)
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

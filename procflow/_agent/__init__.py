"""Layer 4: the agent — ``generate()`` / ``stream()``, tools, and the step loop with processors."""

from procflow._agent._assembly import PrepareStep, PrepareStepProcessor, Processors, ProcessorsFactory
from procflow._agent._config import DEFAULT_API_ERROR_RETRIES, RETRY_FEEDBACK_KEY, CallOptions, OnFinish
from procflow._agent.agent import DEFAULT_MAX_STEPS, Agent
from procflow._agent.memory import MemoryProcessors
from procflow._agent.output import AgentResponse, GenerateResult, StreamOutput

__all__ = [
    "DEFAULT_API_ERROR_RETRIES",
    "DEFAULT_MAX_STEPS",
    "RETRY_FEEDBACK_KEY",
    "Agent",
    "AgentResponse",
    "CallOptions",
    "GenerateResult",
    "MemoryProcessors",
    "OnFinish",
    "PrepareStep",
    "PrepareStepProcessor",
    "Processors",
    "ProcessorsFactory",
    "StreamOutput",
]

from procflow._public import publish_root as _publish_root

_publish_root(__name__, globals())

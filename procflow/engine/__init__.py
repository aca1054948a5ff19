"""Layer 2: the processor phase runner (and, from the workflow issue, the graph compiler and executor)."""

from procflow.engine.context import RunContext, notify_violation, report_tripwire
from procflow.engine.pipeline import BoundHook, ProcessorPipeline, processor_id_of
from procflow.engine.runner import LLMRequestOutcome, PhaseRunner, StepSettings, call_hook
from procflow.engine.stream import StreamRunner

__all__ = [
    "BoundHook",
    "LLMRequestOutcome",
    "PhaseRunner",
    "ProcessorPipeline",
    "RunContext",
    "StepSettings",
    "StreamRunner",
    "call_hook",
    "notify_violation",
    "processor_id_of",
    "report_tripwire",
]

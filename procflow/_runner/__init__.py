"""Layer 2a: the processor phase runner — one request's processors, hook by hook.

``ProcessorPipeline`` binds each processor's hooks once; ``PhaseRunner`` runs the message phases
(input, input step, LLM request/response, output step, output result, API error) with the seed's rules;
``StreamRunner`` runs the stream phase chunk by chunk; ``RunContext`` is the request they share. The
workflow engine (``procflow._engine``) is built on top of it.
"""

from procflow._runner.context import RunContext, notify_violation, report_tripwire
from procflow._runner.pipeline import BoundHook, ProcessorPipeline, processor_id_of
from procflow._runner.runner import LLMRequestOutcome, PhaseRunner, StepSettings, call_hook
from procflow._runner.stream import StreamRunner

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

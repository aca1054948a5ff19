"""Layer 2: the processor phase runner, and the workflow graph compiler and executor."""

from procflow._engine._stages import BranchCase, BranchStage, ForeachStage, ParallelStage, SingleStage, Stage
from procflow._engine.context import RunContext, notify_violation, report_tripwire
from procflow._engine.describe import describe_plan, describe_run
from procflow._engine.executor import execute_plan
from procflow._engine.graph import compile_plan
from procflow._engine.pipeline import BoundHook, ProcessorPipeline, processor_id_of
from procflow._engine.plan import BranchOutputs, PlanNode, WorkflowPlan
from procflow._engine.records import RunStatus, StepRecord, StepStatus, WorkflowEvent, WorkflowResult
from procflow._engine.retry import RetryPolicy
from procflow._engine.run_state import RunState, StepContext
from procflow._engine.runner import LLMRequestOutcome, PhaseRunner, StepSettings, call_hook
from procflow._engine.stream import StreamRunner
from procflow._engine.watch import WorkflowWatch, watch_plan

__all__ = [
    "BoundHook",
    "BranchCase",
    "BranchOutputs",
    "BranchStage",
    "ForeachStage",
    "LLMRequestOutcome",
    "ParallelStage",
    "PhaseRunner",
    "PlanNode",
    "ProcessorPipeline",
    "RetryPolicy",
    "RunContext",
    "RunState",
    "RunStatus",
    "SingleStage",
    "Stage",
    "StepContext",
    "StepRecord",
    "StepSettings",
    "StepStatus",
    "StreamRunner",
    "WorkflowEvent",
    "WorkflowPlan",
    "WorkflowResult",
    "WorkflowWatch",
    "call_hook",
    "compile_plan",
    "describe_plan",
    "describe_run",
    "execute_plan",
    "notify_violation",
    "processor_id_of",
    "report_tripwire",
    "watch_plan",
]

"""Layer 2: the processor phase runner, and the workflow graph compiler and executor."""

from procflow.engine._stages import BranchCase, BranchStage, ForeachStage, ParallelStage, SingleStage, Stage
from procflow.engine.context import RunContext, notify_violation, report_tripwire
from procflow.engine.describe import describe_plan, describe_run
from procflow.engine.executor import execute_plan
from procflow.engine.graph import compile_plan
from procflow.engine.pipeline import BoundHook, ProcessorPipeline, processor_id_of
from procflow.engine.plan import BranchOutputs, PlanNode, WorkflowPlan
from procflow.engine.records import RunStatus, StepRecord, StepStatus, WorkflowEvent, WorkflowResult
from procflow.engine.retry import RetryPolicy
from procflow.engine.run_state import RunState, StepContext
from procflow.engine.runner import LLMRequestOutcome, PhaseRunner, StepSettings, call_hook
from procflow.engine.stream import StreamRunner
from procflow.engine.watch import WorkflowWatch, watch_plan

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

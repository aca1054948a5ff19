"""Layer 2b: the workflow engine — the graph compiler, the series-parallel stages and their executor.

Built on the processor phase runner (``procflow._runner``), which runs one request's processors.
"""

from procflow._engine._stages import BranchCase, BranchStage, ForeachStage, ParallelStage, SingleStage, Stage
from procflow._engine.describe import describe_plan, describe_run
from procflow._engine.executor import execute_plan
from procflow._engine.graph import compile_plan
from procflow._engine.plan import BranchOutputs, PlanNode, WorkflowPlan
from procflow._engine.records import RunStatus, StepRecord, StepStatus, WorkflowEvent, WorkflowResult
from procflow._engine.retry import RetryPolicy
from procflow._engine.run_state import RunState, StepContext
from procflow._engine.watch import WorkflowWatch, watch_plan

__all__ = [
    "BranchCase",
    "BranchOutputs",
    "BranchStage",
    "ForeachStage",
    "ParallelStage",
    "PlanNode",
    "RetryPolicy",
    "RunState",
    "RunStatus",
    "SingleStage",
    "Stage",
    "StepContext",
    "StepRecord",
    "StepStatus",
    "WorkflowEvent",
    "WorkflowPlan",
    "WorkflowResult",
    "WorkflowWatch",
    "compile_plan",
    "describe_plan",
    "describe_run",
    "execute_plan",
    "watch_plan",
]

"""Layer 3: the workflow DSL — processors and functions as steps of a DAG, run by the engine.

``create_workflow(...)`` then ``.then(step)``, ``.parallel([...])``, ``.branch([...])``, ``.map(fn)``,
``.foreach(step, concurrency=n)`` and ``.commit()``; ``create_step(processor)`` makes a processor a step
(id ``processor:<id>``). A committed workflow with ``ProcessorStepSchema`` in and out is itself a
processor. See ``docs/concepts/workflows.md``.
"""

from procflow.engine.plan import BranchOutputs
from procflow.engine.records import RunStatus, StepRecord, StepStatus, WorkflowEvent, WorkflowResult
from procflow.engine.retry import RetryPolicy
from procflow.engine.run_state import StepContext
from procflow.engine.watch import WorkflowWatch
from procflow.workflows.builder import Condition, MapFn, StepLike, WorkflowBuilder, create_workflow
from procflow.workflows.processor_data import ProcessorPhase, ProcessorStepData, ProcessorStepSchema
from procflow.workflows.selection import BranchMerge, Selection, merge_branches, select
from procflow.workflows.steps import ExecuteFn, FunctionStep, ProcessorStep, Step, create_step
from procflow.workflows.workflow import Workflow

__all__ = [
    "BranchMerge",
    "BranchOutputs",
    "Condition",
    "ExecuteFn",
    "FunctionStep",
    "MapFn",
    "ProcessorPhase",
    "ProcessorStep",
    "ProcessorStepData",
    "ProcessorStepSchema",
    "RetryPolicy",
    "RunStatus",
    "Selection",
    "Step",
    "StepContext",
    "StepLike",
    "StepRecord",
    "StepStatus",
    "Workflow",
    "WorkflowBuilder",
    "WorkflowEvent",
    "WorkflowResult",
    "WorkflowWatch",
    "create_step",
    "create_workflow",
    "merge_branches",
    "select",
]

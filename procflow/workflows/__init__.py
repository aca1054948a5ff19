"""Layer 3: the workflow DSL — processors and functions as steps of a DAG, run by the engine.

``create_workflow(...)`` then ``.then(step)``, ``.parallel([...])``, ``.branch([...])``, ``.map(fn)``,
``.foreach(step, concurrency=n)`` and ``.commit()``; ``create_step(processor)`` makes a processor a step
(id ``processor:<id>``). A committed workflow with ``ProcessorStepSchema`` in and out is itself a
processor. See ``docs/concepts/workflows.md``.
"""

from procflow._engine.plan import BranchOutputs
from procflow._engine.records import WorkflowResult
from procflow._engine.retry import RetryPolicy
from procflow._engine.run_state import StepContext
from procflow._public import publish as _publish
from procflow.workflows._builder import create_workflow
from procflow.workflows._processor_data import ProcessorStepSchema
from procflow.workflows._selection import merge_branches, select
from procflow.workflows._steps import FunctionStep, Step, create_step
from procflow.workflows._workflow import Workflow

__all__ = [
    "BranchOutputs",
    "FunctionStep",
    "ProcessorStepSchema",
    "RetryPolicy",
    "Step",
    "StepContext",
    "Workflow",
    "WorkflowResult",
    "create_step",
    "create_workflow",
    "merge_branches",
    "select",
]

_publish(__name__, globals(), __all__)

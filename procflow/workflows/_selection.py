"""What to do after a parallel block: ``select`` one branch's output, or ``merge_branches`` all of them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from typing_extensions import TypeVar as DefaultTypeVar

from procflow._engine.plan import BranchOutputs
from procflow._engine.run_state import StepContext
from procflow.errors import ConfigurationError, WorkflowRunError
from procflow.workflows._merge import merge_outputs
from procflow.workflows._processor_data import ProcessorStepSchema

if TYPE_CHECKING:
    from procflow.workflows._steps import Step

__all__ = ["BranchMerge", "Selection", "merge_branches", "select"]

SelectedT = DefaultTypeVar("SelectedT", covariant=True, default=Any)
"""What a selection returns: the selected step's output."""
_O = TypeVar("_O")


@dataclass(frozen=True, slots=True)
class Selection(Generic[SelectedT]):
    """A ``.map`` function returning one earlier step's output — usually one branch of a parallel block.

    ``select(step)`` given a ``Step[..., Out]`` is a ``Selection[Out]``, so ``.map(select(step))`` types the
    next input as ``Out``; given an id it is a ``Selection[Any]``.

    Attributes:
        step_id: The step whose output is kept.
    """

    step_id: str

    def __call__(self, ctx: StepContext[Any]) -> SelectedT:
        data = ctx.input_data
        if isinstance(data, Mapping) and self.step_id in data:
            selected: SelectedT = data[self.step_id]
        else:
            selected = ctx.get_step_result(self.step_id)
        return selected

    @property
    def label(self) -> str:
        """How pictures show it."""
        return f"select({self.step_id!r})"


@overload
def select(step: Step[Any, _O]) -> Selection[_O]: ...


@overload
def select(step: str | Any) -> Selection[Any]: ...


def select(step: str | Any) -> Selection[Any]:
    """``.map(select("processor:pii-detector"))``: pass on that step's output, dropping the others.

    After a parallel block of processor steps, pick the branch whose edits must carry forward (the one
    that redacts, say); blocking branches still stop the run if they trip, whichever one is selected.

    Args:
        step: The step or its id (``"processor:<processor id>"`` for processor steps).
    """
    step_id = step if isinstance(step, str) else getattr(step, "id", None)
    if not isinstance(step_id, str) or not step_id:
        raise ConfigurationError(
            f"select() takes a step or a step id such as 'processor:pii-detector', got {step!r}"
        )
    return Selection(step_id)


@dataclass(frozen=True, slots=True)
class BranchMerge:
    """A ``.map`` function applying every parallel branch's message edits (see :func:`merge_branches`)."""

    def __call__(self, ctx: StepContext[Any]) -> ProcessorStepSchema:
        data = ctx.input_data
        if not isinstance(data, BranchOutputs) or not isinstance(data.base, ProcessorStepSchema):
            raise WorkflowRunError(
                "merge_branches() must come right after a .parallel([...]) block of processor steps",
                step_id=ctx.step_id,
            )
        return merge_outputs(data.base, data, step_id=ctx.step_id)

    @property
    def label(self) -> str:
        """How pictures show it."""
        return "merge_branches()"


def merge_branches() -> BranchMerge:
    """``.map(merge_branches())``: apply every branch's edits to the messages, part by part.

    Branches that changed different parts (or different messages, metadata keys, settings) merge
    cleanly; identical changes merge too. Two different changes to the same part raise
    :class:`~procflow.errors.BranchConflictError` naming both branches. In the stream phase, where
    chunks cannot be merged position by position, the branches run one after another instead.
    """
    return BranchMerge()

"""What a workflow run leaves behind: one record per step, the run's result, and the events it emits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, Literal

from typing_extensions import TypeVar

from procflow._messages.tripwire import TripwireInfo
from procflow.errors import WorkflowRunError

__all__ = ["EventType", "RunStatus", "StepRecord", "StepStatus", "WorkflowEvent", "WorkflowResult"]

StepStatus = Literal["success", "failed", "tripwire", "skipped", "canceled"]
"""How a step ended: ran, raised, stopped the run on purpose, was not chosen by a branch, or was
cancelled (a sibling tripped, or the run was cancelled)."""

RunStatus = Literal["success", "failed", "tripwire", "canceled"]
"""How a run ended."""

EventType = Literal["workflow-start", "step-start", "step-result", "workflow-finish"]
"""The kinds of :class:`WorkflowEvent`."""

OutT = TypeVar("OutT", covariant=True, default=Any)
"""What a workflow returns: the type of :attr:`WorkflowResult.output` (``Any`` when not inferred)."""


@dataclass(slots=True)
class StepRecord:
    """One step's outcome in one run.

    Attributes:
        step_id: The step's id.
        status: How it ended.
        output: What it returned (``success`` only).
        error: The exception for ``failed``; the :class:`TripWire` for ``tripwire``.
        tripwire: The tripwire's caller-facing record, for ``tripwire``.
        started_at: When it started, on the ``time.perf_counter()`` clock (``0.0`` if it never started).
        ended_at: When it ended, same clock.
        attempts: How many times it was called (retries included).
        nested: A nested workflow's own result.
    """

    step_id: str
    status: StepStatus
    output: Any = None
    error: BaseException | None = None
    tripwire: TripwireInfo | None = None
    started_at: float = 0.0
    ended_at: float = 0.0
    attempts: int = 1
    nested: WorkflowResult[Any] | None = None

    @property
    def duration_ms(self) -> float:
        """Milliseconds between start and end (0 for a step that never started)."""
        return (self.ended_at - self.started_at) * 1000 if self.started_at else 0.0


@dataclass(slots=True)
class WorkflowResult(Generic[OutT]):
    """The outcome of one workflow run; ``WorkflowResult[Order]`` for a workflow returning ``Order``.

    Attributes:
        workflow_id: The workflow's id.
        run_id: This run's id.
        status: ``success``, ``failed``, ``tripwire`` or ``canceled``.
        output: The last step's output (``success`` only, ``None`` otherwise; :meth:`unwrap` returns
            it typed without the ``None``).
        error: The exception that failed the run, or the :class:`TripWire` that stopped it.
        tripwire: ``{reason, retry, metadata, processor_id}`` when a tripwire stopped the run.
        steps: Each step's record by step id, in the order the steps ended.
        started_at: Start on the ``time.perf_counter()`` clock.
        ended_at: End, same clock.
    """

    workflow_id: str
    run_id: str
    status: RunStatus
    output: OutT | None = None
    error: BaseException | None = None
    tripwire: TripwireInfo | None = None
    steps: dict[str, StepRecord] = field(default_factory=dict)
    started_at: float = 0.0
    ended_at: float = 0.0

    @property
    def duration_ms(self) -> float:
        """Milliseconds the run took."""
        return (self.ended_at - self.started_at) * 1000

    def unwrap(self) -> OutT:
        """The output of a successful run; otherwise raise what stopped it.

        Raises:
            TripWire: a step stopped the run on purpose (``status == "tripwire"``).
            Exception: the exception that failed the run (``status == "failed"``).
            WorkflowRunError: the run was cancelled, or failed without an exception.
        """
        if self.status == "success":
            return self.output  # type: ignore[return-value]  # a successful run's output is an OutT
        if self.error is not None:
            raise self.error
        raise WorkflowRunError(
            f"workflow run {self.run_id!r} ended with status {self.status!r} and has no output; "
            "check result.status before reading the output"
        )


@dataclass(frozen=True, slots=True)
class WorkflowEvent:
    """One thing that happened during a run, as :meth:`Workflow.watch` yields it.

    Attributes:
        type: ``workflow-start``, ``step-start``, ``step-result`` or ``workflow-finish``.
        workflow_id: The workflow the event belongs to (a nested workflow's own id for its steps).
        run_id: The run's id.
        step_id: The step, for step events.
        status: The step's or run's status, for ``step-result`` and ``workflow-finish``.
        duration_ms: How long the step or run took, for ``step-result`` and ``workflow-finish``.
        output: What the step or run returned, for successful results.
        error: The exception or tripwire, for unsuccessful results.
    """

    type: EventType
    workflow_id: str
    run_id: str
    step_id: str | None = None
    status: StepStatus | RunStatus | None = None
    duration_ms: float | None = None
    output: Any = None
    error: BaseException | None = None

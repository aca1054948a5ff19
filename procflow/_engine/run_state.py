"""Per-workflow-run state of the executor, and the :class:`StepContext` steps, maps and conditions get."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable
from typing import Any, Generic, NoReturn

from typing_extensions import TypeVar

from procflow._engine.records import StepRecord, WorkflowEvent, WorkflowResult
from procflow._messages.request_context import RequestContext
from procflow._messages.tripwire import TripWire
from procflow.errors import WorkflowRunError

__all__ = ["EventSink", "RunState", "StepContext"]

InputT = TypeVar("InputT", covariant=True, default=Any)

_RUN_PREFIX = uuid.uuid4().hex[:12]
_RUN_NUMBERS = itertools.count(1)

EventSink = Callable[[WorkflowEvent], None]
"""Receives every event of a run (and of its nested runs) as it happens."""


class RunState:
    """What one run of one workflow shares between its steps.

    The processors of a request share a :class:`~procflow._runner.context.RunContext` instead; a
    processor workflow run inside a request has both (a ``RunState`` per phase call or stream).

    Attributes:
        workflow_id: The workflow being run.
        init_data: The run's initial input.
        request_context: The per-request key/value store.
        records: Each finished step's record, by step id.
        emit: Where events go (``None``: nobody is watching, so none are built).
        cancel_on_tripwire: Whether a tripwire in a branch cancels its running siblings.
        children: Results of nested workflow runs, by the nesting step's id.
        result: The run's result once it ended (set before a cancellation propagates).
        lean: Whether nobody can observe step records (a processor workflow of processor steps and
            selections run as a processor, tracing off): nodes then run without records or events.
    """

    __slots__ = (
        "_run_id",
        "cancel_on_tripwire",
        "children",
        "emit",
        "init_data",
        "lean",
        "records",
        "request_context",
        "result",
        "workflow_id",
    )

    def __init__(
        self,
        workflow_id: str,
        *,
        init_data: Any = None,
        request_context: RequestContext | None = None,
        emit: EventSink | None = None,
        cancel_on_tripwire: bool = True,
        run_id: str | None = None,
        records: dict[str, StepRecord] | None = None,
        lean: bool = False,
    ) -> None:
        self.workflow_id = workflow_id
        self.init_data = init_data
        self.request_context = request_context if request_context is not None else RequestContext()
        self.emit = emit
        self.cancel_on_tripwire = cancel_on_tripwire
        self.records: dict[str, StepRecord] = records if records is not None else {}
        self.children: dict[str, WorkflowResult[Any]] = {}
        self.result: WorkflowResult[Any] | None = None
        self._run_id = run_id
        self.lean = lean

    @property
    def run_id(self) -> str:
        """The run's id: unique within the process, random across processes (made on first use)."""
        if self._run_id is None:
            self._run_id = f"{_RUN_PREFIX}-{next(_RUN_NUMBERS)}"
        return self._run_id


class StepContext(Generic[InputT]):
    """What a step's ``execute``, a ``.map`` function and a ``.branch`` condition receive.

    ``StepContext[Order]`` types ``input_data`` as an ``Order``; a step function annotated
    ``def f(ctx: StepContext[Order]) -> int`` takes ``Order`` as its input schema and ``int`` as its
    output schema.

    Attributes:
        input_data: The step's input: the previous step's output (after ``.parallel``, a dict of each
            branch's output by step id).
        step_id: The id of the step being run.
    """

    __slots__ = ("_run", "input_data", "step_id")

    def __init__(self, input_data: InputT, *, step_id: str, run: RunState) -> None:
        self.input_data = input_data
        self.step_id = step_id
        self._run = run

    @property
    def init_data(self) -> Any:
        """The workflow run's initial input."""
        return self._run.init_data

    @property
    def request_context(self) -> RequestContext:
        """The per-request key/value store."""
        return self._run.request_context

    @property
    def workflow_id(self) -> str:
        """The id of the workflow running this step."""
        return self._run.workflow_id

    @property
    def run_id(self) -> str:
        """The id of the current run."""
        return self._run.run_id

    def get_step_result(self, step: str | Any) -> Any:
        """Return the output of an earlier step of this run, given the step or its id.

        Raises:
            WorkflowRunError: that step has not run (yet), was skipped, or did not succeed.
        """
        step_id = step if isinstance(step, str) else str(getattr(step, "id", step))
        record = self._run.records.get(step_id)
        if record is None:
            raise WorkflowRunError(
                f"asked for the result of step {step_id!r}, which has not run in this run of "
                f"{self._run.workflow_id!r}; read only steps that run before this one",
                step_id=self.step_id,
            )
        if record.status != "success":
            raise WorkflowRunError(
                f"asked for the result of step {step_id!r}, which ended with status {record.status!r}",
                step_id=self.step_id,
            )
        return record.output

    def abort(
        self, reason: str | None = None, *, retry: bool = False, metadata: dict[str, Any] | None = None
    ) -> NoReturn:
        """Stop the run on purpose: raise a :class:`TripWire` naming this step."""
        raise TripWire(
            reason or f"Tripwire triggered by step {self.step_id!r}",
            retry=retry,
            metadata=metadata,
            processor_id=self.step_id,
        )

    def __repr__(self) -> str:
        return f"StepContext(step_id={self.step_id!r}, input_data={self.input_data!r})"

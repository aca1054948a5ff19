"""Running one node: validate its input, call it with retries, and record how it ended."""

from __future__ import annotations

from time import perf_counter
from typing import Any

import anyio

from procflow._engine.plan import PlanNode
from procflow._engine.records import StepRecord, StepStatus, WorkflowEvent
from procflow._engine.run_state import RunState
from procflow._logging import is_tracing, log
from procflow._messages.tripwire import TripWire

__all__ = ["call_with_retry", "end_record", "recorded", "run_node", "skip_node"]


class recorded:  # noqa: N801 - used like a function: ``with recorded(node, run) as record:``
    """Emit ``step-start``, then record how the body ended: tripwire, failed, canceled or success.

    The body sets ``record.output``; every exception is re-raised after it is recorded. A class rather
    than ``@contextmanager``: it sits on every node's path and a generator costs ~1.5 µs more per step.
    """

    __slots__ = ("node", "record", "run")

    def __init__(self, node: PlanNode, run: RunState, *, attempts: int = 1) -> None:
        self.node = node
        self.run = run
        self.record = StepRecord(node.id, "success", started_at=0.0, attempts=attempts)

    def __enter__(self) -> StepRecord:
        run = self.run
        if run.emit is not None:
            run.emit(WorkflowEvent("step-start", run.workflow_id, run.run_id, self.node.id))
        self.record.started_at = perf_counter()
        return self.record

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: Any) -> None:
        if error is None:
            end_record(self.record, self.run, "success", None)
        elif isinstance(error, TripWire):
            if error.processor_id is None:
                error.processor_id = self.node.id
            end_record(self.record, self.run, "tripwire", error)
        elif isinstance(error, Exception):
            end_record(self.record, self.run, "failed", error)
        else:
            end_record(self.record, self.run, "canceled", None)


async def run_node(node: PlanNode, value: Any, run: RunState) -> Any:
    """Run one node: validate its input, call it (with retries), record the outcome; re-raise failures.

    In a lean run (see :attr:`RunState.lean`) nothing is recorded: the node is validated and called.
    """
    if run.lean:
        if node.validate is not None:
            value = node.validate(value)
        if node.retry is None:
            return await node.call(value, run, node)
        return await call_with_retry(node, value, run, StepRecord(node.id, "success"))
    with recorded(node, run) as record:
        if node.validate is not None:
            value = node.validate(value)
        if node.retry is None:
            record.output = await node.call(value, run, node)
        else:
            record.output = await call_with_retry(node, value, run, record)
    return record.output


def end_record(record: StepRecord, run: RunState, status: StepStatus, error: BaseException | None) -> None:
    """Finish ``record`` with ``status``: store it on the run, log it when tracing, emit its event."""
    record.status = status
    record.ended_at = perf_counter()
    if error is not None:
        record.error = error
        if isinstance(error, TripWire):
            record.tripwire = error.info()
        elif status == "failed":
            log.warning(
                "workflow_step_failed",
                workflow_id=run.workflow_id,
                step_id=record.step_id,
                error=type(error).__name__,
            )
    if run.children:
        record.nested = run.children.pop(record.step_id, None)
    run.records[record.step_id] = record
    if is_tracing():
        log.debug(
            "step_finished",
            workflow_id=run.workflow_id,
            step_id=record.step_id,
            status=status,
            attempts=record.attempts,
            duration_ms=round(record.duration_ms, 3),
        )
    if run.emit is not None:
        run.emit(
            WorkflowEvent(
                "step-result",
                run.workflow_id,
                run.run_id,
                record.step_id,
                status=status,
                duration_ms=record.duration_ms,
                output=record.output,
                error=error,
            )
        )


def skip_node(node: PlanNode, run: RunState, status: StepStatus) -> None:
    """Record a node that never ran (``skipped`` by a branch, or ``canceled`` before it started)."""
    if run.lean:
        return
    end_record(StepRecord(node.id, status), run, status, None)


async def call_with_retry(node: PlanNode, value: Any, run: RunState, record: StepRecord) -> Any:
    """Call ``node`` until it succeeds or its retry policy gives up; count attempts on ``record``."""
    policy = node.retry
    assert policy is not None
    while True:
        try:
            return await node.call(value, run, node)
        except Exception as exc:
            if not policy.should_retry(exc, record.attempts):
                raise
            delay = policy.delay(record.attempts)
            log.debug(
                "workflow_step_retry",
                workflow_id=run.workflow_id,
                step_id=node.id,
                attempt=record.attempts,
                delay_s=round(delay, 3),
                error=type(exc).__name__,
            )
            if delay > 0:
                await anyio.sleep(delay)
            record.attempts += 1

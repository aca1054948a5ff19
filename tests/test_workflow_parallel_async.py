"""Parallel blocks of async branches: started in the caller's task, a task only once a branch waits."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from procflow import Message, MessageList, TripWire
from procflow._runner.context import RunContext
from procflow._runner.pipeline import ProcessorPipeline
from procflow._runner.runner import PhaseRunner
from procflow.processors import ProcessInputArgs
from procflow.testing import run_input
from procflow.workflows import ProcessorStepSchema, StepContext, create_step, create_workflow, select


class AsyncRecorder:
    """An async input hook that may wait (inside a cancel scope, or in a worker thread) and may trip."""

    def __init__(self, pid: str, log: list[str], *, wait: str | None = None, trip: bool = False) -> None:
        self.id = pid
        self.log = log
        self.wait = wait
        self.trip = trip

    async def process_input(self, args: ProcessInputArgs) -> list[Message]:
        self.log.append(f"start {self.id}")
        if self.wait == "scope":
            with anyio.fail_after(5):
                await anyio.sleep(0.001)
        elif self.wait == "thread":
            await anyio.to_thread.run_sync(lambda: None)
        elif self.wait == "forever":
            await anyio.Event().wait()
        if self.trip:
            args.abort(f"{self.id} tripped")
        self.log.append(f"end {self.id}")
        return [m.with_text(f"{m.text} +{self.id}") for m in args.messages]


def _block(*processors: Any, cancel: bool = True) -> Any:
    return (
        create_workflow(
            id="block",
            input_schema=ProcessorStepSchema,
            output_schema=ProcessorStepSchema,
            cancel_on_tripwire=cancel,
        )
        .parallel(list(processors))
        .map(select(f"processor:{processors[0].id}"))
        .commit()
    )


@pytest.mark.parametrize("wait", ["scope", "thread"])
async def test_branches_that_wait_in_scopes_or_threads_run_concurrently(wait: str) -> None:
    """A waiting branch keeps its cancel scope or worker thread; the others start while it waits."""
    log: list[str] = []
    first = AsyncRecorder("first", log, wait=wait)
    workflow = _block(first, AsyncRecorder("second", log), AsyncRecorder("third", log, wait=wait))
    outcome = await run_input(workflow, ["hi"])
    assert outcome.tripwire is None
    assert outcome.text == "hi +first"
    assert log.index("start second") < log.index("end first")
    assert sorted(log) == sorted(f"{e} {p}" for p in ("first", "second", "third") for e in ("start", "end"))


async def test_a_branch_tripping_at_once_leaves_later_branches_unstarted() -> None:
    """A branch that trips without waiting stops the block before the later branches start."""
    log: list[str] = []
    workflow = _block(
        AsyncRecorder("keep", log), AsyncRecorder("guard", log, trip=True), AsyncRecorder("late", log)
    )
    result = await workflow.run(["hi"])
    assert result.status == "tripwire"
    assert result.tripwire is not None and result.tripwire.processor_id == "guard"
    assert "start late" not in log
    assert result.steps["processor:late"].status == "canceled"
    assert result.steps["processor:keep"].status == "success"


async def test_without_cancellation_every_async_branch_runs() -> None:
    """With cancel_on_tripwire=False the branches after a tripping one still run."""
    log: list[str] = []
    workflow = _block(
        AsyncRecorder("keep", log),
        AsyncRecorder("guard", log, trip=True),
        AsyncRecorder("late", log),
        cancel=False,
    )
    result = await workflow.run(["hi"])
    assert result.status == "tripwire"
    assert "end late" in log


async def test_a_waiting_branch_is_cancelled_by_a_later_branchs_tripwire() -> None:
    """The waiting branch (driven in the caller's task) is cancelled when a later one trips."""
    log: list[str] = []
    workflow = _block(AsyncRecorder("slow", log, wait="forever"), AsyncRecorder("guard", log, trip=True))
    with anyio.fail_after(5):
        result = await workflow.run(["hi"])
    assert result.status == "tripwire"
    assert result.steps["processor:slow"].status == "canceled"
    assert "end slow" not in log


async def test_outer_cancellation_reaches_a_waiting_branch() -> None:
    """Cancelling the caller cancels the branch it is driving, and the run is recorded as canceled."""
    log: list[str] = []

    async def wait_forever(ctx: StepContext[Any]) -> None:
        log.append("waiting")
        await anyio.Event().wait()

    workflow = (
        create_workflow(id="plain")
        .parallel([create_step(id="a", execute=wait_forever), create_step(id="b", execute=wait_forever)])
        .commit()
    )
    with anyio.move_on_after(0.05) as scope:
        await workflow.run(None)
    assert scope.cancelled_caught
    assert log == ["waiting", "waiting"]


async def test_a_tripwire_from_a_waiting_branch_names_it() -> None:
    """A branch that waits and then trips ends the block with its tripwire."""
    log: list[str] = []
    workflow = _block(AsyncRecorder("keep", log), AsyncRecorder("guard", log, wait="scope", trip=True))
    runner = PhaseRunner(ProcessorPipeline.build([workflow]), RunContext(message_list=MessageList(["hi"])))
    with pytest.raises(TripWire) as caught:
        await runner.run_input()
    assert caught.value.processor_id == "guard"

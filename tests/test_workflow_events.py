"""Watching a run: events in order, the result afterwards, cancelling a watched run."""

from __future__ import annotations

from typing import Any

import anyio

from procflow._engine.records import WorkflowEvent
from procflow.workflows import StepContext, create_step, create_workflow


def _step(step_id: str) -> Any:
    return create_step(id=step_id, execute=lambda ctx: step_id)


async def test_events_arrive_in_order() -> None:
    """workflow-start, then start/result per step (parallel steps in between), then workflow-finish."""
    workflow = (
        create_workflow(id="w")
        .then(_step("a"))
        .parallel([_step("b"), _step("c")])
        .map(lambda ctx: "done", id="pick")
        .commit()
    )
    events: list[WorkflowEvent] = []
    async with workflow.watch(None) as run:
        async for event in run:
            events.append(event)
    kinds = [(e.type, e.step_id) for e in events]
    assert kinds[:3] == [("workflow-start", None), ("step-start", "a"), ("step-result", "a")]
    assert set(kinds[3:7]) == {
        ("step-start", "b"),
        ("step-result", "b"),
        ("step-start", "c"),
        ("step-result", "c"),
    }
    assert kinds[7:] == [("step-start", "pick"), ("step-result", "pick"), ("workflow-finish", None)]
    assert events[-1].status == "success"
    assert events[-1].output == "done"
    assert {e.run_id for e in events} == {run.run_id}
    assert run.result.status == "success"


async def test_nested_workflow_events_carry_their_workflow_id() -> None:
    """A nested workflow's events come through with its own workflow id."""
    inner = create_workflow(id="inner").then(_step("x")).commit()
    outer = create_workflow(id="outer").then(inner).commit()
    async with outer.watch(None) as run:
        events = [(e.type, e.workflow_id, e.step_id) async for e in run]
    assert ("step-result", "inner", "x") in events
    assert events[-1] == ("workflow-finish", "outer", None)


async def test_cancel_a_watched_run() -> None:
    """watch.cancel() ends the run with status canceled and the running step canceled."""
    entered = anyio.Event()

    async def wait(ctx: StepContext[Any]) -> None:
        entered.set()
        await anyio.Event().wait()

    workflow = create_workflow(id="w").then(create_step(id="wait", execute=wait)).commit()
    statuses: list[Any] = []
    async with workflow.watch(None) as run:
        async for event in run:
            if event.type == "step-start":
                await entered.wait()
                run.cancel()
            statuses.append((event.type, event.status))
    assert statuses[-2:] == [("step-result", "canceled"), ("workflow-finish", "canceled")]
    assert run.result.status == "canceled"
    assert run.result.steps["wait"].status == "canceled"


async def test_failed_step_event_carries_the_error() -> None:
    """A failing step's step-result event has status failed and the exception."""

    def boom(ctx: StepContext[Any]) -> None:
        raise RuntimeError("boom")

    workflow = create_workflow(id="w").then(create_step(id="boom", execute=boom)).commit()
    async with workflow.watch(None) as run:
        results = [e async for e in run if e.type == "step-result"]
    assert results[0].status == "failed"
    assert isinstance(results[0].error, RuntimeError)
    assert run.result.status == "failed"

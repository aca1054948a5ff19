"""foreach: per-item validation, tripwires and failures in items, events, sequential and concurrent."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from procflow.workflows import StepContext, create_step, create_workflow


def _each(execute: Any) -> Any:
    return create_step(id="each", execute=execute, input_schema=int, output_schema=int)


@pytest.mark.parametrize("concurrency", [1, 3])
async def test_a_tripwire_in_one_item_ends_the_run(concurrency: int) -> None:
    """An item that aborts makes the foreach step and the run end tripwire, naming the step."""

    def check(ctx: StepContext[int]) -> int:
        if ctx.input_data == 3:
            ctx.abort("three is not allowed")
        return ctx.input_data

    workflow = create_workflow(id="w", input_schema=list[int]).foreach(_each(check), concurrency=concurrency)
    result = await workflow.commit().run([1, 2, 3, 4])
    assert result.status == "tripwire"
    assert result.tripwire is not None and result.tripwire.processor_id == "each"
    assert result.steps["each"].status == "tripwire"


async def test_a_failing_item_cancels_the_items_still_running() -> None:
    """With concurrency, a failing item fails the step and cancels the other running items."""
    finished: list[int] = []

    async def work(ctx: StepContext[int]) -> int:
        if ctx.input_data == 0:
            raise ValueError("bad item")
        await anyio.Event().wait()
        finished.append(ctx.input_data)
        return ctx.input_data

    result = (
        await create_workflow(id="w", input_schema=list[int])
        .foreach(_each(work), concurrency=3)
        .commit()
        .run([1, 0, 2])
    )
    assert result.status == "failed"
    assert isinstance(result.error, ValueError)
    assert finished == []


async def test_items_keep_running_after_a_tripwire_when_cancellation_is_off() -> None:
    """With cancel_on_tripwire=False every item still runs; the run ends tripwire."""
    seen: list[int] = []

    async def work(ctx: StepContext[int]) -> int:
        await anyio.lowlevel.checkpoint()
        seen.append(ctx.input_data)
        if ctx.input_data == 1:
            ctx.abort("one")
        return ctx.input_data

    workflow = create_workflow(id="w", input_schema=list[int], cancel_on_tripwire=False)
    result = await workflow.foreach(_each(work), concurrency=2).commit().run([1, 2, 3, 4])
    assert result.status == "tripwire"
    assert sorted(seen) == [1, 2, 3, 4]


async def test_items_are_validated_one_by_one() -> None:
    """Each item is validated against the step's input schema."""
    step = _each(lambda ctx: ctx.input_data + 1)
    result = await create_workflow(id="w").map(lambda ctx: [1, "x"]).foreach(step).commit().run(None)
    assert result.status == "failed"
    assert "input does not match the step's input schema int" in str(result.error)


async def test_foreach_needs_a_list_at_run_time() -> None:
    """A non-list reaching foreach (through an untyped map) fails with a clear error."""
    step = _each(lambda ctx: ctx.input_data)
    result = await create_workflow(id="w").map(lambda ctx: "text").foreach(step).commit().run(None)
    assert result.status == "failed"
    assert ".foreach needs a list, got a str" in str(result.error)


async def test_foreach_emits_one_start_and_one_result() -> None:
    """A foreach step is one step in the event stream, its output the list of outputs."""
    workflow = (
        create_workflow(id="w", input_schema=list[int])
        .foreach(_each(lambda ctx: ctx.input_data * 2))
        .commit()
    )
    async with workflow.watch([1, 2]) as run:
        events = [(e.type, e.step_id, e.output) async for e in run]
    assert events[1:3] == [("step-start", "each", None), ("step-result", "each", [2, 4])]

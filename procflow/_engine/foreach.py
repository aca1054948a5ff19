"""``.foreach``: one node run once per item of a list, ``concurrency`` at a time, outputs in order."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio

from procflow._engine.nodes import call_with_retry, recorded
from procflow._engine.plan import PlanNode
from procflow._engine.records import StepRecord
from procflow._engine.run_state import RunState
from procflow._messages.tripwire import TripWire
from procflow.errors import WorkflowRunError

__all__ = ["run_foreach"]


async def run_foreach(node: PlanNode, concurrency: int, value: Any, run: RunState) -> list[Any]:
    """Run ``node`` on every item of ``value``; the outputs, in input order, are its output."""
    with recorded(node, run, attempts=0) as record:
        if isinstance(value, str | bytes | Mapping) or not hasattr(value, "__iter__"):
            raise WorkflowRunError(
                f".foreach needs a list, got a {type(value).__name__}; make the step before it return a list",
                step_id=node.id,
            )
        items = list(value)
        outputs: list[Any] = [None] * len(items)
        if concurrency <= 1 or len(items) <= 1:
            for index, item in enumerate(items):
                outputs[index] = await _call_item(node, item, run, record)
        else:
            await _foreach_concurrently(node, concurrency, items, outputs, run, record)
        record.output = outputs
    return outputs


async def _call_item(node: PlanNode, item: Any, run: RunState, record: StepRecord) -> Any:
    if node.validate is not None:
        item = node.validate(item)
    if node.retry is None:
        record.attempts += 1
        return await node.call(item, run, node)
    item_record = StepRecord(node.id, "success")
    try:
        return await call_with_retry(node, item, run, item_record)
    finally:
        record.attempts += item_record.attempts


async def _foreach_concurrently(
    node: PlanNode, concurrency: int, items: list[Any], outputs: list[Any], run: RunState, record: StepRecord
) -> None:
    pending = iter(enumerate(items))
    errors: list[BaseException] = []

    async def worker(scope: anyio.CancelScope) -> None:
        for index, item in pending:
            try:
                outputs[index] = await _call_item(node, item, run, record)
            except TripWire as tripwire:
                errors.append(tripwire)
                if run.cancel_on_tripwire:
                    scope.cancel()
                    return
            except Exception as exc:
                errors.append(exc)
                scope.cancel()
                return

    async with anyio.create_task_group() as tg:
        for _ in range(min(concurrency, len(items))):
            tg.start_soon(worker, tg.cancel_scope)
    if errors:
        raise errors[0]

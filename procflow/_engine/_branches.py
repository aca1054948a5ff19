"""How a parallel block's branches run: one after another when none can wait, else eagerly in a group.

Both keep a task group's results, statuses and cancellation: a tripwire stops the branches not yet
started (unless the plan lets them finish), a failure always does.
"""

from __future__ import annotations

import types
from collections.abc import Coroutine, Generator
from typing import Any

import anyio

from procflow._engine.nodes import run_node
from procflow._engine.plan import PlanNode
from procflow._engine.run_state import RunState
from procflow._messages.tripwire import TripWire

__all__ = ["run_eagerly", "run_inline"]


async def _branch(
    node: PlanNode,
    value: Any,
    run: RunState,
    outputs: dict[str, Any],
    errors: list[BaseException],
    scope: anyio.CancelScope,
) -> None:
    try:
        outputs[node.id] = await run_node(node, value, run)
    except TripWire as tripwire:
        errors.append(tripwire)
        if run.cancel_on_tripwire:
            scope.cancel()
    except Exception as exc:
        errors.append(exc)
        scope.cancel()


async def run_eagerly(
    nodes: tuple[PlanNode, ...],
    inputs: list[Any],
    run: RunState,
    outputs: dict[str, Any],
    errors: list[BaseException],
) -> None:
    """Branches in one task group, each started in this task and given a task only when needed.

    Branch after branch runs in this task until one suspends (most guards' ``async`` hooks never do):
    the branches after it are then started as tasks, and this task goes on driving the suspended one
    inside the group's scope. Results, statuses, isolation and cancellation are a task group's; the
    tasks of branches that finish at once are never spawned.
    """
    async with anyio.create_task_group() as tg:
        scope = tg.cancel_scope
        for index, node in enumerate(nodes):
            if errors and (run.cancel_on_tripwire or not isinstance(errors[0], TripWire)):
                return
            coro = _branch(node, inputs[index], run, outputs, errors, scope)
            try:
                suspended = coro.send(None)
            except StopIteration:
                continue
            for later, later_input in zip(nodes[index + 1 :], inputs[index + 1 :], strict=True):
                tg.start_soon(_branch, later, later_input, run, outputs, errors, scope)
            await _resume(coro, suspended)
            return


@types.coroutine
def _resume(coro: Coroutine[Any, Any, None], yielded: Any) -> Generator[Any, Any, None]:
    """Go on driving ``coro`` — suspended, having yielded ``yielded`` — in the current task, to its end."""
    while True:
        try:
            sent = yield yielded
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # thrown in by the task (cancellation): pass it on
            try:
                yielded = coro.throw(exc)
            except StopIteration:
                return
            continue
        try:
            yielded = coro.send(sent)
        except StopIteration:
            return


async def run_inline(
    nodes: tuple[PlanNode, ...],
    inputs: list[Any],
    run: RunState,
    outputs: dict[str, Any],
    errors: list[BaseException],
) -> None:
    """Branches that cannot suspend, in order: what a task group would do with them, minus its cost."""
    for node, branch_input in zip(nodes, inputs, strict=True):
        if errors and (run.cancel_on_tripwire or not isinstance(errors[0], TripWire)):
            return
        try:
            outputs[node.id] = await run_node(node, branch_input, run)
        except TripWire as tripwire:
            errors.append(tripwire)
        except Exception as exc:
            errors.append(exc)

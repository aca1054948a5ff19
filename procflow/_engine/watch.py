"""Watching a run: an async iterator of its events while it runs, then its result."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from procflow._engine.executor import execute_plan
from procflow._engine.plan import WorkflowPlan
from procflow._engine.records import StepRecord, WorkflowEvent, WorkflowResult
from procflow._engine.run_state import RunState
from procflow._messages.request_context import RequestContext

__all__ = ["WorkflowWatch", "watch_plan"]


class WorkflowWatch:
    """The events of a running workflow, in the order they happen; ``result`` once it has finished.

    Iterate with ``async for event in watch``; iteration ends after the ``workflow-finish`` event.
    ``cancel()`` stops the run, which then ends with status ``canceled``.
    """

    __slots__ = ("_receive", "_result", "_run", "_scope")

    def __init__(self, receive: MemoryObjectReceiveStream[WorkflowEvent], run: RunState) -> None:
        self._receive = receive
        self._run = run
        self._scope = anyio.CancelScope()
        self._result: WorkflowResult | None = None

    def __aiter__(self) -> WorkflowWatch:
        return self

    async def __anext__(self) -> WorkflowEvent:
        try:
            return await self._receive.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    @property
    def run_id(self) -> str:
        """The id of the watched run."""
        return self._run.run_id

    @property
    def done(self) -> bool:
        """Whether the run has finished."""
        return self._result is not None

    @property
    def result(self) -> WorkflowResult:
        """The run's result.

        Raises:
            RuntimeError: the run has not finished yet (read it after the ``async for`` loop).
        """
        if self._result is None:
            raise RuntimeError("the run is still going; read .result after iterating over every event")
        return self._result

    def cancel(self) -> None:
        """Cancel the run; it ends with status ``canceled`` and a last ``workflow-finish`` event."""
        self._scope.cancel()


@asynccontextmanager
async def watch_plan(
    plan: WorkflowPlan,
    input_data: Any,
    *,
    request_context: RequestContext | None = None,
    run_id: str | None = None,
    start_at: int = 0,
    results: Mapping[str, Any] | None = None,
) -> AsyncIterator[WorkflowWatch]:
    """Start ``plan`` in the background and yield a :class:`WorkflowWatch` over its events.

    Leaving the block waits for the run to finish (events are buffered, so the run never waits for
    the reader); an error in the block cancels the run.
    """
    send, receive = anyio.create_memory_object_stream[WorkflowEvent](math.inf)
    run = RunState(
        plan.id,
        init_data=input_data,
        request_context=request_context,
        emit=send.send_nowait,
        cancel_on_tripwire=plan.cancel_on_tripwire,
        run_id=run_id,
    )
    for step_id, output in (results or {}).items():
        run.records[step_id] = StepRecord(step_id, "success", output=output)
    watch = WorkflowWatch(receive, run)

    async def execute() -> None:
        with send:
            with watch._scope:
                watch._result = await execute_plan(plan, input_data, start_at=start_at, run=run)
            if watch._result is None:
                watch._result = run.result

    with receive:
        async with anyio.create_task_group() as tg:
            tg.start_soon(execute)
            yield watch

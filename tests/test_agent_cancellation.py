"""Cancellation and early close: the call ends as ``aborted``, no tripwire, and cancellation propagates."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from _agent_support import MODES, call

from procflow import Agent, Chunk, GenerateResult, tool
from procflow.models import ModelRequest, ModelResponse
from procflow.processors import ProcessOutputResultArgs, ProcessOutputStreamArgs
from procflow.testing import ScriptedModel, ScriptedStep


class CancelOnText:
    """Cancels the caller's scope when the first text chunk passes."""

    id = "cancel-on-text"

    def __init__(self, scope: anyio.CancelScope) -> None:
        self.scope = scope
        self.results = 0

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        if args.part.type == "text-delta":
            self.scope.cancel()
        return args.part

    def process_output_result(self, args: ProcessOutputResultArgs) -> None:
        self.results += 1


@pytest.mark.parametrize("mode", MODES)
async def test_cancelling_the_caller_scope_aborts_the_call(mode: str) -> None:
    """Cancelling mid-stream ends the call as ``aborted``: no tripwire, no result hooks; it propagates."""
    finished: list[GenerateResult] = []
    model = ScriptedModel([ScriptedStep(text="abcdef", chunk_size=2, stall_after=1)])
    after_call = False
    with anyio.CancelScope() as scope:
        canceller = CancelOnText(scope)
        agent = Agent(id="a", model=model, output_processors=[canceller])
        await call(agent, mode, "Hi", on_finish=finished.append)
        after_call = True
    assert scope.cancelled_caught
    assert not after_call
    (result,) = finished
    assert (result.finish_reason, result.tripwire, result.text) == ("aborted", None, "")
    assert canceller.results == 0


async def test_stream_output_reports_aborted_after_cancellation() -> None:
    """The stream's output object says ``aborted`` once the cancelled iteration has unwound."""
    model = ScriptedModel([ScriptedStep(text="abcdef", chunk_size=2, stall_after=1)])
    output = Agent(id="a", model=model).stream("Hi")
    seen: list[str] = []
    with anyio.CancelScope() as scope:
        async for chunk in output.full_stream:
            seen.append(chunk.type)
            if chunk.type == "text-delta":
                scope.cancel()
    assert seen == ["step-start", "text-delta"]
    assert (output.finish_reason, output.tripwire) == ("aborted", None)


@pytest.mark.parametrize("mode", MODES)
async def test_cancellation_during_a_tool_aborts(mode: str) -> None:
    """A cancellation while tools run also ends the call as ``aborted``."""
    finished: list[GenerateResult] = []
    with anyio.CancelScope() as scope:

        @tool
        async def slow(n: int) -> int:
            """Takes forever."""
            scope.cancel()
            await anyio.sleep_forever()
            return n

        model = ScriptedModel([ScriptedStep(tool_calls=[("slow", {"n": 1}), ("slow", {"n": 2})]), "never"])
        await call(Agent(id="a", model=model, tools=[slow]), mode, "Go", on_finish=finished.append)
    assert scope.cancelled_caught
    assert [r.finish_reason for r in finished] == ["aborted"]
    assert model.calls == 1


class ClosingModel:
    """A model whose stream records whether it was closed."""

    provider = "test"
    model_id = "closing"

    def __init__(self) -> None:
        self.closed = False

    async def generate(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(text="x")

    async def _chunks(self) -> AsyncIterator[Chunk]:
        try:
            for text in ("a", "b", "c", "d"):
                yield Chunk.text_delta(text)
            yield Chunk("finish", {"finish_reason": "stop"})
        finally:
            self.closed = True

    def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        return self._chunks()


async def test_leaving_early_closes_the_call_and_the_model_stream() -> None:
    """Breaking out inside ``async with agent.stream(...)`` aborts the call and closes the model's stream."""
    model = ClosingModel()
    finished: list[Any] = []
    async with Agent(id="a", model=model).stream("Hi", on_finish=finished.append) as output:
        async for chunk in output.full_stream:
            if chunk.type == "text-delta":
                break
    assert model.closed
    assert output.finish_reason == "aborted"
    assert [r.finish_reason for r in finished] == ["aborted"]


@pytest.mark.parametrize("mode", MODES)
async def test_on_finish_runs_once_on_completion_and_may_be_async(mode: str) -> None:
    """``on_finish`` receives the final result once; async callbacks are awaited."""
    finished: list[GenerateResult] = []

    async def record(result: GenerateResult) -> None:
        await anyio.lowlevel.checkpoint()
        finished.append(result)

    outcome = await call(Agent(id="a", model=ScriptedModel(["done"])), mode, "Hi", on_finish=record)
    assert [r.text for r in finished] == ["done"]
    assert finished[0] is outcome.result

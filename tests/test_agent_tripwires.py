"""Tripwires in the agent loop: a status (chunk and ``result.tripwire``), never an exception."""

from __future__ import annotations

from typing import Any

import pytest
from _agent_support import MODES, call

from procflow import Agent, Chunk, Message, ProcessorViolation, RequestContext, tool
from procflow.errors import APICallError
from procflow.processors import (
    ProcessAPIErrorArgs,
    ProcessInputArgs,
    ProcessOutputResultArgs,
    ProcessOutputStreamArgs,
)
from procflow.testing import ScriptedModel, ScriptedStep


class Block:
    """Aborts in one hook (optionally from a given step on)."""

    def __init__(self, hook: str, *, from_step: int = 0, processor_id: str = "guard") -> None:
        self.id = processor_id
        self.from_step = from_step
        self.violations: list[ProcessorViolation] = []
        setattr(self, hook, self._abort)

    def _abort(self, args: Any) -> None:
        if getattr(args, "step_number", 0) >= self.from_step:
            args.abort("Blocked by policy", metadata={"category": "pii"})

    def on_violation(self, violation: ProcessorViolation) -> None:
        self.violations.append(violation)


EXPECTED_PAYLOAD = {
    "reason": "Blocked by policy",
    "retry": False,
    "metadata": {"category": "pii"},
    "processor_id": "guard",
}


@tool
def lookup(term: str) -> str:
    """Look a term up."""
    return "found"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("hook", ["process_input", "process_input_step", "process_llm_request"])
async def test_input_side_tripwire_stops_before_the_model(mode: str, hook: str) -> None:
    """A tripwire before the call: ``other``, ``result.tripwire`` set, no model call, ``tripwire`` last."""
    model = ScriptedModel(["never"])
    guard = Block(hook)
    outcome = await call(Agent(id="a", model=model, input_processors=[guard]), mode, "my SSN is 078-05-1120")
    result = outcome.result
    assert model.calls == 0
    assert (result.finish_reason, result.text) == ("other", "")
    assert result.tripwire is not None and result.tripwire.to_dict() == EXPECTED_PAYLOAD
    assert [v.processor_id for v in guard.violations] == ["guard"]
    if mode == "stream":
        assert outcome.chunks[-1] == Chunk("tripwire", EXPECTED_PAYLOAD)
        assert "finish" not in outcome.types


@pytest.mark.parametrize("mode", MODES)
async def test_input_step_tripwire_on_a_later_step_keeps_earlier_steps(mode: str) -> None:
    """A tripwire before step 2 ends the call after step 1; no further model call."""
    model = ScriptedModel([ScriptedStep(text="Looking.", tool_calls=[("lookup", {"term": "x"})]), "never"])
    agent = Agent(
        id="a", model=model, tools=[lookup], input_processors=[Block("process_input_step", from_step=1)]
    )
    result = (await call(agent, mode, "Go")).result
    assert model.calls == 1
    assert (result.finish_reason, result.text, len(result.steps)) == ("other", "Looking.", 1)


class StopOnWord:
    """Blocks the stream when a text chunk contains a word."""

    id = "stop-on-word"

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        if args.part.type == "text-delta" and "forbidden" in (args.part.text or ""):
            args.abort("forbidden word")
        return args.part


@pytest.mark.parametrize("mode", MODES)
async def test_stream_block_mid_response(mode: str) -> None:
    """Chunks before the block are delivered, ``tripwire`` comes last, and the partial answer is not kept."""
    chunks = [Chunk.text_delta(t) for t in ("Hello ", "there ", "forbidden ", "rest")]
    model = ScriptedModel([ScriptedStep(chunks=chunks)])
    outcome = await call(Agent(id="a", model=model, output_processors=[StopOnWord()]), mode, "Hi")
    result = outcome.result
    assert (result.finish_reason, result.text, result.steps) == ("other", "", [])
    assert result.tripwire is not None and result.tripwire.processor_id == "stop-on-word"
    if mode == "stream":
        assert [c.text for c in outcome.chunks if c.type == "text-delta"] == ["Hello ", "there "]
        assert outcome.types[-1] == "tripwire"


@pytest.mark.parametrize("mode", MODES)
async def test_llm_response_tripwire_drops_the_step(mode: str) -> None:
    """A tripwire in ``process_llm_response`` ends the call as ``other`` without the step."""
    agent = Agent(id="a", model=ScriptedModel(["answer"]), input_processors=[Block("process_llm_response")])
    result = (await call(agent, mode, "Hi")).result
    assert (result.finish_reason, result.text, result.steps) == ("other", "", [])


@pytest.mark.parametrize("mode", MODES)
async def test_output_step_abort_without_retry(mode: str) -> None:
    """An output-step abort without retry ends as ``tripwire`` after one model call."""
    model = ScriptedModel(["bad answer", "never"])
    outcome = await call(
        Agent(id="a", model=model, output_processors=[Block("process_output_step")]), mode, "Hi"
    )
    result = outcome.result
    assert model.calls == 1
    assert result.finish_reason == "tripwire"
    assert result.tripwire is not None and result.tripwire.to_dict() == EXPECTED_PAYLOAD
    assert result.text == ""
    if mode == "stream":
        assert outcome.types[-1] == "tripwire"


@tool
def delete_everything() -> str:
    """Deletes everything."""
    raise AssertionError("must never run")


@pytest.mark.parametrize("mode", MODES)
async def test_rejected_step_does_not_run_its_tools(mode: str) -> None:
    """When ``process_output_step`` blocks a step, its tool calls are never executed."""
    model = ScriptedModel([ScriptedStep(tool_calls=[("delete_everything", {})])])
    agent = Agent(
        id="a", model=model, tools=[delete_everything], output_processors=[Block("process_output_step")]
    )
    result = (await call(agent, mode, "Clean up")).result
    assert (result.finish_reason, result.tool_results) == ("tripwire", [])


class Memory:
    def __init__(self) -> None:
        self.saved: list[str] = []
        outer = self

        class Save:
            id = "memory-save"

            def process_output_result(self, args: ProcessOutputResultArgs) -> None:
                outer.saved.extend(m.text for m in args.messages)

        self.save = Save()

    def input_processors(self, request_context: RequestContext) -> list[Any]:
        return []

    def output_processors(self, request_context: RequestContext) -> list[Any]:
        return [self.save]


@pytest.mark.parametrize("mode", MODES)
async def test_output_result_tripwire_keeps_text_and_skips_memory(mode: str) -> None:
    """A ``process_output_result`` tripwire keeps the text, reports the tripwire; memory saves nothing."""
    memory = Memory()
    agent = Agent(
        id="a",
        model=ScriptedModel(["final words"]),
        output_processors=[Block("process_output_result")],
        memory=memory,
    )
    outcome = await call(agent, mode, "Hi")
    result = outcome.result
    assert (result.finish_reason, result.text) == ("other", "final words")
    assert result.tripwire is not None and result.tripwire.processor_id == "guard"
    assert [m.text for m in result.response.messages] == ["final words"]
    assert memory.saved == []
    if mode == "stream":
        assert outcome.types[-2:] == ["step-finish", "tripwire"]


@pytest.mark.parametrize("mode", MODES)
async def test_without_tripwire_memory_saves(mode: str) -> None:
    """Memory's output processor runs after yours when nothing trips."""
    memory = Memory()
    await call(Agent(id="a", model=ScriptedModel(["kept"]), memory=memory), mode, "Hi")
    assert memory.saved == ["kept"]


class AbortAfterRewrite:
    """Rewrites the input, then aborts: the tripwire still wins."""

    id = "rewrite-then-abort"

    def process_input(self, args: ProcessInputArgs) -> list[Message]:
        args.abort("no", retry=True)


class AbortInApiError:
    id = "api-guard"

    def process_api_error(self, args: ProcessAPIErrorArgs) -> None:
        args.abort("provider refused; stopping")


@pytest.mark.parametrize("mode", MODES)
async def test_retry_flag_outside_retryable_hooks_just_stops(mode: str) -> None:
    """``retry=True`` from ``process_input`` cannot retry; it stops as ``other`` and keeps the flag."""
    agent = Agent(
        id="a", model=ScriptedModel(), input_processors=[AbortAfterRewrite()], max_processor_retries=3
    )
    result = (await call(agent, mode, "Hi")).result
    assert result.finish_reason == "other"
    assert result.tripwire is not None and result.tripwire.retry


@pytest.mark.parametrize("mode", MODES)
async def test_tripwire_in_an_error_processor_is_a_status(mode: str) -> None:
    """A tripwire raised while handling a provider error ends the call as ``other``, not as the error."""
    model = ScriptedModel([APICallError("bad request", status_code=400)])
    agent = Agent(id="a", model=model, error_processors=[AbortInApiError()])
    result = (await call(agent, mode, "Hi")).result
    assert result.finish_reason == "other"
    assert result.tripwire is not None and result.tripwire.processor_id == "api-guard"

"""Processor retries: ``abort(reason, retry=True)`` asks the model again with the reason as feedback."""

from __future__ import annotations

from typing import Any

import pytest
from _agent_support import MODES, call, texts

from procflow import Agent, Chunk, tool
from procflow.models import PromptToolCall
from procflow.processors import ProcessInputStepArgs, ProcessOutputStepArgs, ProcessOutputStreamArgs
from procflow.testing import ScriptedModel, ScriptedStep

REASON = "Response quality score too low. Please provide a more detailed answer."


class QualityChecker:
    """The seed's quality checker: short answers are sent back, at most three times."""

    id = "quality-checker"

    def __init__(self) -> None:
        self.retry_counts: list[int] = []

    def process_output_step(self, args: ProcessOutputStepArgs) -> list[Any]:
        self.retry_counts.append(args.retry_count)
        score = min(1.0, len(args.text) / 40)
        if score < 0.7 and args.retry_count < 3:
            args.abort(REASON, retry=True, metadata={"score": score})
        return []


LONG = "Here is a detailed answer with enough substance to pass."


@pytest.mark.parametrize("mode", MODES)
async def test_quality_checker_retries_with_the_reason_as_feedback(mode: str) -> None:
    """The second call ends with the reason as a reminder and no longer contains the rejected text."""
    model = ScriptedModel(["Too short.", LONG])
    checker = QualityChecker()
    agent = Agent(id="a", model=model, output_processors=[checker], max_processor_retries=3)
    outcome = await call(agent, mode, "Explain tides")
    result = outcome.result
    assert (result.text, result.finish_reason, result.tripwire) == (LONG, "stop", None)
    assert checker.retry_counts == [0, 1]
    second = texts(model.prompts[1])
    assert second[-1] == f'<system-reminder processor="quality-checker">{REASON}</system-reminder>'
    assert not any("Too short." in text for text in second)
    assert len(result.steps) == 1
    assert result.usage.output_tokens == 2 + len(LONG.split())


async def test_stream_marks_the_rejected_step() -> None:
    """In a stream, the rejected attempt ends with a ``step-finish`` naming why it was discarded."""
    agent = Agent(id="a", model=ScriptedModel(["Too short.", LONG]), output_processors=[QualityChecker()])
    outcome = await call(agent, "stream", "Explain tides", max_processor_retries=1)
    finishes = [c.payload for c in outcome.chunks if c.type == "step-finish"]
    assert [f.get("discarded", {}).get("reason") for f in finishes] == [REASON, None]
    assert finishes[0]["discarded"]["metadata"] == {"score": 0.25}
    assert outcome.types[-1] == "finish"


class Spy:
    """Records the retry count every hook of a step sees, by hook."""

    id = "spy"

    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []

    def _see(self, hook: str, args: Any) -> None:
        self.seen.append((hook, args.retry_count))

    def process_input_step(self, args: Any) -> None:
        self._see("input_step", args)

    def process_llm_request(self, args: Any) -> None:
        self._see("llm_request", args)

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        if args.part.type == "text-delta":
            self._see("stream", args)
        return args.part

    def process_llm_response(self, args: Any) -> None:
        self._see("llm_response", args)

    def process_output_step(self, args: Any) -> None:
        self._see("output_step", args)

    def process_output_result(self, args: Any) -> None:
        self._see("output_result", args)


@pytest.mark.parametrize("mode", MODES)
async def test_retry_count_reaches_every_hook_and_resets(mode: str) -> None:
    """Every hook of the retried step sees 1; once a step passes, the count is back to 0."""
    spy = Spy()
    model = ScriptedModel([ScriptedStep(text="x", chunk_size=10), ScriptedStep(text="y" * 30, chunk_size=30)])
    agent = Agent(
        id="a",
        model=model,
        input_processors=[spy],
        output_processors=[spy, QualityChecker()],
        max_processor_retries=1,
    )
    await call(agent, mode, "Hi")
    hooks = ["input_step", "llm_request", "stream", "llm_response", "output_step"]
    assert spy.seen == [(h, 0) for h in hooks] + [(h, 1) for h in hooks] + [("output_result", 0)]


class AlwaysReject:
    id = "always-reject"

    def process_output_step(self, args: ProcessOutputStepArgs) -> None:
        args.abort(f"attempt {args.retry_count} rejected", retry=True)


@pytest.mark.parametrize("mode", MODES)
async def test_exhausted_retries_end_as_tripwire(mode: str) -> None:
    """After ``max_processor_retries`` retries the call ends as ``tripwire`` with ``retry`` set."""
    model = ScriptedModel(["a", "b", "c", "d"])
    agent = Agent(id="a", model=model, output_processors=[AlwaysReject()], max_processor_retries=2)
    outcome = await call(agent, mode, "Hi")
    result = outcome.result
    assert model.calls == 3
    assert (result.finish_reason, result.text) == ("tripwire", "")
    assert result.tripwire is not None
    assert (result.tripwire.retry, result.tripwire.reason) == (True, "attempt 2 rejected")
    if mode == "stream":
        assert outcome.types[-1] == "tripwire"


@pytest.mark.parametrize("mode", MODES)
async def test_retries_are_off_without_a_cap(mode: str) -> None:
    """Without ``max_processor_retries`` a retry request ends the call at once as ``tripwire``."""
    model = ScriptedModel(["a", "b"])
    result = (await call(Agent(id="a", model=model, output_processors=[AlwaysReject()]), mode, "Hi")).result
    assert model.calls == 1
    assert result.finish_reason == "tripwire"
    assert result.tripwire is not None and result.tripwire.retry


@pytest.mark.parametrize("mode", MODES)
async def test_per_call_cap_overrides_the_agents(mode: str) -> None:
    """A call's ``max_processor_retries`` replaces the agent's for that call."""
    model = ScriptedModel(["a", "b", "c"])
    agent = Agent(id="a", model=model, output_processors=[AlwaysReject()], max_processor_retries=0)
    result = (await call(agent, mode, "Hi", max_processor_retries=2)).result
    assert (model.calls, result.finish_reason) == (3, "tripwire")


class RejectTwice:
    id = "reject-twice"

    def process_output_step(self, args: ProcessOutputStepArgs) -> None:
        if args.step_number == 0 and args.retry_count < 2:
            args.abort(f"fix #{args.retry_count}", retry=True)


@tool
def lookup(term: str) -> str:
    """Look a term up."""
    return "found"


@pytest.mark.parametrize("mode", MODES)
async def test_feedback_is_transient(mode: str) -> None:
    """Feedback replaces itself, is gone once a step passes, and never enters the stored conversation."""
    steps = ["a", "b", ScriptedStep(tool_calls=[("lookup", {"term": "t"})]), "done"]
    model = ScriptedModel(steps)
    agent = Agent(
        id="a", model=model, tools=[lookup], output_processors=[RejectTwice()], max_processor_retries=5
    )
    result = (await call(agent, mode, "Hi")).result
    reminders = [[t for t in texts(p) if t.startswith("<system-reminder")] for p in model.prompts]
    assert reminders == [
        [],
        ['<system-reminder processor="reject-twice">fix #0</system-reminder>'],
        ['<system-reminder processor="reject-twice">fix #1</system-reminder>'],
        [],
    ]
    stored = result.response.message_list
    assert [m.role for m in stored.all] == ["user", "assistant", "assistant"]
    assert stored.transient_signals == []


@tool
def delete_everything() -> str:
    """Deletes everything."""
    raise AssertionError("must never run")


class RejectToolCalls:
    id = "no-destructive-tools"

    def process_output_step(self, args: ProcessOutputStepArgs) -> None:
        if any(c.tool_name == "delete_everything" for c in args.tool_calls):
            args.abort("Do not delete anything; answer in words.", retry=True)


@pytest.mark.parametrize("mode", MODES)
async def test_rejected_tool_call_is_never_executed_nor_resent(mode: str) -> None:
    """A retried step's tool call is not executed and does not appear in the next prompt."""
    model = ScriptedModel(
        [ScriptedStep(tool_calls=[("delete_everything", {})]), "I will not delete anything."]
    )
    agent = Agent(
        id="a",
        model=model,
        tools=[delete_everything],
        output_processors=[RejectToolCalls()],
        max_processor_retries=1,
    )
    result = (await call(agent, mode, "Clean up")).result
    assert result.text == "I will not delete anything."
    assert result.tool_results == []
    assert not any(isinstance(p, PromptToolCall) for m in model.prompts[1] for p in m.content)


class NeedsContext:
    """Input-step validation that asks for one retry (and records the counts it saw)."""

    id = "needs-context"

    def __init__(self) -> None:
        self.seen: list[int] = []

    def process_input_step(self, args: ProcessInputStepArgs) -> None:
        self.seen.append(args.retry_count)
        if args.retry_count == 0:
            args.abort("Answer using the glossary.", retry=True)


@pytest.mark.parametrize("mode", MODES)
async def test_input_step_retry_reruns_the_step_with_feedback(mode: str) -> None:
    """``abort(retry=True)`` in ``process_input_step`` re-runs the step; the model sees the reason last."""
    model = ScriptedModel(["ok"])
    checker = NeedsContext()
    agent = Agent(id="a", model=model, input_processors=[checker], max_processor_retries=1)
    result = (await call(agent, mode, "Define drift")).result
    assert checker.seen == [0, 1]
    assert model.calls == 1
    assert texts(model.prompts[0])[-1].endswith(">Answer using the glossary.</system-reminder>")
    assert result.finish_reason == "stop"


@pytest.mark.parametrize("mode", MODES)
async def test_input_step_retry_without_cap_is_a_tripwire(mode: str) -> None:
    """Without a cap, a retry asked in ``process_input_step`` ends the call as ``tripwire``."""
    model = ScriptedModel(["never"])
    result = (await call(Agent(id="a", model=model, input_processors=[NeedsContext()]), mode, "Hi")).result
    assert (model.calls, result.finish_reason) == (0, "tripwire")

"""A model call a guard trips was still billed: it counts in ``result.usage`` and for the cost guard."""

from __future__ import annotations

from typing import Any

import pytest
from _agent_support import MODES, call
from guard_seams_support import PERSONAL, SHAPES, RejectFirstStep, listed
from log_support import captured_logs

from procflow import Agent, Chunk, RequestContext, Usage
from procflow.cache import InMemoryServerCache
from procflow.memory import RESOURCE_ID_KEY
from procflow.processors import (
    CostGuardProcessor,
    ModelPrice,
    ProcessLLMResponseArgs,
    ProcessOutputStepArgs,
    ProcessOutputStreamArgs,
    RegexFilterProcessor,
    ResponseCache,
    TiktokenCounter,
    TokenLimiter,
)
from procflow.testing import ScriptedModel, ScriptedStep

DOLLAR_A_TOKEN = {"scripted-model": ModelPrice(input=1_000_000, output=1_000_000)}
BILLED = Usage(input_tokens=1, output_tokens=2)  # $3 at DOLLAR_A_TOKEN
LANGS = [lang for lang, _, _ in PERSONAL]
TEXTS = {lang: text for lang, text, _ in PERSONAL}
COUNT = TiktokenCounter().count


class StopAtChunk:
    """A stream guard that lets ``n - 1`` text chunks pass and trips on the ``n``-th."""

    id = "stop-at-chunk"

    def __init__(self, n: int) -> None:
        self.n = n

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        if args.part.type == "text-delta":
            args.state["seen"] = seen = args.state.get("seen", 0) + 1
            if seen == self.n:
                args.abort("Stopped mid-answer.")
        return args.part


class BlockAtStep:
    """An output-step guard that blocks every answer."""

    id = "block-at-step"

    def process_output_step(self, args: ProcessOutputStepArgs) -> None:
        args.abort("Blocked after the step.")


class Responses:
    """Records what ``process_llm_response`` is handed: chunk types and the ``finish`` payload."""

    id = "responses"

    def __init__(self) -> None:
        self.seen: list[tuple[list[str], dict[str, Any]]] = []

    def process_llm_response(self, args: ProcessLLMResponseArgs) -> None:
        self.seen.append(([c.type for c in args.chunks], dict(args.chunks[-1].payload)))


def spend_meter() -> tuple[CostGuardProcessor, list[float]]:
    """A warn-only guard whose every request reports the window's spend (it starts over $0.000001)."""
    guard = CostGuardProcessor(
        max_cost=0.000001, scope="resource", strategy="warn", warn_at_percent=None, prices=DOLLAR_A_TOKEN
    )
    spent: list[float] = []
    guard.on_violation = lambda v: spent.append(v.detail["spent"])
    return guard, spent


def user() -> RequestContext:
    return RequestContext({RESOURCE_ID_KEY: "user-1"})


def blocker(where: str) -> Any:
    if where == "regex-block":
        return RegexFilterProcessor(presets=["pii"], strategy="block")
    if where == "token-abort":
        return TokenLimiter(3, strategy="abort")
    return BlockAtStep()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("where", ["regex-block", "token-abort", "output-step"])
async def test_a_blocked_answer_uses_up_the_budget(where: str, shape: str, mode: str) -> None:
    """Whichever guard blocks the answer, wherever it sits, the next call finds the budget spent."""
    model = ScriptedModel([ScriptedStep(text=TEXTS["en"], usage=Usage(input_tokens=1))], repeat_last=True)
    guard = CostGuardProcessor(max_cost=1, scope="resource", prices=DOLLAR_A_TOKEN)
    outputs = listed(shape, lambda: [blocker(where)])
    agent = Agent(id="a", model=model, input_processors=[guard], output_processors=outputs)
    first = await call(agent, mode, "Hi", request_context=user())
    assert first.result.tripwire is not None and first.result.tripwire.processor_id == blocker(where).id
    second = await call(agent, mode, "Hi", request_context=user())
    assert second.result.tripwire is not None and second.result.tripwire.processor_id == "cost-guard"
    assert model.calls == 1


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", SHAPES)
async def test_a_cost_guard_in_a_workflow_counts_a_blocked_answer(shape: str, mode: str) -> None:
    """The cost guard inside a workflow prices a call a stream guard blocked, like the plain one."""
    model = ScriptedModel([ScriptedStep(text=TEXTS["fr"], usage=Usage(input_tokens=1))], repeat_last=True)
    inputs = listed(shape, lambda: [CostGuardProcessor(max_cost=1, scope="resource", prices=DOLLAR_A_TOKEN)])
    agent = Agent(
        id="a",
        model=model,
        input_processors=inputs,
        output_processors=[RegexFilterProcessor(presets=["pii"], strategy="block")],
    )
    await call(agent, mode, "Bonjour", request_context=user())
    second = await call(agent, mode, "Bonjour", request_context=user())
    assert second.result.tripwire is not None and second.result.tripwire.processor_id == "cost-guard"
    assert model.calls == 1


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("lang", LANGS)
async def test_usage_reported_before_the_tripwire_counts_exactly(lang: str, mode: str) -> None:
    """A guard that trips at the end of the stream (after the model reported usage): that usage counts."""
    step = ScriptedStep(text=TEXTS[lang], usage=BILLED, chunk_size=1000)  # the match ends the only chunk
    guard, spent = spend_meter()
    responses = Responses()
    agent = Agent(
        id="a",
        model=ScriptedModel([step]),
        input_processors=[guard, responses],
        output_processors=[RegexFilterProcessor(presets=["pii"], strategy="block")],
    )
    outcome = await call(agent, mode, "Hi", request_context=user())
    assert outcome.result.tripwire is not None and outcome.result.tripwire.processor_id == "regex-filter"
    assert outcome.result.usage == BILLED
    assert spent == [3.0]
    [(types, finish)] = responses.seen
    assert types[-2:] == ["tripwire", "finish"]
    assert finish["finish_reason"] == "tripwire" and finish["usage"]["total_tokens"] == 3


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("lang", LANGS)
async def test_a_stream_cut_before_its_usage_is_priced_from_an_estimate(lang: str, mode: str) -> None:
    """Cut mid-stream, a call's usage is unknown: result.usage counts nothing, the guard an estimate."""
    first, second = TEXTS[lang][:6], TEXTS[lang][6:12]
    step = ScriptedStep(text=first + second + TEXTS[lang][12:], usage=BILLED, chunk_size=6)
    guard, spent = spend_meter()
    responses = Responses()
    agent = Agent(
        id="a",
        model=ScriptedModel([step]),
        input_processors=[guard, responses],
        output_processors=[StopAtChunk(2)],
    )
    with captured_logs() as logs:
        outcome = await call(agent, mode, "Hi", request_context=user())
    assert outcome.result.tripwire is not None and outcome.result.usage == Usage()
    # The prompt as sent (one user message: its role, 3 tokens of framing, its text), and what passed.
    assert spent == [COUNT("user") + 3 + COUNT("Hi") + COUNT(first)]
    [(types, finish)] = responses.seen
    assert types == ["text-delta", "tripwire", "finish"]
    assert finish == {"finish_reason": "tripwire", "usage": None}
    assert [e["event"] for e in logs].count("cost_guard_usage_estimated") == 1


@pytest.mark.parametrize("mode", MODES)
async def test_a_retried_step_bills_both_attempts(mode: str) -> None:
    """An output-step retry that then passes: both model calls are in result.usage and in the spend."""
    answers = [
        ScriptedStep(text="Primera respuesta.", usage=BILLED),
        ScriptedStep(text="Otra.", usage=BILLED),
    ]
    model = ScriptedModel(answers, repeat_last=True)
    guard = CostGuardProcessor(max_cost=6, scope="resource", prices=DOLLAR_A_TOKEN)
    agent = Agent(
        id="a",
        model=model,
        input_processors=[guard],
        output_processors=[RejectFirstStep()],
        max_processor_retries=1,
    )
    outcome = await call(agent, mode, "Hola", request_context=user())
    assert outcome.result.tripwire is None and outcome.result.text == "Otra."
    assert outcome.result.usage == BILLED + BILLED
    again = await call(agent, mode, "Hola", request_context=user())  # $6 of $6 spent
    assert again.result.tripwire is not None and again.result.tripwire.processor_id == "cost-guard"
    assert model.calls == 2


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("guard", ["flush", "mid-stream"])
async def test_a_tripped_answer_is_never_cached(guard: str, mode: str) -> None:
    """The tripped call reaches process_llm_response, yet the cache stores nothing: the next call asks."""
    text = TEXTS["zh"]
    out: Any = RegexFilterProcessor(presets=["pii"], strategy="block") if guard == "flush" else StopAtChunk(2)
    model = ScriptedModel(
        [ScriptedStep(text=text, chunk_size=1000 if guard == "flush" else 4)], repeat_last=True
    )
    cache = ResponseCache(cache=InMemoryServerCache())
    agent = Agent(id="a", model=model, input_processors=[cache], output_processors=[out])
    for _ in range(2):
        outcome = await call(agent, mode, "你好")
        assert outcome.result.tripwire is not None
    assert model.calls == 2


class AbortOnTripped:
    """A ``process_llm_response`` hook that aborts when it sees a tripped call."""

    id = "abort-on-tripped"

    def process_llm_response(self, args: ProcessLLMResponseArgs) -> None:
        if args.chunks[-1].payload["finish_reason"] == "tripwire":
            args.abort("Seen a tripped call.")


@pytest.mark.parametrize("mode", MODES)
async def test_the_first_tripwire_is_the_one_reported(mode: str) -> None:
    """A hook that aborts on the tripped call does not replace the tripwire that ended it."""
    model = ScriptedModel([ScriptedStep(text=TEXTS["es"], chunk_size=5)])
    agent = Agent(
        id="a", model=model, input_processors=[AbortOnTripped()], output_processors=[StopAtChunk(2)]
    )
    outcome = await call(agent, mode, "Hola")
    assert outcome.result.tripwire is not None and outcome.result.tripwire.processor_id == "stop-at-chunk"
    if mode == "stream":
        assert [c.payload["processor_id"] for c in outcome.chunks if c.type == "tripwire"] == [
            "stop-at-chunk"
        ]


@pytest.mark.parametrize("mode", MODES)
async def test_a_replayed_answer_a_guard_blocks_is_not_billed(mode: str) -> None:
    """A cache hit costs no model call: a stream guard blocking the replay adds nothing to the spend."""
    store = InMemoryServerCache()
    step = ScriptedStep(text=TEXTS["en"], usage=BILLED)
    writer = Agent(id="a", model=ScriptedModel([step]), input_processors=[ResponseCache(cache=store)])
    await call(writer, mode, "Hi", request_context=user())  # stored by an agent without the guard
    guard, spent = spend_meter()
    model = ScriptedModel([step], repeat_last=True)
    guarded = Agent(
        id="a",
        model=model,
        input_processors=[guard, ResponseCache(cache=store)],
        output_processors=[RegexFilterProcessor(presets=["pii"], strategy="block")],
    )
    replayed = await call(guarded, mode, "Hi", request_context=user())
    assert replayed.result.tripwire is not None and replayed.result.tripwire.processor_id == "regex-filter"
    assert model.calls == 0 and replayed.result.usage == Usage()
    again = await call(guarded, mode, "Hi", request_context=user())
    assert spent == [] and again.result.tripwire is not None

"""LLM-backed guards at the seams of the output stream: tool traffic, data chunks, reasoning, retries,
other processors' tripwires, workflows — in English, French, Spanish and Chinese."""

from __future__ import annotations

import json
from typing import Any

import pytest
from guard_seams_support import (
    HATEFUL,
    PERSONAL,
    SHAPES,
    RejectFirstStep,
    dump_chunks,
    leaks,
    listed,
    lookup_customer,
    pii_guard,
    received,
)
from guard_support import chunked, live_text, scripted_judge
from hypothesis import given, settings
from hypothesis import strategies as st

from procflow import Agent, Chunk, ToolContext, tool
from procflow.errors import APICallError
from procflow.processors import (
    ModerationProcessor,
    PIIDetector,
    ProcessorViolation,
    ProcessOutputStreamArgs,
    StreamErrorRetryProcessor,
    SystemPromptScrubber,
)
from procflow.testing import ScriptedModel, ScriptedStep


@pytest.mark.parametrize(("lang", "sentence", "values"), PERSONAL, ids=[p[0] for p in PERSONAL])
async def test_generate_redacts_tool_calls_like_stream(
    lang: str, sentence: str, values: tuple[str, ...]
) -> None:
    """generate() runs the same stream guards: the recorded tool call and the messages are redacted."""
    received.clear()
    model = ScriptedModel([ScriptedStep(tool_calls=[("lookup_customer", {"query": sentence})]), "Found."])
    agent = Agent(id="a", model=model, tools=[lookup_customer], output_processors=[pii_guard()])
    result = await agent.generate("who?")
    assert leaks(json.dumps(result.steps[0].tool_calls[0].args, ensure_ascii=False)) == []
    stored = json.dumps([m.model_dump(mode="json") for m in result.response.messages], ensure_ascii=False)
    assert leaks(stored) == [] and leaks(json.dumps(received, ensure_ascii=False)) == []
    assert (
        leaks(json.dumps([m.model_dump(mode="json") for m in model.requests[1].prompt], ensure_ascii=False))
        == []
    )


@pytest.mark.parametrize(("lang", "sentence", "values"), PERSONAL, ids=[p[0] for p in PERSONAL])
async def test_personal_data_in_tool_calls_results_and_data_chunks_is_redacted(
    lang: str, sentence: str, values: tuple[str, ...]
) -> None:
    """A tool call's arguments, its result and its data chunk are judged like text: nothing in clear."""
    received.clear()
    model = ScriptedModel(
        [ScriptedStep(text="Let me check. ", tool_calls=[("lookup_customer", {"query": sentence})]), "Found."]
    )
    agent = Agent(id="a", model=model, tools=[lookup_customer], output_processors=[pii_guard()])
    output = agent.stream("who?")
    chunks = [chunk async for chunk in output.full_stream]
    assert leaks(dump_chunks(chunks)) == []
    assert {c.type for c in chunks} >= {"tool-call", "tool-result", "data-customer"}
    # The tool call is model output too: the tool is handed the redacted arguments.
    assert leaks(json.dumps(received, ensure_ascii=False)) == [] and "[" in received[0]["query"]
    stored = json.dumps([m.model_dump(mode="json") for m in output.response.messages], ensure_ascii=False)
    assert leaks(stored) == []


@pytest.mark.parametrize("lang", sorted(HATEFUL))
async def test_moderation_blocks_a_tool_call_carrying_flagged_text(lang: str) -> None:
    """A flagged tool-call argument trips the moderation guard before the tool runs."""
    received.clear()
    model = ScriptedModel([ScriptedStep(tool_calls=[("lookup_customer", {"query": HATEFUL[lang]})]), "x"])
    agent = Agent(
        id="a",
        model=model,
        tools=[lookup_customer],
        output_processors=[ModerationProcessor(model=scripted_judge())],
    )
    result = await agent.generate("go")
    assert result.tripwire is not None and result.tripwire.processor_id == "moderation"
    assert received == []


async def test_moderation_judges_data_chunks_written_by_tools() -> None:
    """A tool's data chunk is judged: a flagged one is filtered out with strategy='filter'."""

    @tool
    async def shout(context: ToolContext) -> str:
        """Writes two data chunks, one of them hateful."""
        assert context.writer is not None
        await context.writer.custom({"type": "data-note", "data": {"text": "Te odio mucho."}})
        await context.writer.custom({"type": "data-note", "data": {"text": "Hola."}})
        return "done"

    guard = ModerationProcessor(model=scripted_judge(), strategy="filter")
    agent = Agent(
        id="a",
        model=ScriptedModel([ScriptedStep(tool_calls=[("shout", {})]), "ok"]),
        tools=[shout],
        output_processors=[guard],
    )
    chunks = [c async for c in agent.stream("go").full_stream]
    assert [c.payload["data"]["text"] for c in chunks if c.type == "data-note"] == ["Hola."]


def _retrying_agent(first: ScriptedStep, second: str, guards: list[Any]) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel([first, second])
    agent = Agent(
        id="a",
        model=model,
        output_processors=guards,
        error_processors=[StreamErrorRetryProcessor(initial_delay=0)],
        max_processor_retries=2,
    )
    return agent, model


@pytest.mark.parametrize("shape", ["direct", "sequence", "nested"])
@pytest.mark.parametrize(("lang", "sentence", "values"), PERSONAL, ids=[p[0] for p in PERSONAL])
async def test_a_provider_error_retry_drops_held_text_unjudged(
    lang: str, sentence: str, values: tuple[str, ...], shape: str
) -> None:
    """The held sentence of the broken attempt is never released nor judged nor reported."""
    broken = ScriptedStep(text=sentence[:-2], error=APICallError("overloaded", kind="overloaded"))
    reports: list[ProcessorViolation] = []
    judge = scripted_judge()
    guard = PIIDetector(model=judge, redaction_method="placeholder")
    guard.on_violation = reports.append  # type: ignore[attr-defined]
    agent, _ = _retrying_agent(broken, "Nothing personal here.", listed(shape, lambda: [guard]))
    output = agent.stream("x")
    chunks = [c async for c in output.full_stream]
    assert leaks(dump_chunks(chunks)) == []
    assert output.text == "Nothing personal here." and output.tripwire is None
    assert reports == [] and judge.calls == 1


ANSWERS = [sentence + " " + HATEFUL["en"] if lang == "en" else sentence for lang, sentence, _ in PERSONAL]


@settings(max_examples=40, deadline=None)
@given(
    answer=st.sampled_from([s for _, s, _ in PERSONAL]),
    cuts=st.lists(st.integers(min_value=1, max_value=9), max_size=30),
    broken_after=st.integers(min_value=0, max_value=12),
)
async def test_any_chunking_and_any_break_point_of_a_retried_stream(
    answer: str, cuts: list[int], broken_after: int
) -> None:
    """Whatever the split points and wherever the first attempt breaks, no value is ever delivered in
    clear and the accepted text is exactly what generate() returns."""
    pieces = [Chunk.text_delta(p) for p in chunked(answer, cuts)]
    broken = ScriptedStep(chunks=pieces[:broken_after], error=APICallError("reset", kind="connection"))
    agent, _ = _retrying_agent(broken, ScriptedStep(chunks=pieces), [pii_guard()])  # type: ignore[arg-type]
    seen = ""
    async for piece in live_text(agent.stream("x")):
        seen += piece
        assert leaks(seen) == []
    whole = await Agent(id="a", model=ScriptedModel([answer]), output_processors=[pii_guard()]).generate("x")
    assert seen.endswith(whole.text) and leaks(whole.text) == []


@pytest.mark.parametrize("order", ["guard-first", "validator-first"])
async def test_an_output_step_retry_is_guarded_on_both_attempts(order: str) -> None:
    """Both the rejected and the accepted attempt pass the PII guard; the result is the redacted retry."""
    validator = RejectFirstStep()
    guards = [pii_guard(), validator] if order == "guard-first" else [validator, pii_guard()]
    model = ScriptedModel([PERSONAL[1][1], PERSONAL[3][1]], chunk_size=3)
    agent = Agent(id="a", model=model, output_processors=guards, max_processor_retries=1)
    output = agent.stream("x")
    chunks = [c async for c in output.full_stream]
    assert leaks(dump_chunks(chunks)) == []
    assert output.text == "请联系[NAME]，电话 [PHONE]。" and output.tripwire is None
    assert leaks(model.prompts[1][-2].content[0].text) == []  # type: ignore[union-attr]


class TripOnTool:
    """A stream processor that reports a tool call in a data chunk, then stops the request."""

    id = "trip-on-tool"

    async def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        if args.part.type == "tool-call":
            assert args.writer is not None
            await args.writer.custom({"type": "data-audit", "data": {"args": args.part.payload["args"]}})
            args.abort("tools are disabled")
        return args.part


async def test_another_processors_tripwire_never_releases_held_or_pending_values() -> None:
    """The data chunk a tripping processor wrote still passes the guard after it; held text stays held."""
    sentence = PERSONAL[0][1]
    step = ScriptedStep(text=sentence[:-1], tool_calls=[("lookup_customer", {"query": sentence})])
    agent = Agent(
        id="a",
        model=ScriptedModel([step]),
        tools=[lookup_customer],
        output_processors=[TripOnTool(), pii_guard()],
    )
    output = agent.stream("x")
    chunks = [c async for c in output.full_stream]
    assert output.tripwire is not None and output.tripwire.processor_id == "trip-on-tool"
    assert [c.type for c in chunks if c.type.startswith("data-")] == ["data-audit"]
    assert leaks(dump_chunks(chunks)) == []


@pytest.mark.parametrize("lang", sorted(HATEFUL))
@pytest.mark.parametrize("order", ["pii-first", "moderation-first"])
async def test_a_moderation_tripwire_next_to_pii_redaction_leaks_nothing(lang: str, order: str) -> None:
    """Whichever guard comes first, the request stops on the flagged sentence and nothing leaks."""
    sentence = next(s for code, s, _ in PERSONAL if code == lang)
    pii, moderation = pii_guard(), ModerationProcessor(model=scripted_judge(), stream_window=30)
    guards = [pii, moderation] if order == "pii-first" else [moderation, pii]
    model = ScriptedModel([f"{sentence} {HATEFUL[lang]}"], chunk_size=4)
    output = Agent(id="a", model=model, output_processors=guards).stream("x")
    chunks = [c async for c in output.full_stream]
    assert output.tripwire is not None and output.tripwire.processor_id == "moderation"
    assert leaks(dump_chunks(chunks)) == [] and HATEFUL[lang] not in dump_chunks(chunks)


@settings(max_examples=30, deadline=None)
@given(
    shape=st.sampled_from(SHAPES),
    answer=st.sampled_from(ANSWERS),
    cuts=st.lists(st.integers(min_value=1, max_value=7), max_size=40),
)
async def test_a_guard_gives_the_same_verdict_listed_directly_or_in_any_workflow(
    shape: str, answer: str, cuts: list[int]
) -> None:
    """Direct, in sequence, nested or as the kept parallel branch, with any chunking: same text, no leak."""

    def make() -> list[Any]:
        return [pii_guard(), ModerationProcessor(model=scripted_judge(), strategy="filter")]

    pieces = [Chunk.text_delta(p) for p in chunked(answer, cuts)]
    model = ScriptedModel([ScriptedStep(chunks=pieces)])
    seen = ""
    async for piece in live_text(
        Agent(id="a", model=model, output_processors=listed(shape, make)).stream("x")
    ):
        seen += piece
        assert leaks(seen) == []
    reference = Agent(id="a", model=ScriptedModel([answer]), output_processors=make())
    expected = (await reference.generate("x")).text
    if shape == "parallel":  # only the kept branch (PII) runs: the moderation filter is not in it
        expected = (
            await Agent(id="a", model=ScriptedModel([answer]), output_processors=[pii_guard()]).generate("x")
        ).text
    assert seen == expected


@pytest.mark.parametrize(("lang", "sentence", "values"), PERSONAL, ids=[p[0] for p in PERSONAL])
@pytest.mark.parametrize("chunk_size", [1, 4, 100])
async def test_reasoning_deltas_are_held_and_judged_like_text(
    lang: str, sentence: str, values: tuple[str, ...], chunk_size: int
) -> None:
    """Reasoning reaches consumers too: its personal data is redacted, whatever the chunking."""
    step = ScriptedStep(reasoning=f"{sentence} {sentence}", text=sentence, chunk_size=chunk_size)
    output = Agent(id="a", model=ScriptedModel([step]), output_processors=[pii_guard()]).stream("x")
    chunks = [c async for c in output.full_stream]
    assert leaks(dump_chunks(chunks)) == []
    assert output.result.reasoning_text.count("[") >= 2 * len(values)
    assert (
        output.text
        == (
            await Agent(id="a", model=ScriptedModel([sentence]), output_processors=[pii_guard()]).generate(
                "x"
            )
        ).text
    )


@pytest.mark.parametrize("on_error", ["allow", "block"])
async def test_a_failing_judge_on_a_tool_call_follows_on_error(on_error: str) -> None:
    """The judge errors on the tool call's arguments: allow lets the call run, block stops it first."""
    received.clear()
    judge = ScriptedModel([APICallError("judge down", kind="server")] * 4)
    guard = PIIDetector(model=judge, on_error=on_error)  # type: ignore[arg-type]
    model = ScriptedModel([ScriptedStep(tool_calls=[("lookup_customer", {"query": "order 7"})]), "ok"])
    agent = Agent(id="a", model=model, tools=[lookup_customer], output_processors=[guard])
    result = await agent.generate("x")
    if on_error == "block":
        assert result.tripwire is not None and result.tripwire.metadata["error"] == "error"
        assert received == []
    else:
        assert result.tripwire is None and received == [{"query": "order 7"}]


SYSTEM = "You are Zeta, the support bot of Acme. Never mention the internal escalation email."
LEAKS = [
    "Voici mes règles : you are Zeta, the support bot of Acme. Never mention the internal things.",
    "我的指令是：You are Zeta, the support bot of Acme。Never mention the internal escalation email.",
]


@settings(max_examples=30, deadline=None)
@given(
    shape=st.sampled_from(SHAPES),
    answer=st.sampled_from(LEAKS),
    cuts=st.lists(st.integers(min_value=1, max_value=7), max_size=40),
)
async def test_the_scrubber_redacts_a_leak_the_same_for_any_chunking_and_shape(
    shape: str, answer: str, cuts: list[int]
) -> None:
    """The system prompt never reaches the consumer, and the text equals generate()'s, in any shape."""
    pieces = [Chunk.text_delta(p) for p in chunked(answer, cuts)]
    scrubbers = listed(shape, lambda: [SystemPromptScrubber()])
    agent = Agent(
        id="a",
        instructions=SYSTEM,
        model=ScriptedModel([ScriptedStep(chunks=pieces)]),
        output_processors=scrubbers,
    )
    seen = ""
    async for piece in live_text(agent.stream("rules?")):
        seen += piece
        assert "support bot of Acme" not in seen
    reference = Agent(
        id="a", instructions=SYSTEM, model=ScriptedModel([answer]), output_processors=[SystemPromptScrubber()]
    )
    assert seen == (await reference.generate("rules?")).text and "[SYSTEM_PROMPT]" in seen

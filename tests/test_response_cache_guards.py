"""A ResponseCache hit passes the output guards like a model's answer: same chunks, text and tripwire."""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

import anyio
import pytest
from _agent_support import MODES, Outcome, call
from guard_seams_support import PERSONAL, SHAPES, listed
from hypothesis import given, settings
from hypothesis import strategies as st

from procflow import Agent, Chunk, tool
from procflow.cache import InMemoryServerCache
from procflow.processors import RegexFilterProcessor, ResponseCache, TokenLimiter
from procflow.testing import ScriptedModel, ScriptedStep

LANGUAGES = [language for language, _, _ in PERSONAL]
SENTENCES = {language: sentence for language, sentence, _ in PERSONAL}
CONTACTS = {language: values[1] for language, _, values in PERSONAL}
"""The e-mail address or phone number each sentence holds (what the ``pii`` preset matches)."""
STRATEGIES = ["redact", "block", "warn"]
CHUNK_SIZES = [3, 64]


def guard(strategy: str) -> RegexFilterProcessor:
    """The output guard under test: the ``pii`` preset with ``strategy``."""
    return RegexFilterProcessor(presets=["pii"], strategy=strategy)  # type: ignore[arg-type]


def leaks(text: str) -> list[str]:
    """The contacts of :data:`CONTACTS` that ``text`` holds in clear."""
    return [value for value in CONTACTS.values() if value in text]


def comparable(chunks: list[Chunk]) -> list[tuple[str, Any]]:
    """Every chunk the consumer got (the final chunk's response messages, with fresh ids, left out)."""
    return [(c.type, {k: v for k, v in c.payload.items() if k != "response"}) for c in chunks]


def seen(outcome: Outcome) -> dict[str, Any]:
    """What a consumer can tell of a call, up to where the text chunks were cut."""
    result = outcome.result
    return {
        "streamed": "".join(c.text or "" for c in outcome.chunks if c.type == "text-delta"),
        "others": [item for item in comparable(outcome.chunks) if item[0] != "text-delta"],
        "text": result.text,
        "tripwire": None if result.tripwire is None else result.tripwire.to_dict(),
        "tool_results": [r.result for r in result.tool_results],
    }


def cached_agent(
    store: InMemoryServerCache, steps: list[Any], output: list[Any], **options: Any
) -> tuple[Agent, ScriptedModel]:
    """An agent answering from ``store`` (else from ``steps``), with ``output`` as its processors."""
    model = ScriptedModel(steps, repeat_last=True)
    cache = ResponseCache(cache=store)
    agent = Agent(id="support", model=model, input_processors=[cache], output_processors=output, **options)
    return agent, model


async def fresh_and_replayed(
    steps: list[Any], output: Any, mode: str, **options: Any
) -> tuple[Outcome, Outcome, ScriptedModel]:
    """The guarded agent on a miss, and on a hit of an entry an agent without the guard wrote."""
    fresh_agent, _ = cached_agent(InMemoryServerCache(), steps, output(), **options)
    fresh = await call(fresh_agent, mode, "How do I reach them?")
    store = InMemoryServerCache()
    writer, _ = cached_agent(store, steps, [], **options)
    await writer.generate("How do I reach them?")
    guarded, model = cached_agent(store, steps, output(), **options)
    replayed = await call(guarded, mode, "How do I reach them?")
    assert all(step.from_cache for step in replayed.result.steps)
    return fresh, replayed, model


@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("mode", MODES)
async def test_an_entry_written_without_the_guard_replays_like_the_model(
    mode: str, strategy: str, shape: str, language: str, chunk_size: int
) -> None:
    """A hit on an unguarded entry gives exactly what the guard makes of the model's own answer."""
    steps = [ScriptedStep(text=SENTENCES[language], chunk_size=chunk_size)]
    fresh, replayed, model = await fresh_and_replayed(
        steps, lambda: listed(shape, lambda: [guard(strategy)]), mode
    )
    assert model.calls == 0
    assert comparable(replayed.chunks) == comparable(fresh.chunks)
    assert seen(replayed) == seen(fresh)
    if strategy == "warn":
        assert replayed.result.text == SENTENCES[language]
    else:
        assert not leaks(replayed.result.text) and not leaks(
            json.dumps(comparable(replayed.chunks), ensure_ascii=False)
        )
    if strategy == "block":
        assert replayed.result.tripwire is not None
        assert replayed.result.tripwire.processor_id == "regex-filter"
        assert replayed.result.text == ""


@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("strategy", ["redact", "warn"])
@pytest.mark.parametrize("mode", MODES)
async def test_a_guarded_answer_replays_as_it_was_first_delivered(
    mode: str, strategy: str, shape: str, language: str, chunk_size: int
) -> None:
    """The guard runs again on the stored answer and gives the same text, chunks and verdict."""
    steps = [ScriptedStep(text=SENTENCES[language], chunk_size=chunk_size)]
    agent, model = cached_agent(InMemoryServerCache(), steps, listed(shape, lambda: [guard(strategy)]))
    first = await call(agent, mode, "How do I reach them?")
    second = await call(agent, mode, "How do I reach them?")
    assert (model.calls, second.result.steps[0].from_cache) == (1, True)
    assert seen(second) == seen(first)
    assert bool(leaks(second.result.text)) is (strategy == "warn")


@settings(max_examples=30)
@given(
    data=st.data(),
    language=st.sampled_from(LANGUAGES),
    strategy=st.sampled_from(STRATEGIES),
    shape=st.sampled_from(SHAPES),
)
def test_any_chunking_of_a_stored_answer_is_guarded_like_the_model(
    data: st.DataObject, language: str, strategy: str, shape: str
) -> None:
    """However the stored text was cut into chunks, the replay equals the guarded model stream."""
    text = SENTENCES[language]
    cuts = sorted(data.draw(st.sets(st.integers(min_value=1, max_value=len(text) - 1), max_size=12)))
    bounds = [0, *cuts, len(text)]
    chunks = [Chunk("text-delta", {"text": text[a:b]}) for a, b in pairwise(bounds)]
    steps = [ScriptedStep(chunks=[*chunks, Chunk("finish", {"finish_reason": "stop"})])]
    output = lambda: listed(shape, lambda: [guard(strategy)])  # noqa: E731
    fresh, replayed, _ = anyio.run(fresh_and_replayed, steps, output, "stream")
    assert comparable(replayed.chunks) == comparable(fresh.chunks)
    assert seen(replayed) == seen(fresh)


@pytest.mark.parametrize("mode", MODES)
async def test_an_entry_written_by_a_call_without_output_processors_is_guarded(mode: str) -> None:
    """A per-call ``output_processors=[]`` writes raw text; the agent's guard still judges its replay."""
    agent, model = cached_agent(InMemoryServerCache(), [SENTENCES["en"]], [guard("redact")])
    raw = await agent.generate("How do I reach them?", output_processors=[])
    replayed = await call(agent, mode, "How do I reach them?")
    assert model.calls == 1 and CONTACTS["en"] in raw.text
    assert replayed.result.steps[0].from_cache
    assert not leaks(replayed.result.text) and not leaks(
        json.dumps(comparable(replayed.chunks), ensure_ascii=False)
    )
    assert "[EMAIL]" in replayed.result.text


def owner_tool(value: str, runs: list[str]) -> Any:
    """A tool returning ``value`` as an account owner's contact, noting each account it ran for."""

    @tool
    async def read_owner(account: str) -> dict[str, str]:
        """The contact details of an account's owner."""
        runs.append(account)
        return {"account": account, "contact": value}

    return read_owner


def tool_loop() -> list[Any]:
    """A model that reads an account's owner with the tool, then answers."""
    return [ScriptedStep(tool_calls=[("read_owner", {"account": "A1"})]), "Their details are on file."]


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", MODES)
async def test_a_replayed_tool_result_is_redacted_like_the_executed_one(
    mode: str, shape: str, language: str
) -> None:
    """The stored tool result (kept as the tool returned it) reaches the consumer redacted, as at first."""
    value = CONTACTS[language]
    runs: list[str] = []
    agent, model = cached_agent(
        InMemoryServerCache(),
        tool_loop(),
        listed(shape, lambda: [guard("redact")]),
        tools=[owner_tool(value, runs)],
    )
    first = await call(agent, mode, "Who owns A1?")
    second = await call(agent, mode, "Who owns A1?")
    assert (model.calls, runs) == (2, ["A1"])
    assert [s.from_cache for s in second.result.steps] == [True, True]
    assert seen(second) == seen(first)
    assert second.result.tool_results[0].result == {"account": "A1", "contact": value}
    if mode == "stream":
        (result,) = [c for c in second.chunks if c.type == "tool-result"]
        assert not leaks(json.dumps(result.payload, ensure_ascii=False))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", MODES)
async def test_a_replayed_tool_result_trips_the_block_guard_like_the_executed_one(
    mode: str, shape: str
) -> None:
    """An unguarded entry's tool result trips ``block`` on the replay exactly as the tool's own did."""
    value = CONTACTS["fr"]
    runs: list[str] = []
    fresh, replayed, model = await fresh_and_replayed(
        tool_loop(),
        lambda: listed(shape, lambda: [guard("block")]),
        mode,
        tools=[owner_tool(value, runs)],
    )
    assert runs == ["A1", "A1"]  # the fresh guarded run and the writer; never the replay
    assert model.calls == 0
    assert comparable(replayed.chunks) == comparable(fresh.chunks)
    assert seen(replayed) == seen(fresh)
    assert replayed.result.tripwire is not None and replayed.result.tripwire.processor_id == "regex-filter"
    assert not leaks(json.dumps(comparable(replayed.chunks), ensure_ascii=False))


async def test_the_entry_holds_the_tool_result_as_returned_and_the_text_as_delivered() -> None:
    """The backend keeps the guarded text and the raw tool result: the next step's key needs it."""
    value = CONTACTS["en"]
    store = InMemoryServerCache()
    steps = [ScriptedStep(text=f"Found {value}.", tool_calls=[("read_owner", {"account": "A1"})]), "Done."]
    agent, _ = cached_agent(store, steps, [guard("redact")], tools=[owner_tool(value, [])])
    await agent.generate("Who owns A1?")
    entries = [await store.get(key) for key in list(store._entries)]
    first_step = next(e for e in entries if any(c["type"] == "tool-result" for c in e["chunks"]))
    texts = "".join(c["payload"].get("text", "") for c in first_step["chunks"] if c["type"] == "text-delta")
    (result,) = [c["payload"]["result"] for c in first_step["chunks"] if c["type"] == "tool-result"]
    assert texts == "Found [EMAIL]." and result["contact"] == value


def limited(shape: str, limit: int) -> list[Any]:
    """A TokenLimiter of ``limit`` tokens, listed directly or in a workflow of ``shape``."""
    return listed(shape, lambda: [TokenLimiter(limit)])


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", MODES)
async def test_a_replayed_step_counts_toward_the_output_token_budget(
    mode: str, shape: str, language: str
) -> None:
    """Step 0 from the cache, step 1 fresh: the limiter cuts the stream where it cut the first run."""

    @tool
    def look(q: str) -> str:
        """Look something up."""
        return "noted"

    sentence = SENTENCES[language]
    step0 = ScriptedStep(text=sentence, tool_calls=[("look", {"q": "a"})], chunk_size=5)
    step1 = ScriptedStep(text=sentence * 3, finish_reason="length", chunk_size=5)  # never stored
    model = ScriptedModel([step0, step1, step1])
    agent = Agent(
        id="a",
        model=model,
        tools=[look],
        input_processors=[ResponseCache(cache=InMemoryServerCache())],
        output_processors=limited(shape, 25),
    )
    first = await call(agent, mode, "go")
    second = await call(agent, mode, "go")
    assert [s.from_cache for s in second.result.steps] == [True, False]
    assert seen(second) == seen(first)
    assert first.result.text.startswith(sentence) and first.result.text != sentence * 4
    assert TokenLimiter(25).count(second.result.text) <= 25
    if mode == "stream":
        assert seen(second)["streamed"] == second.result.text


@pytest.mark.parametrize("shape", SHAPES)
async def test_a_fully_replayed_cut_answer_streams_as_it_was_cut(shape: str) -> None:
    """A stored answer the limiter cut streams and keeps the same text and limit-reached chunk again."""
    sentence = SENTENCES["fr"]
    agent, model = cached_agent(
        InMemoryServerCache(), [ScriptedStep(text=sentence * 4, chunk_size=4)], limited(shape, 12)
    )
    first = await call(agent, "stream", "go")
    second = await call(agent, "stream", "go")
    assert (model.calls, second.result.steps[0].from_cache) == (1, True)
    assert seen(second)["streamed"] == seen(first)["streamed"] == first.result.text
    assert second.result.text == first.result.text
    assert seen(second)["others"] == seen(first)["others"]
    assert [c.type for c in second.chunks].count(TokenLimiter.LIMIT_REACHED_CHUNK) == 1

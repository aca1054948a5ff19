"""BatchPartsProcessor: text deltas batched, every other chunk kept in its place."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from procflow import Agent, Chunk, tool
from procflow.errors import ConfigurationError
from procflow.processors import BatchPartsProcessor
from procflow.testing import ScriptedModel, ScriptedStep, run_output_stream


class FakeClock:
    """A clock the test moves by hand, so waiting is tested without sleeping."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def kinds(chunks: list[Chunk]) -> list[str]:
    return [c.text if c.type == "text-delta" else c.type for c in chunks]


async def test_deltas_are_joined_in_batches_of_batch_size() -> None:
    """Every batch_size deltas become one delta; the rest comes out at the end of the stream."""
    outcome = await run_output_stream(BatchPartsProcessor(batch_size=3), list("abcdefgh"))
    assert kinds(outcome.chunks) == ["abc", "def", "gh"]


async def test_a_non_text_chunk_flushes_the_batch_before_it() -> None:
    """With emit_on_non_text (default) buffered text comes out first, then the chunk."""
    chunks = [
        Chunk.text_delta("a"),
        Chunk.text_delta("b"),
        Chunk("tool-call", {"tool_name": "t"}),
        Chunk.text_delta("c"),
    ]
    outcome = await run_output_stream(BatchPartsProcessor(batch_size=10), chunks)
    assert kinds(outcome.chunks) == ["ab", "tool-call", "c"]
    assert outcome.chunks[1] is chunks[2]


async def test_non_text_chunks_wait_in_place_without_emit_on_non_text() -> None:
    """emit_on_non_text=False keeps non-text chunks in the batch, in order, counted as parts."""
    chunks = [Chunk.text_delta("a"), Chunk("source"), Chunk.text_delta("b"), Chunk.text_delta("c")]
    processor = BatchPartsProcessor(batch_size=3, emit_on_non_text=False)
    outcome = await run_output_stream(processor, chunks, flush=False)
    assert kinds(outcome.chunks) == ["a", "source", "b"]
    rest = await run_output_stream(processor, [], state=outcome.state)
    assert kinds(rest.chunks) == ["c"]


async def test_data_chunks_cannot_overtake_buffered_text() -> None:
    """The processor sees data-* chunks, so a data chunk leaves after the text before it."""
    chunks = [Chunk.text_delta("a"), Chunk.data("data-status", {"ok": True}), Chunk.text_delta("b")]
    outcome = await run_output_stream(BatchPartsProcessor(batch_size=10), chunks)
    assert kinds(outcome.chunks) == ["a", "data-status", "b"]


async def test_max_wait_time_flushes_when_the_next_chunk_arrives_late() -> None:
    """A chunk arriving more than max_wait_time after the first buffered delta flushes the batch."""
    clock = FakeClock()
    processor = BatchPartsProcessor(batch_size=100, max_wait_time=0.5, clock=clock)
    state: dict[str, Any] = {}
    first = await run_output_stream(processor, ["a", "b"], state=state, flush=False)
    clock.now += 0.4
    early = await run_output_stream(processor, ["c"], state=state, flush=False)
    clock.now += 0.2
    late = await run_output_stream(processor, ["d"], state=state, flush=False)
    assert first.chunks == early.chunks == []
    assert kinds(late.chunks) == ["abcd"]


async def test_without_chunks_nothing_flushes_on_time_alone() -> None:
    """No timer runs: a paused stream keeps its batch until the next chunk or the end."""
    clock = FakeClock()
    processor = BatchPartsProcessor(batch_size=100, max_wait_time=0.1, clock=clock)
    state: dict[str, Any] = {}
    held = await run_output_stream(processor, ["a"], state=state, flush=False)
    clock.now += 60
    ended = await run_output_stream(processor, [], state=state)
    assert held.chunks == []
    assert kinds(ended.chunks) == ["a"]


async def test_deltas_of_different_text_blocks_are_not_merged() -> None:
    """Deltas with different ids stay separate chunks (in order) within one batch."""
    chunks = [Chunk.text_delta("a", id="1"), Chunk.text_delta("b", id="1"), Chunk.text_delta("c", id="2")]
    outcome = await run_output_stream(BatchPartsProcessor(batch_size=3), chunks)
    assert [(c.payload["id"], c.text) for c in outcome.chunks] == [("1", "ab"), ("2", "c")]


async def test_batch_size_one_passes_chunks_through() -> None:
    """batch_size=1 emits every delta as it comes, the very same objects."""
    chunks = [Chunk.text_delta("a"), Chunk.text_delta("b")]
    outcome = await run_output_stream(BatchPartsProcessor(batch_size=1), chunks)
    assert outcome.chunks == chunks
    assert all(a is b for a, b in zip(outcome.chunks, chunks, strict=True))


async def test_input_chunks_are_not_mutated() -> None:
    """Joining builds new chunks; the chunks received keep their own text."""
    chunks = [Chunk.text_delta("a"), Chunk.text_delta("b")]
    await run_output_stream(BatchPartsProcessor(batch_size=2), chunks)
    assert [c.text for c in chunks] == ["a", "b"]


_chunk = st.one_of(
    st.builds(Chunk.text_delta, st.text(max_size=3), id=st.sampled_from(["0", "1"])),
    st.builds(Chunk, st.sampled_from(["tool-call", "step-finish", "reasoning-delta", "source"])),
    st.builds(lambda n: Chunk.data("data-n", n), st.integers()),
)


@given(
    chunks=st.lists(_chunk, max_size=30),
    batch_size=st.integers(1, 6),
    emit_on_non_text=st.booleans(),
)
async def test_nothing_is_lost_or_reordered(
    chunks: list[Chunk], batch_size: int, emit_on_non_text: bool
) -> None:
    """For any stream: the same non-text chunks in the same order, and the same text per block."""
    processor = BatchPartsProcessor(batch_size=batch_size, emit_on_non_text=emit_on_non_text)
    outcome = await run_output_stream(processor, chunks)

    def shape(items: list[Chunk]) -> list[Any]:
        out: list[Any] = []
        for c in items:
            if (
                c.type == "text-delta"
                and out
                and isinstance(out[-1], tuple)
                and out[-1][0] == c.payload["id"]
            ):
                out[-1] = (c.payload["id"], out[-1][1] + (c.text or ""))
            elif c.type == "text-delta":
                out.append((c.payload["id"], c.text or ""))
            else:
                out.append(c)
        return out

    assert shape(outcome.chunks) == shape(chunks)
    assert len(outcome.chunks) <= len(chunks)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": 2.5}, "batch_size"),
        ({"max_wait_time": -1}, "max_wait_time"),
        ({"max_wait_time": True}, "max_wait_time"),
    ],
)
def test_bad_options_are_rejected(options: dict[str, Any], match: str) -> None:
    """Invalid options raise ConfigurationError naming the option."""
    with pytest.raises(ConfigurationError, match=match):
        BatchPartsProcessor(**options)


async def test_agent_stream_arrives_in_batches_with_tool_chunks_in_place() -> None:
    """In an agent stream, 2-character deltas arrive joined in fours, around the tool chunks, in order."""

    @tool
    def lookup(order: int) -> str:
        """Look up an order's status."""
        return "shipped"

    text = "Let me look that order up for you now."
    model = ScriptedModel(
        [ScriptedStep(text=text, tool_calls=[("lookup", {"order": 7})], chunk_size=2), "It has shipped."],
        chunk_size=2,
    )
    agent = Agent(id="a", model=model, tools=[lookup], output_processors=[BatchPartsProcessor(batch_size=4)])
    output = agent.stream("Where is order 7?")
    chunks = [chunk async for chunk in output.full_stream]
    first_step = chunks[: next(i for i, c in enumerate(chunks) if c.type == "tool-call")]
    deltas = [c.text for c in first_step if c.type == "text-delta"]
    assert "".join(deltas) == text
    assert all(len(d or "") == 8 for d in deltas[:-1])
    kinds = [c.type for c in chunks if c.type != "text-delta"]
    assert kinds.index("tool-call") < kinds.index("tool-result") < kinds.index("finish")
    assert output.result is not None and output.result.text == text + "It has shipped."


def test_default_id_and_custom_id() -> None:
    """The seed's id by default; id= sets another so two can share a pipeline."""
    assert BatchPartsProcessor().id == "batch-parts"
    assert BatchPartsProcessor(id="second").id == "second"

"""The stream phase: drops, tripwires, errors, data parts, extra emitted chunks, state, and a property."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from procflow import Chunk, MessageList
from procflow._messages import OutputResult
from procflow._runner.context import RunContext
from procflow._runner.pipeline import ProcessorPipeline
from procflow._runner.stream import StreamRunner
from procflow.errors import ProcessorFailedError
from procflow.processors import ProcessOutputResultArgs, ProcessOutputStreamArgs
from procflow.testing import run_output_stream


class DropWord:
    def __init__(self, word: str, pid: str = "drop") -> None:
        self.id = pid
        self.word = word

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk | None:
        if args.part.text and self.word in args.part.text:
            return None
        return args.part


async def test_none_drops_the_chunk_and_stops_its_chain() -> None:
    """Returning None drops that chunk; later processors never see it."""
    seen: list[str] = []

    class Spy:
        id = "spy"

        def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
            seen.append(args.part.text or "")
            return args.part

    ctx = RunContext(message_list=MessageList())
    stream = StreamRunner(ProcessorPipeline.build([DropWord("secret"), Spy()]), ctx)
    out = [c for text in ["a", "secret", "b"] for c in await stream.push(Chunk.text_delta(text))]
    assert [c.text for c in out] == ["a", "b"] and seen == ["a", "b"]


async def test_tripwire_blocks_the_stream_after_earlier_chunks() -> None:
    """A tripwire stops the stream; chunks before it were already emitted."""

    class Block:
        id = "block"

        async def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
            if args.part.text == "bad":
                args.abort("bad content", metadata={"at": len(args.stream_parts)})
            return args.part

    outcome = await run_output_stream(Block(), ["a", "b", "bad", "c"])
    assert [c.text for c in outcome.chunks] == ["a", "b"]
    assert outcome.tripwire is not None
    assert (outcome.tripwire.processor_id, outcome.tripwire.metadata) == ("block", {"at": 3})


class Broken:
    """Upper-cases text chunks; raises on ``boom``."""

    id = "broken"

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        if args.part.text == "boom":
            raise RuntimeError("bug")
        return replace(args.part, payload={**args.part.payload, "text": args.part.text.upper()})  # type: ignore[union-attr]


async def test_a_stream_processor_that_raises_fails_closed() -> None:
    """A stream processor that raises stops the stream with ProcessorFailedError; the chunk is withheld."""
    with pytest.raises(ProcessorFailedError) as caught:
        await run_output_stream(Broken(), ["a", "boom", "c"])
    assert (caught.value.processor_id, caught.value.error_type) == ("broken", "RuntimeError")


async def test_a_fail_open_stream_processor_passes_the_chunk_unchanged() -> None:
    """With ``fail_open = True`` the failing chunk passes that processor unchanged and the stream goes on."""

    class Lenient(Broken):
        fail_open = True

    outcome = await run_output_stream(Lenient(), ["a", "boom", "c"])
    assert [c.text for c in outcome.chunks] == ["A", "boom", "C"] and outcome.tripwire is None


async def test_data_chunks_reach_only_processors_that_ask() -> None:
    """data-* chunks skip processors without process_data_parts and reach those with it."""
    seen: dict[str, list[str]] = {"plain": [], "data": []}

    class Plain:
        id = "plain"

        def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
            seen["plain"].append(args.part.type)
            return args.part

    class Collector:
        id = "data"
        process_data_parts = True

        def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
            seen["data"].append(args.part.type)
            return args.part

    chunks = [Chunk.text_delta("x"), Chunk.data("data-status", {"ok": 1})]
    outcome = await run_output_stream_pair(Plain(), Collector(), chunks)
    assert [c.type for c in outcome] == ["text-delta", "data-status"]
    assert seen == {"plain": ["text-delta"], "data": ["text-delta", "data-status"]}


async def run_output_stream_pair(first: Any, second: Any, chunks: list[Chunk]) -> list[Chunk]:
    stream = StreamRunner(ProcessorPipeline.build([first, second]), RunContext(message_list=MessageList()))
    return [c for chunk in chunks for c in await stream.push(chunk)]


class HoldBack:
    """Holds text until a non-text chunk arrives, then flushes it before that chunk."""

    id = "hold-back"

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> list[Chunk]:
        held: list[str] = args.state.setdefault("held", [])
        if args.part.type == "text-delta":
            held.append(args.part.text or "")
            return []
        text = "".join(held)
        held.clear()
        return [Chunk.text_delta(text), args.part] if text else [args.part]

    def flush_output_stream(self, args: ProcessOutputStreamArgs) -> list[Chunk]:
        held: list[str] = args.state.get("held", [])
        text = "".join(held)
        held.clear()
        return [Chunk.text_delta(text)] if text else []


async def test_emitted_second_chunk_runs_through_rest_of_chain_in_order() -> None:
    """A processor emitting [flushed text, chunk] sends both through later processors in order."""
    order: list[str] = []

    class Recorder:
        id = "recorder"

        def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
            order.append(f"{args.part.type}:{args.part.text or ''}")
            return args.part

    chunks = [Chunk.text_delta("a"), Chunk.text_delta("b"), Chunk("step-finish"), Chunk.text_delta("c")]
    out = await run_output_stream_pair(HoldBack(), Recorder(), chunks)
    assert order == ["text-delta:ab", "step-finish:"]
    assert [c.type for c in out] == ["text-delta", "step-finish"]


async def test_flush_emits_held_tail_at_end_of_stream() -> None:
    """flush_output_stream's chunks come out when the stream ends."""
    outcome = await run_output_stream(HoldBack(), ["a", "b"])
    assert [c.text for c in outcome.chunks] == ["ab"]


async def test_state_is_shared_between_stream_and_result_hooks() -> None:
    """The seed's WordCounter: state filled per chunk is read in process_output_result."""
    totals: list[int] = []

    class WordCounter:
        id = "word-counter"

        def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
            if args.part.type == "text-delta":
                args.state["words"] = args.state.get("words", 0) + len((args.part.text or "").split())
            return args.part

        def process_output_result(self, args: ProcessOutputResultArgs) -> None:
            totals.append(args.state["words"])

    from procflow._runner.runner import PhaseRunner

    ctx = RunContext(message_list=MessageList())
    pipeline = ProcessorPipeline.build([WordCounter()])
    stream = StreamRunner(pipeline, ctx)
    for text in ["one two ", "three", " four five"]:
        await stream.push(Chunk.text_delta(text))
    await PhaseRunner(pipeline, ctx).run_output_result(OutputResult())
    assert totals == [5]


async def test_retry_count_update_reaches_stream_hooks() -> None:
    """set_retry_count changes what stream hooks see as retry_count."""
    seen: list[int] = []

    class Spy:
        id = "spy"

        def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
            seen.append(args.retry_count)
            return args.part

    stream = StreamRunner(ProcessorPipeline.build([Spy()]), RunContext(message_list=MessageList()))
    await stream.push(Chunk.text_delta("a"))
    stream.set_retry_count(1)
    await stream.push(Chunk.text_delta("b"))
    assert seen == [0, 1]


# -- property: the runner equals applying the processors by hand ------------------------------------


class Op:
    """A stream processor that drops, upper-cases (modify) or passes text chunks containing a letter."""

    def __init__(self, index: int, kind: str, letter: str) -> None:
        self.id = f"op-{index}"
        self.kind = kind
        self.letter = letter

    def apply(self, text: str) -> str | None:
        if self.letter not in text:
            return text
        if self.kind == "drop":
            return None
        if self.kind == "modify":
            return text.replace(self.letter, self.letter.upper())
        return text

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk | None:
        out = self.apply(args.part.text or "")
        if out is None:
            return None
        return Chunk.text_delta(out) if out != args.part.text else args.part


ops = st.lists(
    st.tuples(st.sampled_from(["drop", "modify", "pass"]), st.sampled_from("abc")), min_size=0, max_size=6
)
texts = st.lists(st.text(alphabet="abcxyz", max_size=5), max_size=12)


@given(spec=ops, items=texts)
async def test_runner_output_equals_applying_by_hand(spec: list[tuple[str, str]], items: list[str]) -> None:
    """For random drop/modify/pass chains, the stream runner equals applying them in order by hand."""
    processors = [Op(i, kind, letter) for i, (kind, letter) in enumerate(spec)]
    expected: list[str] = []
    for text in items:
        current: str | None = text
        for processor in processors:
            current = processor.apply(current)
            if current is None:
                break
        if current is not None:
            expected.append(current)
    stream = StreamRunner(ProcessorPipeline.build(processors), RunContext(message_list=MessageList()))
    out = [c for text in items for c in await stream.push(Chunk.text_delta(text))]
    assert [c.text for c in out] == expected

"""Stream sessions (``open_output_stream``): plain ``process`` functions that may return an awaitable."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from procflow import Chunk, MessageList
from procflow._runner.context import RunContext
from procflow._runner.pipeline import ProcessorPipeline
from procflow._runner.stream import StreamRunner
from procflow.errors import ProcessorFailedError
from procflow.processors import ProcessorViolation, ProcessOutputStreamArgs
from procflow.testing import run_output_stream


class Deferring:
    """Upper-cases text chunks containing ``letter``; answers the others at once, without a coroutine.

    ``mode`` decides what the deferred part does: ``"upper"``, ``"split"`` (two chunks), ``"drop"``,
    ``"trip"`` (a tripwire) or ``"raise"`` (a bug).
    """

    def __init__(self, pid: str, letter: str, mode: str = "upper") -> None:
        self.id = pid
        self.letter = letter
        self.mode = mode
        self.deferred = 0
        self.flushed = 0
        self.violations: list[ProcessorViolation] = []
        self.on_violation = self.violations.append

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        raise AssertionError("the runner uses the session")

    def flush_output_stream(self, args: ProcessOutputStreamArgs) -> None:
        raise AssertionError("the runner uses the session")

    def open_output_stream(self, args: ProcessOutputStreamArgs) -> Session:
        return Session(self)


class Session:
    def __init__(self, owner: Deferring) -> None:
        self.owner = owner

    def process(self, args: ProcessOutputStreamArgs) -> Chunk | Awaitable[Any]:
        text = args.part.text or ""
        if self.owner.letter not in text:
            return args.part
        return self._later(args, text)

    async def _later(self, args: ProcessOutputStreamArgs, text: str) -> Any:
        self.owner.deferred += 1
        mode = self.owner.mode
        if mode == "trip":
            args.abort("no such letter", retry=False)
        if mode == "raise":
            raise RuntimeError("bug")
        if mode == "drop":
            return None
        upper = text.replace(self.owner.letter, self.owner.letter.upper())
        if mode == "split":
            return [Chunk.text_delta(upper[:1]), Chunk.text_delta(upper[1:])]
        return Chunk.text_delta(upper)

    def flush(self, args: ProcessOutputStreamArgs) -> list[Chunk]:
        self.owner.flushed += 1
        return [Chunk.text_delta("end")]


def _runner(processors: list[Any]) -> StreamRunner:
    return StreamRunner(ProcessorPipeline.build(processors), RunContext(message_list=MessageList()))


async def test_a_plain_session_answers_at_once_and_awaits_what_it_defers() -> None:
    """A session's plain ``process`` may return a chunk or an awaitable; the runner awaits the latter."""
    owner = Deferring("d", "a")
    out = await run_output_stream(owner, ["xyz", "abc", "bbb"])
    assert [c.text for c in out.chunks] == ["xyz", "Abc", "bbb", "end"]
    assert (owner.deferred, owner.flushed) == (1, 1)


async def test_deferred_chunks_run_through_the_rest_of_the_chain() -> None:
    """Chunks a deferred result emits (a list) go through the later processors, in order."""
    runner = _runner([Deferring("split", "a", "split"), Deferring("upper", "b")])
    out = [c.text for text in ["ab", "cb"] for c in await runner.push(Chunk.text_delta(text))]
    assert out == ["A", "B", "cB"]


async def test_a_tripwire_in_the_deferred_part_is_reported_once_and_stops_the_stream() -> None:
    """A tripwire raised while the runner awaits the deferred result is reported once and stops."""
    owner = Deferring("trip", "a", "trip")
    out = await run_output_stream(owner, ["xyz", "abc", "later"])
    assert [c.text for c in out.chunks] == ["xyz"]
    assert out.tripwire is not None and out.tripwire.processor_id == "trip"
    assert [v.message for v in owner.violations] == ["no such letter"]


async def test_an_error_in_the_deferred_part_fails_closed() -> None:
    """An exception raised in the deferred part follows the failure policy: the stream fails closed."""
    with pytest.raises(ProcessorFailedError) as caught:
        await run_output_stream(Deferring("bug", "a", "raise"), ["xyz", "abc"])
    assert (caught.value.processor_id, caught.value.error_type) == ("bug", "RuntimeError")


modes = st.sampled_from(["upper", "split", "drop"])
chains = st.lists(st.tuples(st.sampled_from("abc"), modes), max_size=4)
texts = st.lists(st.text(alphabet="abcx", min_size=1, max_size=4), max_size=10)


def _by_hand(chain: list[tuple[str, str]], text: str, start: int = 0) -> list[str]:
    for index in range(start, len(chain)):
        letter, mode = chain[index]
        if letter not in text:
            continue
        if mode == "drop":
            return []
        upper = text.replace(letter, letter.upper())
        if mode == "split":
            return [out for part in (upper[:1], upper[1:]) for out in _by_hand(chain, part, index + 1)]
        text = upper
    return [text]


@given(chain=chains, items=texts)
async def test_sessions_equal_applying_the_chain_by_hand(
    chain: list[tuple[str, str]], items: list[str]
) -> None:
    """For random chains of deferring sessions, the runner's output equals applying them by hand."""
    runner = _runner([Deferring(f"p{i}", letter, mode) for i, (letter, mode) in enumerate(chain)])
    out = [c.text for text in items for c in await runner.push(Chunk.text_delta(text))]
    assert out == [piece for text in items for piece in _by_hand(chain, text)]

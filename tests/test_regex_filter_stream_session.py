"""RegexFilter's stream session (the runner's per-chunk path) against its plain stream hooks."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from procflow import Chunk
from procflow.processors import ProcessorViolation, ProcessOutputStreamArgs, RegexFilterProcessor
from procflow.testing import run_output_stream

EMAIL = "bob@example.com"


class Direct:
    """The filter's stream hooks called as plain hooks (no ``open_output_stream``)."""

    def __init__(self, inner: RegexFilterProcessor) -> None:
        self.id = inner.id
        self.inner = inner

    @property
    def on_violation(self) -> Any:
        return self.inner.on_violation

    async def process_output_stream(self, args: ProcessOutputStreamArgs) -> Any:
        return await self.inner.process_output_stream(args)

    async def flush_output_stream(self, args: ProcessOutputStreamArgs) -> list[Chunk] | None:
        return await self.inner.flush_output_stream(args)


async def test_a_chunk_released_whole_is_passed_on_as_it_is() -> None:
    """A text chunk that is released whole comes out as the very chunk that went in (no copy)."""
    f = RegexFilterProcessor(presets=["pii"], strategy="redact")
    first, second = Chunk.text_delta("hello there "), Chunk.text_delta("general kenobi ")
    out = await run_output_stream(f, [first, second])
    assert out.chunks[0] is first and out.chunks[1] is second


async def test_a_subclass_overriding_the_stream_hook_keeps_its_override() -> None:
    """A subclass that overrides process_output_stream has its own hook called for every chunk."""
    seen: list[str] = []

    class Counting(RegexFilterProcessor):
        async def process_output_stream(self, args: ProcessOutputStreamArgs) -> Any:
            seen.append(args.part.text or "")
            return await super().process_output_stream(args)

    f = Counting(presets=["pii"], strategy="redact")
    out = await run_output_stream(f, ["mail ", EMAIL, " now"])
    assert seen == ["mail ", EMAIL, " now"]
    assert "".join(c.text or "" for c in out.chunks) == "mail [EMAIL] now"


async def test_reports_from_the_session_path_carry_chunk_offsets() -> None:
    """Redactions released by the runner's per-chunk path are reported per output chunk."""
    f = RegexFilterProcessor(presets=["pii"], strategy="redact")
    seen: list[ProcessorViolation] = []
    f.on_violation = seen.append
    out = await run_output_stream(f, [f"to {EMAIL} and {EMAIL}", " ok"])
    assert [c.text for c in out.chunks] == ["to ", "[EMAIL] and [EMAIL] ok"]
    assert [[(e["rule"], e["index"]) for e in v.detail["redactions"]] for v in seen] == [
        [("email", 0), ("email", 20)]
    ]


WORDS = [EMAIL, "+1 555 123 4567", "sk-proj-abc123DEF456ghi789JKL0", "https://x.example/a", "hi", " ", "\n"]
texts = st.lists(st.sampled_from(WORDS), max_size=8).map("".join)


def _pieces(text: str, cuts: list[int], markers: list[bool]) -> list[Chunk]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    edges = [0, *points, len(text)]
    out: list[Chunk] = []
    for index, (a, b) in enumerate(itertools.pairwise(edges)):
        if b <= a:
            continue
        if markers[index % len(markers)]:
            out += [Chunk("text-end", {"id": "0"}), Chunk("text-start", {"id": "0"})]
        if index % 3 == 2:
            out.append(Chunk("reasoning-delta", {"id": "r", "text": "555-0100"}))
        out.append(Chunk.text_delta(text[a:b]))
    return [*out, Chunk("step-finish", {}), Chunk.text_delta("tail " + EMAIL)]


async def _run(processor: Any, f: RegexFilterProcessor, chunks: list[Chunk]) -> tuple[Any, ...]:
    seen: list[ProcessorViolation] = []
    f.on_violation = seen.append
    out = await run_output_stream(processor, chunks)
    tripwire = None if out.tripwire is None else (out.tripwire.reason, out.tripwire.metadata)
    return [(c.type, c.payload) for c in out.chunks], [v.detail for v in seen], tripwire


@settings(max_examples=150, deadline=None)
@given(
    text=texts,
    cuts=st.lists(st.integers(0, 1_000), max_size=10),
    markers=st.lists(st.booleans(), min_size=1, max_size=3),
    strategy=st.sampled_from(["redact", "block", "warn"]),
    values=st.booleans(),
)
async def test_the_session_path_equals_the_plain_hooks(
    text: str, cuts: list[int], markers: list[bool], strategy: str, values: bool
) -> None:
    """For any chunking (markers, reasoning and step chunks interleaved), the runner's session path
    emits the same chunks, reports and tripwire as calling the stream hooks themselves."""
    chunks = _pieces(text, cuts, markers)
    options: dict[str, Any] = {"presets": ["pii", "secrets", "urls"], "include_redacted_values": values}
    session = RegexFilterProcessor(**options, strategy=strategy)
    plain = RegexFilterProcessor(**options, strategy=strategy)
    assert await _run(session, session, chunks) == await _run(Direct(plain), plain, chunks)

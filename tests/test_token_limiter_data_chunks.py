"""TokenLimiter with chunks inside the text (data, reasoning…): the stream keeps what the result keeps."""

from __future__ import annotations

import itertools

import pytest
import regex
from _agent_support import MODES, call
from guard_seams_support import SHAPES, listed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from procflow import (
    Agent,
    Chunk,
    DataPart,
    Message,
    MessageContent,
    ReasoningPart,
    SourcePart,
    TextPart,
    ToolInvocationPart,
)
from procflow.processors import ProcessOutputStreamArgs, RegexFilterProcessor, TiktokenCounter, TokenLimiter
from procflow.testing import ScriptedModel, ScriptedStep, run_output_result, run_output_stream

COUNTER = TiktokenCounter()
ANSWERS = {
    "en": "Unbelievably wonderful, extraordinarily marvellous weather over Oslo today.",
    "fr": "Incroyablement merveilleux : un temps extraordinaire à Paris aujourd'hui, déjà l'été.",
    "es": "Increíblemente maravilloso: ¿qué tal el tiempo extraordinario de mañana en Sevilla?",
    "zh": "难以置信的美妙天气，今天奥斯陆的阳光格外灿烂，我们明天见。",
}
LANGS = sorted(ANSWERS)


def count(text: str) -> int:
    return COUNTER.count(text)


def longest_fitting(text: str, limit: int) -> str:
    """The reference cut: the longest prefix ending between grapheme clusters that fits."""
    best = ""
    for match in regex.finditer(r"\X", text):
        if count(text[: match.end()]) <= limit:
            best = text[: match.end()]
    return best


def deltas(chunks: list[Chunk]) -> str:
    return "".join(c.text or "" for c in chunks if c.type == "text-delta")


def text_parts(message: Message) -> list[str]:
    return [p.text for p in message.content.parts if isinstance(p, TextPart)]


def note(transient: bool, n: int = 0) -> Chunk:
    return Chunk.data("data-note", {"n": n}, transient=transient)


def bpe_split(text: str) -> int:
    """The first offset at which the two halves of ``text`` count more tokens than the whole."""
    return next(n for n in range(1, len(text)) if count(text[:n]) + count(text[n:]) > count(text))


INSIDE = {
    "transient data": lambda n: note(True, n),
    "stored data": lambda n: note(False, n),
    "reasoning": lambda n: Chunk("reasoning-delta", {"id": "r", "text": f"thinking {n}"}),
    "source": lambda n: Chunk("source", {"source_id": f"s{n}", "url": f"https://example.org/{n}"}),
    "metadata": lambda n: Chunk("response-metadata", {"id": f"m{n}"}),
}
"""Chunks that interrupt a text without ending it, by the number of the gap they fall into."""


@st.composite
def interleaved(draw: st.DrawFn) -> tuple[str, list[Chunk]]:
    """An answer in one of four languages, cut anywhere, with chunks of ``INSIDE`` in any gaps."""
    text = ANSWERS[draw(st.sampled_from(LANGS))]
    cuts = sorted(draw(st.sets(st.integers(1, len(text) - 1), max_size=12)))
    pieces = [text[a:b] for a, b in itertools.pairwise([0, *cuts, len(text)])]
    gaps = draw(st.dictionaries(st.integers(0, len(pieces)), st.sampled_from(sorted(INSIDE)), max_size=4))
    chunks: list[Chunk] = []
    for index, piece in enumerate([*pieces, ""]):
        if index in gaps:
            chunks.append(INSIDE[gaps[index]](index))
        if piece:
            chunks.append(Chunk.text_delta(piece))
    return text, chunks


def stored_data(chunks: list[Chunk]) -> list[int]:
    return [c.payload["data"]["n"] for c in chunks if c.is_data and not c.transient]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=interleaved(),
    limit=st.integers(1, 40),
    shape=st.sampled_from(SHAPES),
    mode=st.sampled_from(MODES),
    then_filter=st.booleans(),
)
async def test_chunks_inside_the_text_keep_stream_and_result_equal(
    case: tuple[str, list[Chunk]], limit: int, shape: str, mode: str, then_filter: bool
) -> None:
    """Chunks inside the text anywhere, any chunking, a filter after or not: stream and result agree."""
    text, chunks = case
    after = [RegexFilterProcessor(presets=["pii"], strategy="redact")] if then_filter else []
    model = ScriptedModel([ScriptedStep(chunks=chunks)])
    processors = [*listed(shape, lambda: [TokenLimiter(limit)]), *after]
    outcome = await call(Agent(id="a", model=model, output_processors=processors), mode, "Weather?")
    expected = longest_fitting(text, limit)
    assert outcome.result.text == expected
    if mode == "stream":
        assert deltas(outcome.chunks) == expected
    (message,) = outcome.result.response.messages
    assert [p.data["n"] for p in message.content.parts if isinstance(p, DataPart)] == stored_data(chunks)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("marker", ["transient data", "metadata"])
async def test_a_chunk_that_stores_nothing_never_splits_a_text_part(
    lang: str, mode: str, marker: str
) -> None:
    """A transient data chunk or response metadata is not stored: the text stays one part (memory, UI)."""
    text = ANSWERS[lang]
    chunks = [Chunk.text_delta(text[:5]), INSIDE[marker](0), Chunk.text_delta(text[5:])]
    outcome = await call(Agent(id="a", model=ScriptedModel([ScriptedStep(chunks=chunks)])), mode, "Hi")
    (message,) = outcome.result.response.messages
    assert [p.type for p in message.content.parts] == ["text"]
    assert text_parts(message) == [text]
    assert [p.type for p in outcome.result.response.ui_messages[0].parts] == ["text"]


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("mode", MODES)
async def test_a_stored_data_chunk_keeps_its_place_in_the_text(lang: str, mode: str) -> None:
    """A non-transient data chunk is stored where it arrived, between the parts of the one text."""
    text = ANSWERS[lang]
    chunks = [Chunk.text_delta(text[:5]), note(False), Chunk.text_delta(text[5:])]
    outcome = await call(Agent(id="a", model=ScriptedModel([ScriptedStep(chunks=chunks)])), mode, "Hi")
    (message,) = outcome.result.response.messages
    assert [p.type for p in message.content.parts] == ["text", "data-note", "text"]
    assert message.text == outcome.result.text == text


class Progress:
    """After the limiter: writes a data chunk after the first text chunk it passes."""

    id = "progress"

    def __init__(self, *, transient: bool) -> None:
        self.transient = transient

    async def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        if args.part.type == "text-delta" and not args.state.get("sent"):
            args.state["sent"] = True
            assert args.writer is not None
            await args.writer.custom({"type": "data-progress", "data": {}, "transient": self.transient})
        return args.part


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("transient", [True, False])
@pytest.mark.parametrize("shape", SHAPES)
async def test_a_processor_written_data_chunk_keeps_stream_and_result_equal(
    lang: str, transient: bool, shape: str
) -> None:
    """A later processor's data chunk inside the limited text: stream, stream result and generate() agree."""
    text, limit = ANSWERS[lang], 6

    def agent() -> Agent:
        model = ScriptedModel([ScriptedStep(text=text, chunk_size=4)])
        processors = [*listed(shape, lambda: [TokenLimiter(limit)]), Progress(transient=transient)]
        return Agent(id="a", model=model, output_processors=processors)

    streamed = await call(agent(), "stream", "Hi")
    generated = await call(agent(), "generate", "Hi")
    expected = longest_fitting(text, limit)
    assert deltas(streamed.chunks) == streamed.result.text == generated.result.text == expected


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("limit", [3, 5, 8])
@pytest.mark.parametrize("mode", MODES)
async def test_the_limit_notice_passing_a_held_back_filter_keeps_stream_and_result_equal(
    lang: str, limit: int, mode: str
) -> None:
    """The limiter's own transient notice overtakes the text a later RegexFilter holds: nothing changes."""
    text = ANSWERS[lang]
    model = ScriptedModel([ScriptedStep(text=text, chunk_size=3)])
    filter_ = RegexFilterProcessor(presets=["pii"], strategy="redact")
    agent = Agent(id="a", model=model, output_processors=[TokenLimiter(limit), filter_])
    outcome = await call(agent, mode, "Hi")
    expected = longest_fitting(text, limit)
    assert outcome.result.text == expected
    assert text_parts(outcome.result.response.messages[0]) == [expected]
    if mode == "stream":
        assert deltas(outcome.chunks) == expected
        assert TokenLimiter.LIMIT_REACHED_CHUNK in [c.type for c in outcome.chunks]


@pytest.mark.parametrize("lang", LANGS)
async def test_reasoning_passing_a_held_back_filter_keeps_stream_and_result_equal(lang: str) -> None:
    """Reasoning inside the text overtakes what a later RegexFilter holds: the cut stays the same."""
    text = ANSWERS[lang]
    for cut in range(3, len(text), 9):
        thinking = Chunk("reasoning-delta", {"id": "r", "text": "let me think"})
        chunks = [Chunk.text_delta(text[:cut]), thinking, Chunk.text_delta(text[cut:])]
        for limit in range(1, count(text) + 1):
            filter_ = RegexFilterProcessor(presets=["pii"], strategy="redact")
            model = ScriptedModel([ScriptedStep(chunks=chunks)])
            agent = Agent(id="a", model=model, output_processors=[TokenLimiter(limit), filter_])
            outcome = await call(agent, "stream", "Hi")
            assert deltas(outcome.chunks) == outcome.result.text == longest_fitting(text, limit)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("mode", MODES)
async def test_abort_counts_a_text_split_by_a_stored_data_chunk_as_one(lang: str, mode: str) -> None:
    """strategy='abort' with the limit at the whole text's count: split by a data part, it still fits."""
    text = " ".join([ANSWERS[lang]] * 6)  # long: the first chunk passes at once, before the data chunk
    cut = bpe_split(text)
    chunks = [Chunk.text_delta(text[:cut]), note(False), Chunk.text_delta(text[cut:])]
    model = ScriptedModel([ScriptedStep(chunks=chunks)])
    agent = Agent(id="a", model=model, output_processors=[TokenLimiter(count(text), strategy="abort")])
    outcome = await call(agent, mode, "Hi")
    assert outcome.result.tripwire is None
    assert outcome.result.text == text


BRIDGES = {
    "data-note": DataPart(type="data-note", data={}),
    "reasoning": ReasoningPart(text="thinking"),
    "source": SourcePart(source_id="s1", url="https://example.org"),
}


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("bridge", sorted(BRIDGES))
async def test_result_counts_text_parts_around_such_parts_as_one_text(lang: str, bridge: str) -> None:
    """On the result, text parts around a data, reasoning or source part count as one; a tool call ends it."""
    text = ANSWERS[lang]
    cut = bpe_split(text)
    call_part = ToolInvocationPart(tool_call_id="c1", tool_name="look", args={})
    parts = [
        TextPart(text=text[:cut]),
        BRIDGES[bridge],
        TextPart(text=text[cut:]),
        call_part,
        TextPart(text=text),
    ]
    message = Message(role="assistant", content=MessageContent(parts=parts))
    result = await run_output_result(TokenLimiter(count(text)), [message])
    (limited,) = result.messages
    assert text_parts(limited) == [text[:cut], text[cut:]]  # the first run fits whole; nothing is left
    assert [p.type for p in limited.content.parts] == ["text", bridge, "text", "tool-invocation"]


@pytest.mark.parametrize("lang", LANGS)
async def test_text_blocks_are_runs_of_their_own_in_stream_and_result(lang: str) -> None:
    """A text block's end ends a run: two blocks (two text parts) count on their own, in stream and result."""
    text = ANSWERS[lang]
    cut = bpe_split(text)
    chunks = [
        Chunk("text-start", {"id": "a"}),
        Chunk.text_delta(text[:cut], id="a"),
        Chunk("text-end", {"id": "a"}),
        Chunk("text-start", {"id": "b"}),
        Chunk.text_delta(text[cut:], id="b"),
        Chunk("text-end", {"id": "b"}),
    ]
    blocks = Message(
        role="assistant", content=MessageContent(parts=[TextPart(text=text[:cut]), TextPart(text=text[cut:])])
    )
    for limit in range(1, count(text) + 2):
        first = longest_fitting(text[:cut], limit)
        expected = first if first != text[:cut] else first + longest_fitting(text[cut:], limit - count(first))
        streamed = await run_output_stream(TokenLimiter(limit), chunks)
        result = await run_output_result(TokenLimiter(limit), [blocks])
        assert deltas(streamed.chunks) == result.messages[0].text == expected


class SeeingLimiter(TokenLimiter):
    """A limiter that is also given the data chunks."""

    process_data_parts = True


@pytest.mark.parametrize("lang", LANGS)
async def test_a_limiter_given_data_chunks_does_not_end_the_text_run_at_one(lang: str) -> None:
    """With ``process_data_parts`` the limiter passes a data chunk and keeps counting the same text."""
    text, limit = ANSWERS[lang], 6
    chunks = [Chunk.text_delta(text[:4]), note(False), Chunk.text_delta(text[4:]), Chunk("finish")]
    streamed = await run_output_stream(SeeingLimiter(limit), chunks)
    assert deltas(streamed.chunks) == longest_fitting(text, limit)
    assert [c.type for c in streamed.chunks].count("data-note") == 1

"""TokenLimiter counts streams exactly: any chunking gives the whole text's count and the same cut."""

from __future__ import annotations

import itertools

import pytest
import regex
from _agent_support import call
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from procflow import Agent, Chunk, Message
from procflow.errors import APICallError
from procflow.processors import (
    ProcessOutputStepArgs,
    StreamErrorRetryProcessor,
    TiktokenCounter,
    TokenLimiter,
)
from procflow.processors._token_output import TOKEN_LIMIT_REACHED_CHUNK
from procflow.processors._token_stream import TextTally, truncate_to_tokens
from procflow.testing import ScriptedModel, ScriptedStep, run_output_result, run_output_stream

COUNTER = TiktokenCounter()
ENCODING = COUNTER.encoding
FRAGMENTS = [
    # English, with contractions and words BPE merges differently when cut
    " the", " blue", " sky", " unbelievable", " don't", " we'll", " they're", " I'M", " it's", "Hello",
    "HTTPServer", " 2024-05-01", " 12345678", " $3.50", "!", "?!", "...", "/path/to", "'",
    # French and Spanish
    " Ça", " été", " déjà", " naïve", " l'été", " coûte", " ¿Qué", " tal?", " mañana", " niño", " ¡Olé!",
    # Chinese, with and without punctuation
    "你好", "世界", "，", "。", "我们明天见", "订单已发货",
    # emoji and combining sequences
    "👍", "👍🏽", "👨‍👩‍👧", "🇫🇷", "🇪🇸", "e\u0301", "\u0301", "\u200d",
    # whitespace runs
    " ", "  ", "   ", "\n", "\n\n", " \n ", "\t", "\r\n", "\u00a0", "\u3000",
]  # fmt: skip
texts = st.lists(st.sampled_from(FRAGMENTS), max_size=60).map("".join)
SYMBOLS = ["1", "23", "456", " ", "  ", "\n", "👍", "🇫🇷", "!!", "...", "-", "\t", "€", "你"]
NO_LETTERS = [" ", "  ", "\n", " \n ", "\r\n", "👍", "🇫🇷", "!!", "...", "-", "\t", "€"]
symbol_runs = st.one_of(  # the second kind has no fixed boundary at all: the last-two-pieces path
    st.lists(st.sampled_from(SYMBOLS), min_size=100, max_size=300).map("".join),
    st.lists(st.sampled_from(NO_LETTERS), min_size=100, max_size=300).map("".join),
)
limits = st.integers(1, 150)  # up to well past the 64-byte slack, so chunks also pass whole


def count(text: str) -> int:
    return len(ENCODING.encode_ordinary(text))


def longest_fitting(text: str, limit: int) -> str:
    """The reference cut: the longest prefix ending between grapheme clusters that fits."""
    best = ""
    for match in regex.finditer(r"\X", text):
        if count(text[: match.end()]) <= limit:
            best = text[: match.end()]
    return best


@st.composite
def chunked(draw: st.DrawFn, source: st.SearchStrategy[str] = texts) -> tuple[str, list[str]]:
    text = draw(source)
    cuts = sorted(draw(st.sets(st.integers(0, len(text)), max_size=12)))
    bounds = [0, *cuts, len(text)]
    return text, [text[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def deltas(chunks: list[Chunk]) -> str:
    return "".join(c.text or "" for c in chunks if c.type == "text-delta")


def test_bpe_counts_do_not_add_across_chunks() -> None:
    """The issue's example: "blue " + "sky " is 4 tokens alone, 3 together, and the tally says 3."""
    assert count("blue ") + count("sky ") == 4 and count("blue sky ") == 3
    tally = TextTally(COUNTER)
    tally.push("blue ")
    tally.push("sky ")
    assert tally.total == 3


@settings(max_examples=300, deadline=None)
@given(chunked())
def test_incremental_count_equals_the_whole_text_count(case: tuple[str, list[str]]) -> None:
    """Counting chunk by chunk gives tiktoken's count of the accumulated text after every chunk."""
    _, chunks = case
    tally = TextTally(COUNTER)
    seen = ""
    for chunk in chunks:
        seen += chunk
        tally.push(chunk)
        tally.settle()  # settle on every chunk, as near the limit, to test the cut points hardest
        assert tally.total == count(seen)


@settings(max_examples=100, deadline=None)
@given(chunked(symbol_runs), st.booleans())
def test_incremental_count_without_letters(case: tuple[str, list[str]], eager: bool) -> None:
    """Long runs of digits, symbols, emoji and spaces (no fixed boundary) are counted exactly too."""
    text, chunks = case
    tally = TextTally(COUNTER)
    for chunk in chunks:
        tally.push(chunk)
        if eager:
            tally.settle()
    assert tally.total == count(text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chunked(), limits)
async def test_stream_truncate_keeps_what_the_whole_text_keeps(
    case: tuple[str, list[str]], limit: int
) -> None:
    """For any chunking the stream keeps the longest fitting prefix: what the final-result cut keeps."""
    text, chunks = case
    limiter = TokenLimiter(limit)
    expected = longest_fitting(text, limit)
    streamed = await run_output_stream(limiter, [*chunks, Chunk("finish")])
    assert deltas(streamed.chunks) == expected
    notices = [c for c in streamed.chunks if c.type == TOKEN_LIMIT_REACHED_CHUNK]
    assert len(notices) == (1 if expected != text else 0)
    if text:
        result = await run_output_result(limiter, [Message.assistant(text)])
        assert result.messages[0].text == expected


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chunked(), limits)
async def test_stream_abort_trips_exactly_when_the_whole_text_is_over(
    case: tuple[str, list[str]], limit: int
) -> None:
    """strategy='abort' trips for any chunking iff the whole text is over; text sent before fits."""
    text, chunks = case
    limiter = TokenLimiter(limit, strategy="abort")
    streamed = await run_output_stream(limiter, [*chunks, Chunk("finish")])
    assert (streamed.tripwire is not None) == (count(text) > limit)
    sent = deltas(streamed.chunks)
    assert text.startswith(sent) and count(sent) <= limit
    if text:
        result = await run_output_result(limiter, [Message.assistant(text)])
        assert (result.tripwire is not None) == (count(text) > limit)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts, limits)
def test_truncate_returns_the_longest_prefix_that_fits(text: str, limit: int) -> None:
    """truncate_to_tokens and TiktokenCounter.truncate return the longest fitting prefix, not a shorter."""
    assert truncate_to_tokens(COUNTER, text, limit) == longest_fitting(text, limit)
    head = COUNTER.truncate(text, limit)
    fitting = [n for n in range(len(text) + 1) if count(text[:n]) <= limit]
    assert len(head) == max(fitting) and text.startswith(head)


def test_the_longest_prefix_may_follow_one_that_does_not_fit() -> None:
    """A prefix can count more than a longer text; the cut then keeps the longer one."""
    text = " unbelievable"
    limit = count(text)
    shorter = [n for n in range(1, len(text)) if count(text[:n]) > limit]
    assert shorter  # BPE is not monotone here
    assert truncate_to_tokens(COUNTER, text, limit) == text


async def test_text_runs_share_the_budget_and_a_cut_drops_what_follows() -> None:
    """Each text run is counted whole; the runs share the budget; after a cut later runs are dropped."""
    first, second = " the blue sky", " and the green sea"
    limit = count(first) + 2
    chunks = [
        " the",
        " blue",
        " sky",
        Chunk("step-finish"),
        " and",
        " the",
        " green",
        " sea",
        Chunk("finish"),
    ]
    streamed = await run_output_stream(TokenLimiter(limit), chunks)
    kept = deltas(streamed.chunks)
    assert kept == first + longest_fitting(second, 2)
    assert [c.type for c in streamed.chunks][-1] == "finish"
    result = await run_output_result(
        TokenLimiter(limit), [Message.assistant(first), Message.assistant(second), Message.assistant(" more")]
    )
    assert [m.text for m in result.messages] == [first, longest_fitting(second, 2), ""]


@pytest.mark.parametrize("chunk_size", [1, 3, 8, 1000])
async def test_agent_stream_and_generate_cut_the_same_text(chunk_size: int) -> None:
    """Through an agent, stream() and generate() keep the same text, whatever the model's chunk size."""
    answer = "Résumé: the blue sky over Oslo, 你好世界，我们明天见 👨‍👩‍👧 don't we'll   see. " * 3
    limit = 25

    def agent() -> Agent:
        model = ScriptedModel([answer], chunk_size=chunk_size)
        return Agent(id="a", model=model, output_processors=[TokenLimiter(limit)])

    streamed = await call(agent(), "stream", "Forecast?")
    generated = await call(agent(), "generate", "Forecast?")
    expected = longest_fitting(answer, limit)
    assert streamed.result.text == generated.result.text == expected
    assert deltas(streamed.chunks) == expected


class NoSleep:
    """Stands in for the retry delay."""

    async def __call__(self, seconds: float) -> None:
        return None


@pytest.mark.parametrize("strategy", ["truncate", "abort"])
async def test_a_discarded_attempt_does_not_use_up_the_budget(strategy: str) -> None:
    """A stream that breaks and is retried: the retried answer gets the whole budget, as if alone."""
    answer = "Sunny in Oslo, 你好，we'll see."
    limit = count(answer) + 1
    # truncate: the broken attempt alone is over the limit; abort: it fits, but not with the answer.
    broken = "The first attempt talks at length about the weather in Oslo and Bergen " * 3
    broken = broken if strategy == "truncate" else longest_fitting(broken, limit - 2)
    assert count(broken) + count(answer) > limit
    model = ScriptedModel([ScriptedStep(text=broken, error=APICallError("connection reset by peer")), answer])
    agent = Agent(
        id="a",
        model=model,
        output_processors=[TokenLimiter(limit, strategy=strategy)],  # type: ignore[arg-type]
        error_processors=[StreamErrorRetryProcessor(sleep=NoSleep())],
    )
    outcome = await call(agent, "stream", "Weather?")
    assert outcome.result.tripwire is None
    assert outcome.result.text == answer


class RejectFirst:
    """Rejects the first step once, asking for a retry."""

    id = "reject-first"

    def process_output_step(self, args: ProcessOutputStepArgs) -> None:
        if args.retry_count == 0:
            args.abort("try again, more briefly", retry=True)


async def test_a_rejected_step_does_not_use_up_the_budget() -> None:
    """A step an output processor rejects is discarded with its budget; the retry is cut as if alone."""
    first = "A long first answer about the weather in Oslo and Bergen, with many details " * 2
    answer = "Sunny in Oslo, 你好，we'll see, and more words after the limit."
    limit = 10
    model = ScriptedModel([first, answer])
    agent = Agent(
        id="a", model=model, output_processors=[TokenLimiter(limit), RejectFirst()], max_processor_retries=1
    )
    outcome = await call(agent, "stream", "Weather?")
    assert outcome.result.tripwire is None
    assert outcome.result.text == longest_fitting(answer, limit)

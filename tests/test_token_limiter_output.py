"""TokenLimiter on the output side: capping streamed text and the final result."""

from __future__ import annotations

import regex

from procflow import Chunk, Message, MessageContent, TextPart, ToolInvocationPart
from procflow.processors import TiktokenCounter, TokenLimiter
from procflow.processors._token_output import TOKEN_LIMIT_REACHED_CHUNK
from procflow.testing import run_output_result, run_output_stream

COUNTER = TiktokenCounter()


def deltas(chunks: list[Chunk]) -> list[str]:
    return [c.text or "" for c in chunks if c.type == "text-delta"]


def limit_chunks(chunks: list[Chunk]) -> list[Chunk]:
    return [c for c in chunks if c.type == TOKEN_LIMIT_REACHED_CHUNK]


async def test_stream_far_from_the_limit_passes_unchanged() -> None:
    """Text far under the limit streams through untouched, chunk for chunk."""
    chunks = [Chunk.text_delta("Hello"), Chunk.text_delta(" world"), Chunk("finish")]
    outcome = await run_output_stream(TokenLimiter(100), chunks)
    assert outcome.chunks == chunks
    assert limit_chunks(outcome.chunks) == []


async def test_stream_near_the_limit_holds_back_only_until_decided() -> None:
    """Near the limit the last cluster waits for the next chunk; the text run's end releases it all."""
    chunks = [Chunk.text_delta("Hello"), Chunk.text_delta(" world"), Chunk("finish")]
    outcome = await run_output_stream(TokenLimiter(10), chunks)
    assert deltas(outcome.chunks) == ["Hell", "o worl", "d"]
    assert [c.type for c in outcome.chunks][-1] == "finish"
    assert limit_chunks(outcome.chunks) == []


async def test_cumulative_truncate_drops_text_past_the_limit() -> None:
    """Past the limit text is dropped, non-text chunks still pass, and one transient notice is emitted."""
    words = [f" word{i}" for i in range(10)]
    chunks = [Chunk.text_delta(w) for w in words] + [
        Chunk("step-finish"),
        Chunk.text_delta(" late"),
        Chunk("finish"),
    ]
    outcome = await run_output_stream(TokenLimiter(5), chunks)
    sent = deltas(outcome.chunks)
    assert "".join(words).startswith("".join(sent))
    assert sum(COUNTER.count(t) for t in sent) <= 5
    assert " late" not in sent
    notices = limit_chunks(outcome.chunks)
    assert len(notices) == 1
    assert notices[0].transient is True
    assert notices[0].payload["data"]["limit"] == 5
    assert [c.type for c in outcome.chunks][-2:] == ["step-finish", "finish"]


async def test_the_chunk_crossing_the_limit_is_cut_between_characters() -> None:
    """A chunk that crosses the limit keeps the part that fits, never half a character."""
    text = "Grüße 👨‍👩‍👧 aus 東京, e\u0301t\u00e9!"
    for limit in range(1, COUNTER.count(text)):
        outcome = await run_output_stream(TokenLimiter(limit), [Chunk.text_delta(text)])
        head = "".join(deltas(outcome.chunks))
        assert text.startswith(head)
        assert COUNTER.count(head) <= limit
        assert any(m.end() == len(head) for m in regex.finditer(r"\X", text)) or head == ""
        assert len(limit_chunks(outcome.chunks)) == 1


async def test_abort_strategy_raises_a_tripwire_at_the_limit() -> None:
    """strategy='abort' stops the stream with a non-retryable tripwire; earlier chunks were emitted."""
    chunks = [Chunk.text_delta(f" word{i}") for i in range(10)]
    outcome = await run_output_stream(TokenLimiter(4, strategy="abort"), chunks)
    assert outcome.tripwire is not None
    assert outcome.tripwire.retry is False
    assert outcome.tripwire.processor_id == "token-limiter"
    assert outcome.tripwire.metadata["limit"] == 4
    assert 0 < len(deltas(outcome.chunks)) < 10
    assert limit_chunks(outcome.chunks) == []


async def test_part_mode_counts_each_chunk_on_its_own() -> None:
    """count_mode='part' lets any number of small chunks through and cuts only an oversized one."""
    small = [Chunk.text_delta(" short") for _ in range(20)]
    big = Chunk.text_delta(" one two three four five six seven eight")
    outcome = await run_output_stream(TokenLimiter(3, count_mode="part"), [*small, big, *small])
    sent = deltas(outcome.chunks)
    assert sent.count(" short") == 40
    assert " one two three" in sent
    assert len(limit_chunks(outcome.chunks)) == 1


async def test_part_mode_abort_trips_on_an_oversized_chunk() -> None:
    """count_mode='part' with strategy='abort' trips on the first chunk over the limit."""
    chunks = [Chunk.text_delta(" fine"), Chunk.text_delta(" this chunk is far too long to pass")]
    outcome = await run_output_stream(TokenLimiter(3, count_mode="part", strategy="abort"), chunks)
    assert outcome.tripwire is not None
    assert deltas(outcome.chunks) == [" fine"]


async def test_limit_counting_lasts_for_the_whole_request() -> None:
    """The cumulative count is per request: the same state continues, a fresh state starts over."""
    processor = TokenLimiter(3)
    state: dict[str, object] = {}
    first = await run_output_stream(processor, [" a", " b", " c"], state=state)
    second = await run_output_stream(processor, [" d"], state=state)
    fresh = await run_output_stream(processor, [" d"])
    assert "".join(deltas(first.chunks)) == " a b c"
    assert deltas(second.chunks) == []
    assert "".join(deltas(fresh.chunks)) == " d"


async def test_result_text_is_truncated_between_characters() -> None:
    """The final assistant text is cut to the limit at a character boundary; the fallback too."""
    text = "Résumé: 東京 is big 👍🏽 and Oslo is small, " * 5
    message = Message(role="assistant", content=MessageContent(parts=[TextPart(text=text)], content=text))
    outcome = await run_output_result(TokenLimiter(12), [message])
    (result,) = outcome.messages
    assert text.startswith(result.text)
    assert COUNTER.count(result.text) <= 12 < COUNTER.count(text)
    assert result.content.content == result.text
    assert any(m.end() == len(result.text) for m in regex.finditer(r"\X", text))


async def test_result_cumulative_budget_spans_messages_and_keeps_tool_parts() -> None:
    """Cumulative mode shares the budget across text parts; tool parts are kept, used-up text removed."""
    call = ToolInvocationPart(tool_call_id="c1", tool_name="t", state="result", result="ok")
    first = Message(role="assistant", content=MessageContent(parts=[TextPart(text="one two three"), call]))
    second = Message.assistant("four five six seven")
    outcome = await run_output_result(TokenLimiter(3), [first, second])
    new_first, new_second = outcome.messages
    assert new_first is first
    assert new_second.text == ""
    assert new_second.content.parts == []


async def test_result_part_mode_limits_each_text_part() -> None:
    """count_mode='part' cuts each text part to the limit on its own."""
    message = Message(
        role="assistant",
        content=MessageContent(parts=[TextPart(text="a b c d e f"), TextPart(text="g h i j k l")]),
    )
    outcome = await run_output_result(TokenLimiter(2, count_mode="part"), [message])
    parts = outcome.messages[0].content.parts
    assert [p.text for p in parts if isinstance(p, TextPart)] == ["a b", "g h"]


async def test_result_within_limit_keeps_message_identity() -> None:
    """A result under the limit is left as the very same message objects."""
    message = Message.assistant("short answer")
    outcome = await run_output_result(TokenLimiter(50), [message])
    assert outcome.messages[0] is message


async def test_result_abort_strategy_trips() -> None:
    """strategy='abort' raises a tripwire for a final result over the limit."""
    outcome = await run_output_result(TokenLimiter(3, strategy="abort"), ["this answer is much too long"])
    assert outcome.tripwire is not None
    assert outcome.tripwire.metadata == {"limit": 3, "tokens": 6, "count_mode": "cumulative"}

"""TokenLimiter on the input side: trimming the provider prompt to the budget before each model call."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procflow import (
    FilePart,
    Message,
    MessageContent,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolInvocationPart,
    tool,
)
from procflow._messages import Prompt, StepResult
from procflow.errors import ConfigurationError
from procflow.models import PromptToolCall, PromptToolResult
from procflow.processors import TiktokenCounter, TokenLimiter
from procflow.testing import run_llm_request


class Words:
    """Counts whitespace-separated words, so budgets in these tests are easy to compute by hand."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def count(self, text: str) -> int:
        self.seen.append(text)
        return len(text.split())


def limiter(limit: int, **options: Any) -> TokenLimiter:
    """A limiter where a message costs 1 (its role) plus its words."""
    return TokenLimiter(limit, counter=Words(), message_overhead=0, prompt_overhead=0, **options)


def exchange(call_id: str, *, result: str = "sunny and warm", text: str | None = None) -> Message:
    """An assistant message with one completed tool call (prompt: assistant call + tool result)."""
    parts: list[Any] = [TextPart(text=text)] if text else []
    parts.append(
        ToolInvocationPart(
            tool_call_id=call_id, tool_name="weather", args={"city": "Oslo"}, state="result", result=result
        )
    )
    return Message(role="assistant", content=MessageContent(parts=parts))


def texts(prompt: Prompt | None) -> list[str]:
    assert prompt is not None
    return [m.text for m in prompt if m.text]


def call_ids(prompt: Prompt | None) -> tuple[set[str], set[str]]:
    assert prompt is not None
    calls = {p.tool_call_id for m in prompt for p in m.content if isinstance(p, PromptToolCall)}
    results = {p.tool_call_id for m in prompt for p in m.content if isinstance(p, PromptToolResult)}
    return calls, results


HISTORY = [
    Message.user("one two three"),
    Message.assistant("four five six"),
    Message.user("seven eight nine"),
    Message.assistant("ten eleven twelve"),
]


async def test_prompt_within_limit_is_sent_unchanged() -> None:
    """Under the limit nothing is dropped and the hook leaves the prompt alone."""
    outcome = await run_llm_request(limiter(100), ["what now"], history=HISTORY, system_messages=["be brief"])
    assert outcome.tripwire is None
    assert texts(outcome.prompt) == [
        "be brief",
        "one two three",
        "four five six",
        "seven eight nine",
        "ten eleven twelve",
        "what now",
    ]
    assert outcome.state["last_trim"] == {"tokens_before": 22, "tokens_after": 22, "dropped_messages": 0}


async def test_oldest_messages_are_dropped_first_and_system_kept() -> None:
    """Over the limit the oldest history goes first; system messages always stay."""
    outcome = await run_llm_request(limiter(14), ["what now"], history=HISTORY, system_messages=["be brief"])
    assert texts(outcome.prompt) == ["be brief", "seven eight nine", "ten eleven twelve", "what now"]
    assert outcome.state["last_trim"] == {"tokens_before": 22, "tokens_after": 14, "dropped_messages": 2}


async def test_trimming_leaves_the_stored_conversation_alone() -> None:
    """Trimming is a transient prompt rewrite: the message list keeps every message."""
    outcome = await run_llm_request(limiter(6), ["what now"], history=HISTORY)
    assert texts(outcome.prompt) == ["what now"]
    assert [m.text for m in outcome.message_list.all] == [m.text for m in HISTORY] + ["what now"]


async def test_tool_call_and_result_stay_together_at_every_limit() -> None:
    """At any limit a history tool call is sent with its result or not at all."""
    history = [Message.user("check the weather please"), exchange("call_1", text="let me look"), *HISTORY]
    kept_pair = dropped_pair = False
    for limit in range(4, 40):
        outcome = await run_llm_request(limiter(limit), ["and tomorrow"], history=history)
        if outcome.tripwire is not None:
            continue
        calls, results = call_ids(outcome.prompt)
        assert calls == results
        kept_pair |= calls == {"call_1"}
        dropped_pair |= not calls
    assert kept_pair and dropped_pair


async def test_current_run_tool_exchange_survives_trimming() -> None:
    """This run's tool call and result, and the question that started the run, are never dropped."""
    outcome = await run_llm_request(
        limiter(16),
        ["what is the weather in Oslo"],
        history=HISTORY,
        response=[exchange("call_now", text="checking")],
        steps=[StepResult(0, tool_calls=[ToolCall("call_now", "weather", {"city": "Oslo"})])],
    )
    assert outcome.tripwire is None
    assert call_ids(outcome.prompt) == ({"call_now"}, {"call_now"})
    assert texts(outcome.prompt) == ["what is the weather in Oslo", "checking"]


async def test_history_tool_exchange_is_dropped_where_a_current_one_is_kept() -> None:
    """The same exchange in older history is trimmed like any other old message."""
    outcome = await run_llm_request(
        limiter(11),
        ["what is the weather in Oslo"],
        history=[*HISTORY, exchange("call_old", text="checking")],
    )
    assert call_ids(outcome.prompt) == (set(), set())
    assert texts(outcome.prompt) == ["ten eleven twelve", "what is the weather in Oslo"]


async def test_best_fit_keeps_an_older_message_that_still_fits() -> None:
    """best-fit skips a message too big for the room left and keeps looking at older ones."""
    history = [Message.user("tiny"), Message.assistant("a b c d e f g h i j k l"), Message.user("small one")]
    outcome = await run_llm_request(limiter(9, trim_mode="best-fit"), ["now"], history=history)
    assert texts(outcome.prompt) == ["tiny", "small one", "now"]


async def test_contiguous_stops_at_the_first_message_that_does_not_fit() -> None:
    """contiguous keeps a gap-free recent window: nothing older than a dropped message."""
    history = [Message.user("tiny"), Message.assistant("a b c d e f g h i j k l"), Message.user("small one")]
    outcome = await run_llm_request(limiter(9, trim_mode="contiguous"), ["now"], history=history)
    assert texts(outcome.prompt) == ["small one", "now"]


async def test_system_messages_alone_over_the_limit_trip_without_retry() -> None:
    """When the system messages alone exceed the limit, a clear non-retryable tripwire stops the call."""
    outcome = await run_llm_request(limiter(5), ["hi"], system_messages=["you are a very careful assistant"])
    assert outcome.tripwire is not None
    assert outcome.tripwire.retry is False
    assert outcome.tripwire.processor_id == "token-limiter"
    assert "system messages" in outcome.tripwire.reason
    assert outcome.tripwire.metadata["cause"] == "system-over-limit"


async def test_nothing_fitting_trips_without_retry() -> None:
    """When even the newest message does not fit beside the system messages, the call is stopped."""
    outcome = await run_llm_request(
        limiter(6), ["please summarise this long request"], system_messages=["short"]
    )
    assert outcome.tripwire is not None
    assert outcome.tripwire.retry is False
    assert outcome.tripwire.metadata["cause"] == "nothing-fits"
    assert outcome.tripwire.metadata["required_tokens"] == 8


async def test_tool_definitions_count_against_the_limit() -> None:
    """The tools offered to the model take room, unless count_tools=False."""

    @tool
    def weather(city: str) -> str:
        """Return the weather forecast for a city."""
        return "sunny"

    tools = {"weather": weather}
    counted = await run_llm_request(limiter(20), ["now"], history=HISTORY, tools=tools)
    ignored = await run_llm_request(limiter(20, count_tools=False), ["now"], history=HISTORY, tools=tools)
    assert len(texts(counted.prompt)) < len(texts(ignored.prompt)) == 5


async def test_counts_are_cached_within_a_request() -> None:
    """A second model call of the same request counts only texts it has not seen."""
    counter = Words()
    processor = TokenLimiter(10, counter=counter)
    state: dict[str, Any] = {}
    await run_llm_request(processor, ["what now"], history=HISTORY, state=state)
    first = len(counter.seen)
    await run_llm_request(processor, ["what now"], history=HISTORY, state=state)
    assert len(counter.seen) == first
    await run_llm_request(processor, ["something new"], history=HISTORY, state=state)
    assert counter.seen[first:] == ["something new"]


async def test_a_long_first_prompt_is_counted_off_the_event_loop() -> None:
    """The first call with a long history counts in a worker thread; a short prompt counts inline."""

    class ThreadRecorder(Words):
        def __init__(self) -> None:
            super().__init__()
            self.threads: set[str] = set()

        def count(self, text: str) -> int:
            self.threads.add(threading.current_thread().name)
            return super().count(text)

    long_history = [Message.user(f"note {i}") for i in range(300)]
    long_counter, short_counter = ThreadRecorder(), ThreadRecorder()
    await run_llm_request(TokenLimiter(50, counter=long_counter), ["now"], history=long_history)
    await run_llm_request(TokenLimiter(50, counter=short_counter), ["now"], history=HISTORY)
    main = threading.main_thread().name
    assert main not in long_counter.threads
    assert short_counter.threads == {main}


async def test_counts_are_exact_tiktoken_integers() -> None:
    """tokens_before is the sum of exact o200k_base counts plus the documented framing."""
    counter = TiktokenCounter()
    outcome = await run_llm_request(TokenLimiter(10_000), ["Grüße, 你好!"], history=HISTORY)
    messages = [*HISTORY, Message.user("Grüße, 你好!")]
    expected = 3 + sum(3 + counter.count(m.role) + counter.count(m.text) for m in messages)
    assert outcome.state["last_trim"]["tokens_before"] == expected


async def test_framing_files_and_reasoning_are_counted_as_configured() -> None:
    """Per-message and per-prompt framing, file parts and replayed reasoning all count."""
    picture = Message(
        role="user",
        content=MessageContent(
            parts=[TextPart(text="look at this"), FilePart(media_type="image/png", url="x")]
        ),
    )
    thought = Message(
        role="assistant",
        content=MessageContent(parts=[ReasoningPart(text="hmm let me think"), TextPart(text="ok")]),
    )
    processor = TokenLimiter(
        1000, counter=Words(), message_overhead=5, prompt_overhead=7, file_tokens=100, count_tools=False
    )
    outcome = await run_llm_request(processor, [picture], history=[thought])
    assistant_cost = 5 + 1 + 4 + 1
    user_cost = 5 + 1 + 3 + 100
    assert outcome.state["last_trim"]["tokens_before"] == 7 + assistant_cost + user_cost


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": True}, "limit"),
        ({"limit": 10, "strategy": "drop"}, "strategy"),
        ({"limit": 10, "count_mode": "all"}, "count_mode"),
        ({"limit": 10, "trim_mode": "oldest"}, "trim_mode"),
        ({"limit": 10, "message_overhead": -1}, "message_overhead"),
        ({"limit": 10, "counter": object()}, "count"),
    ],
)
def test_bad_options_are_rejected(options: dict[str, Any], match: str) -> None:
    """Invalid options raise ConfigurationError naming the option."""
    with pytest.raises(ConfigurationError, match=match):
        TokenLimiter(**options)


def test_id_can_be_changed() -> None:
    """Two limiters can sit in one pipeline under different ids."""
    assert TokenLimiter(10).id == "token-limiter"
    assert TokenLimiter(10, id="short-limit").id == "short-limit"


_message = st.one_of(
    st.builds(lambda n: Message.user(" ".join(["u"] * n)), st.integers(1, 8)),
    st.builds(lambda n: Message.assistant(" ".join(["a"] * n)), st.integers(1, 8)),
    st.builds(lambda n: exchange(f"call_{n}", result=" ".join(["r"] * (n % 7 + 1))), st.integers(0, 10_000)),
)


@settings(max_examples=150, deadline=None)
@given(
    history=st.lists(_message, max_size=12, unique_by=lambda m: m.id),
    limit=st.integers(1, 60),
    mode=st.sampled_from(["best-fit", "contiguous"]),
)
async def test_trimmed_prompt_invariants(history: list[Message], limit: int, mode: Any) -> None:
    """Any history at any limit: within budget, system first, order kept, pairs whole, newest kept."""
    outcome = await run_llm_request(
        limiter(limit, trim_mode=mode), ["the question"], history=history, system_messages=["sys"]
    )
    if outcome.tripwire is not None:
        assert outcome.tripwire.retry is False
        return
    prompt = outcome.prompt
    assert prompt is not None
    assert outcome.state["last_trim"]["tokens_after"] <= limit
    assert prompt[0].text == "sys"
    assert prompt[-1].text == "the question"
    remaining = iter(outcome.message_list.to_prompt())
    assert all(any(kept == m for m in remaining) for kept in prompt)
    calls, results = call_ids(prompt)
    assert calls == results

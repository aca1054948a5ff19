"""TokenLimiter's final-result cut skips tokenising texts whose UTF-8 length fits, and cuts the same."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from procflow import Message, MessageContent, TextPart
from procflow.processors import TiktokenCounter, TokenLimiter
from procflow.processors._token_stream import truncate_to_tokens
from procflow.testing import run_output_result

COUNTER = TiktokenCounter()
FRAGMENTS = [
    " the",
    " unbelievable",
    " don't",
    "Hello",
    " 2024",
    " été",
    "你好",
    "。",
    "👍🏽",
    "e\u0301",
    "  ",
    "\n",
]
texts = st.lists(st.sampled_from(FRAGMENTS), max_size=25).map("".join)
# Each message: one or two text parts, sometimes with the flattened fallback mirroring them.
messages = st.lists(st.tuples(st.lists(texts, min_size=1, max_size=2), st.booleans()), min_size=1, max_size=4)


class SpyEncoding:
    """o200k_base, counting how often it is asked to encode."""

    name = "o200k_base"

    def __init__(self) -> None:
        self.inner = COUNTER.encoding
        self._pat_str = self.inner._pat_str
        self.calls = 0

    def encode_ordinary(self, text: str) -> list[int]:
        self.calls += 1
        return self.inner.encode_ordinary(text)


def reference(
    spec: list[tuple[list[str], bool]], limit: int, mode: str
) -> list[tuple[list[str], str | None]]:
    """The cut with every text counted: texts take the shared budget in order; a cut text ends it."""
    room = limit
    out: list[tuple[list[str], str | None]] = []
    for parts, with_fallback in spec:
        start = room
        heads: list[str] = []
        for text in parts:
            budget = room if mode == "cumulative" else limit
            head = truncate_to_tokens(COUNTER, text, budget)
            if mode == "cumulative":
                room = budget - COUNTER.count(head) if head == text else 0
            if head or head == text:
                heads.append(head)
        fallback = "".join(parts) if with_fallback else None
        if fallback:  # it mirrors the text parts: measured against the budget the message started with
            fallback = truncate_to_tokens(COUNTER, fallback, start if mode == "cumulative" else limit)
        out.append((heads, fallback))
    return out


def build(spec: list[tuple[list[str], bool]]) -> list[Message]:
    out = []
    for parts, fallback in spec:
        content = MessageContent(
            parts=[TextPart(text=t) for t in parts], content="".join(parts) if fallback else None
        )
        out.append(Message(role="assistant", content=content))
    return out


def kept(messages: list[Message]) -> list[tuple[list[str], str | None]]:
    return [
        ([p.text for p in m.content.parts if isinstance(p, TextPart)], m.content.content) for m in messages
    ]


async def test_result_far_under_the_limit_is_not_tokenised() -> None:
    """Texts whose UTF-8 length fits the budget are kept without a single count."""
    spy = SpyEncoding()
    answer = [Message.assistant("Your parcel ships today."), Message.assistant("Anything else? 👍")]
    outcome = await run_output_result(TokenLimiter(100, counter=TiktokenCounter(spy)), answer)  # type: ignore[arg-type]
    assert outcome.messages == answer
    assert spy.calls == 0


async def test_result_near_the_limit_counts_and_still_cuts() -> None:
    """Once the bytes may not fit, the texts are counted and the cut is exact."""
    spy = SpyEncoding()
    limiter = TokenLimiter(4, counter=TiktokenCounter(spy))  # type: ignore[arg-type]
    outcome = await run_output_result(limiter, ["one two three four five six"])
    assert outcome.messages[0].text == "one two three four"
    assert spy.calls > 0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=messages, limit=st.integers(1, 60), mode=st.sampled_from(["cumulative", "part"]))
async def test_result_cut_equals_the_exactly_counted_cut(
    spec: list[tuple[list[str], bool]], limit: int, mode: str
) -> None:
    """Any texts and limit: the byte shortcut keeps exactly what counting every text keeps."""
    outcome = await run_output_result(TokenLimiter(limit, count_mode=mode), build(spec))  # type: ignore[arg-type]
    assert kept(outcome.messages) == reference(spec, limit, mode)

"""The output result: its text and the response's text part that repeats it are searched once, with
the same outcome as before for every strategy."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from procflow._messages import OutputResult
from procflow.processors import ProcessorViolation, RegexFilterProcessor, RegexRule
from procflow.testing import run_output_result

TEXT = "order ORD-123456 and ORD-654321 shipped"


def _counting_rule(calls: list[str]) -> RegexRule:
    def validate(value: str) -> bool:
        calls.append(value)
        return True

    return RegexRule("order", r"ORD-\d{6}", replacement="[ORDER]", validate=validate)


async def test_result_text_repeated_by_the_response_is_searched_once() -> None:
    """When the result text is the response's text, each candidate is checked once, and both the
    result text and the message are redacted, with one report for the message."""
    calls: list[str] = []
    f = RegexFilterProcessor(rules=[_counting_rule(calls)], strategy="redact")
    seen: list[ProcessorViolation] = []
    f.on_violation = seen.append
    result = OutputResult(text=TEXT, finish_reason="stop")
    out = await run_output_result(f, [TEXT], result=result)
    assert calls == ["ORD-123456", "ORD-654321"]
    assert out.text == result.text == "order [ORDER] and [ORDER] shipped"
    assert [len(v.detail["redactions"]) for v in seen] == [2]


@pytest.mark.parametrize("strategy", ["block", "warn"])
async def test_block_and_warn_see_the_repeated_result_text_once_per_match(strategy: str) -> None:
    """``block`` trips on the message's matches (with its message id) and ``warn`` passes the text
    unchanged, each candidate checked once."""
    calls: list[str] = []
    f = RegexFilterProcessor(rules=[_counting_rule(calls)], strategy=strategy)  # type: ignore[arg-type]
    out = await run_output_result(f, [TEXT], result=OutputResult(text=TEXT, finish_reason="stop"))
    assert calls == ["ORD-123456", "ORD-654321"]
    if strategy == "block":
        assert out.tripwire is not None
        assert [m["index"] for m in out.tripwire.metadata["matches"]] == [6, 21]
        assert all("message_id" in m for m in out.tripwire.metadata["matches"])
    else:
        assert out.tripwire is None
        assert out.text == TEXT


async def test_a_different_result_text_is_searched_on_its_own() -> None:
    """A result text that differs from the message is searched, and redacted, on its own."""
    calls: list[str] = []
    f = RegexFilterProcessor(rules=[_counting_rule(calls)], strategy="redact")
    result = OutputResult(text="see ORD-111111", finish_reason="stop")
    out = await run_output_result(f, [TEXT], result=result)
    assert sorted(calls) == ["ORD-111111", "ORD-123456", "ORD-654321"]
    assert result.text == "see [ORDER]"
    assert out.text == "order [ORDER] and [ORDER] shipped"


_PIECES = [
    "Sorry about that!",
    "call me at +1 555 123 4567",
    "my card is 4111 1111 1111 1111",
    "bob@example.com",
    "it takes 3-5 days",
    "version 4.2",
    "sk-proj-abc123DEF456ghi789JKL0",
    "123-45-",
    "6789",
    "Bearer",
    " abc123xyz9",
    "06 12 34",
    "56 78",
    "\n",
    "",
]
_responses = st.lists(st.lists(st.sampled_from(_PIECES), max_size=4).map(" ".join), min_size=1, max_size=4)


@settings(
    max_examples=int(os.environ.get("REGEX_FILTER_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(texts=_responses, joined=st.booleans())
async def test_response_messages_redact_as_alone_whatever_the_result_text(
    texts: list[str], joined: bool
) -> None:
    """Each response message is redacted exactly as on its own, whether the result text is the
    messages joined (a text with no needle vouches for the texts inside it) or another text."""
    f = RegexFilterProcessor(presets=["pii", "secrets"], strategy="redact")
    seen: list[ProcessorViolation] = []
    f.on_violation = seen.append
    result_text = "\n".join(texts) if joined else "no needle here"
    result = OutputResult(text=result_text, finish_reason="stop")
    out = await run_output_result(f, texts, result=result)
    assert [m.text for m in out.messages] == [f.redact(t) for t in texts]
    assert result.text == f.redact(result_text)
    assert len(seen) == sum(f.redact(t) != t for t in texts)

"""The stream's cheap tests: the needle prefilter and the last-word finder never release a needle early."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from procflow.processors import RegexFilterProcessor
from procflow.processors._regex_filter.presets import _AWS_TAILS, _SEPARATORS, DIGIT_CHAIN, first_trigger
from procflow.processors._regex_filter.stream import _BREAK, _last_word

_AT_START = re.compile(
    r"[@=：_:\-sxgp是+(0-9eASBb]"
    r"(?:(?<=[@=：_:])|(?<=-)-|(?<=s)k-|(?<=x)(?:app-|ox)|(?<=g)lpat-|(?<=p)ypi-"
    r"|(?<=是)(?:[!-~]|\Z)|(?<=\+)(?:[0-9]|\Z)|(?<=\()(?:[0-9+]|\Z)"
    rf"|(?<=[0-9])(?:{_SEPARATORS}[0-9]){{6}}|(?<=[0-9])(?:{_SEPARATORS}[0-9]){{0,5}}{_SEPARATORS}\Z"
    rf"|(?<=e)yJ|(?<=A)(?:Iza|{_AWS_TAILS})|(?<=S)G\.|(?<=[Bb])(?:[Ee][Aa][Rr][Ee][Rr]|[Aa][Ss][Ii][Cc]))"
)
"""The reference: every possible needle found at its first character (the prefilter's former form,
which stopped at every ``e``, ``s``, ``p`` and ``g`` of prose)."""

_PIECES = [
    "sk-", "sk", "k-", "xapp-", "xox", "glpat-", "pypi-", "eyJ", "ey", "AIza", "AKIA", "ASIA", "SG.",
    "bearer", "Basic", "@", "=", ":", "：", "是", "是a", "+3", "(0", "--", "-", "_", "4111", " 1111",
    "555 0134", "212.555", "e", "s", "p", "g", "x", "A", "B", "J", "G", ".", " ", "\n", "\t", "\u00a0",
    "é", "ñ", "ç", "电话", "。", "，", "\u02ea", "ᄀ", "word", "Ünïcode", "price", "passé",
]  # fmt: skip

texts = st.lists(st.sampled_from(_PIECES), max_size=14).map("".join)


@settings(max_examples=400, deadline=None)
@given(texts, st.integers(min_value=0, max_value=40))
def test_the_prefilter_never_lets_a_release_pass_a_needle(text: str, low: int) -> None:
    """Wherever the reference finds a needle, the prefilter finds one too, at most inside the same word:
    the release point computed from it never passes the needle's start."""
    low = min(low, len(text))
    exact = _AT_START.search(text, low)
    found = first_trigger(text, low)
    if exact is None:
        return
    assert found >= low
    assert _last_word(text, low, found) <= exact.start()


@settings(max_examples=400, deadline=None)
@given(texts, st.integers(min_value=0, max_value=40))
def test_the_last_word_is_where_the_last_break_is(text: str, low: int) -> None:
    """The shortcuts for ASCII and accented Latin words give what the break search alone gives."""
    low = min(low, len(text))
    found = _BREAK.search(text, low, len(text))
    assert _last_word(text, low) == (low if found is None else found.end())


_NUMBER_PIECES = [
    "0",
    "1",
    "4",
    "5",
    "9",
    "12",
    "555",
    " ",
    ".",
    "-",
    "/",
    ")",
    "  ",
    "tel",
    "SSN",
    "card",
    "电话",
    "\n",
]

_PII = RegexFilterProcessor(presets=["pii"], strategy="redact")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_NUMBER_PIECES), max_size=16).map("".join))
def test_a_text_without_seven_chained_digits_has_no_number_redacted(text: str) -> None:
    """What lets the number rules share one finer test: none of them redacts a number of fewer digits."""
    if re.search(DIGIT_CHAIN, text) is None:
        assert _PII.redact(text) == text

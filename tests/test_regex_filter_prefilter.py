"""The stream's cheap tests: the needle prefilter and the last-word finder never release a needle early;
the searches narrowed for the stream's sake find what they found before."""

from __future__ import annotations

import re

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from procflow.processors import RegexFilterProcessor
from procflow.processors._regex_filter.match import _CONTEXT_REACH
from procflow.processors._regex_filter.presets import _AWS_TAILS, _SEPARATORS, DIGIT_CHAIN, first_trigger
from procflow.processors._regex_filter.secrets import (
    _AWS_SECRET_NAME_WORDS,
    _KEY_NAMES,
    _NAME_END,
    _PASSWORD_NAMES,
    _SECRET_NAMES,
    _VALUE,
    KEY_NAME_BEFORE,
    SECRETS,
)
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
    "token", "password", "密码", "://", "/", "'",
]  # fmt: skip

texts = st.lists(st.sampled_from(_PIECES), max_size=14).map("".join)


@settings(max_examples=1500, deadline=None)
@given(texts, st.integers(min_value=0, max_value=40))
def test_the_prefilter_never_lets_a_release_pass_a_needle(text: str, low: int) -> None:
    """Wherever the reference finds a needle, the prefilter finds one too, at most inside the same word:
    the release point computed from it never passes the needle's start."""
    low = min(low, len(text))
    exact = _first_needle(text, low)
    found = first_trigger(text, low)
    if exact is None:
        return
    assert found >= low
    assert _last_word(text, low, found) <= exact.start()


def _first_needle(text: str, low: int) -> re.Match[str] | None:
    """The reference's first needle, an operator counting only after a key name or as a URL's ``:``."""
    while (exact := _AT_START.search(text, low)) is not None:
        at = exact.start()
        if text[at] not in ":=：是" or KEY_NAME_BEFORE.match(text, at) or text.startswith("://", at):
            return exact
        if "://".startswith(text[at:]):
            return exact  # ``:`` or ``:/`` at the end: a URL may be in progress
        low = at + 1
    return None


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


_ASSIGNMENT_PIECES = [
    "api_key", "API key", "token", "secret", "password", "DB_PASSWORD", "pass", "bypass", "mot de passe",
    "contraseña", "clé API", "clave api", "密码", "令牌", "年费", "Note", "09", "45", '"', "'", " ", "  ",
    "\t", ":", "=", ":=", "=>", "：", "是", "hunter2", "sk_live_qwertyuiopasdfghjklzxcvb", "********",
    "${DB_PASSWORD}", "Ab3dEf6hIj9k", ".", ",", "\n", "é", "x",
]  # fmt: skip

_AS_BEFORE = regex.compile(
    r"[:=：是](?:(?<=:)=|(?<==)>)?[ \t]{0,3}[\"']?(?P<value>" + _VALUE + r"++(?:={1,3}+(?!" + _VALUE + r"))?)"
)
"""The reference: the ``key = value`` search before its look-behind, every operator a candidate."""
_GATE = regex.compile(
    "(?r)(?i:"
    + "|".join((_KEY_NAMES, _SECRET_NAMES, _PASSWORD_NAMES, _AWS_SECRET_NAME_WORDS))
    + ")"
    + _NAME_END
)
"""The check that rejected those candidates afterwards: a key name of any reading right before it."""


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_ASSIGNMENT_PIECES), max_size=14).map("".join))
def test_the_assignment_search_finds_exactly_the_candidates_its_gate_accepts(text: str) -> None:
    """The look-behind for a key name drops just the operators the former gate rejected, so the
    matches left are the same spans as before and no accepted candidate is lost."""
    rule = SECRETS[0]
    expected = [
        match.span()
        for match in _overlapping(_AS_BEFORE, text)
        if _GATE.search(text, max(0, match.start() - _CONTEXT_REACH), match.start()) is not None
    ]
    assert [match.span() for match in _overlapping(regex.compile(rule.pattern), text)] == expected


def _overlapping(pattern: regex.Pattern[str], text: str) -> list[regex.Match[str]]:
    found, pos = [], 0
    while (match := pattern.search(text, pos)) is not None:
        found.append(match)
        pos = match.start() + 1
    return found


def test_an_operator_in_prose_does_not_hold_the_stream_back() -> None:
    """A colon or equals sign after no key name (a time, ``Note:``, ``年费是``) is released with
    the chunk that brings it instead of waiting for the value that might follow."""
    guard = RegexFilterProcessor(presets=["secrets"], strategy="redact")
    for text in ("Note: the deploy ran at 09:45 and ", "年费是389元，按年收费 ", "Nota: a las 09:45 y "):
        redactor = guard.stream_redactor()
        assert redactor.feed(text) == text

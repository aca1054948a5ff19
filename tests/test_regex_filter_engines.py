"""Built-in patterns that run on the stdlib engine find exactly what the ``regex`` package finds.

RegexFilter compiles a built-in pattern with ``re`` when both engines read it alike (it is faster);
this checks that promise on the interpreter running the tests — it caught the stdlib's possessive
quantifier bug of Python < 3.11.5, where phone numbers went unfound.
"""

from __future__ import annotations

import re

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from procflow.processors import RegexFilterProcessor

_GUARD = RegexFilterProcessor(presets=["pii", "secrets", "urls"])
_STDLIB_RULES = [rule for rule in _GUARD._rules if isinstance(rule.rx, re.Pattern)]

_PIECES = st.sampled_from(
    [
        "0",
        "1",
        "4",
        "5",
        "9",
        "06",
        "212",
        "555",
        "0147",
        "+",
        "+33",
        "+44 20",
        "(",
        ")",
        "-",
        ".",
        " ",
        "  ",
        "/",
        ",",
        "ou le ",
        "or ",
        "call ",
        "tel ",
        "电话",
        "号码",
        "。",
        "，",
        "a",
        "Z",
        "_",
        "é",
        "sk-",
        "sk_live_",
        "AKIA",
        "eyJ",
        ".eyJ",
        "hf_",
        "ghp_",
        "xox",
        "=",
        ":",
        "key",
        "4111",
        "5555",
    ]
)


def _spans(pattern: re.Pattern[str] | regex.Pattern[str], text: str) -> list[tuple[int, int]]:
    return [match.span() for match in pattern.finditer(text)]


def test_some_built_in_patterns_run_on_the_stdlib_engine() -> None:
    """The check below has something to check: phone, card, key, JWT and AWS patterns use ``re``."""
    assert {rule.name for rule in _STDLIB_RULES} >= {"ssn", "aws-key"}


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, min_size=1, max_size=30).map("".join))
def test_stdlib_compiled_presets_match_like_the_regex_package(text: str) -> None:
    """For any text made of phone, card and key fragments in four scripts, both engines agree."""
    for rule in _STDLIB_RULES:
        twin = regex.compile(rule.rx.pattern)
        assert _spans(rule.rx, text) == _spans(twin, text), rule.name

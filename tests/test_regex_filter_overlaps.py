"""Overlapping matches merge into one region; replacement references and their literal fallback."""

from __future__ import annotations

from procflow.processors import ProcessorViolation, RegexFilterProcessor, RegexRule
from procflow.testing import run_input


def _redact(*rules: RegexRule, text: str) -> str:
    return RegexFilterProcessor(rules=list(rules), strategy="redact").redact(text)


def test_overlapping_matches_merge_and_use_the_longest_replacement() -> None:
    """Strictly overlapping matches of different rules become one region, replaced once by the
    replacement of the longest match."""
    short = RegexRule("short", r"BC", replacement="<short>")
    long = RegexRule("long", r"ABCD", replacement="<long>")
    assert _redact(short, long, text="xABCDy") == "x<long>y"


def test_touching_matches_stay_apart() -> None:
    """Matches that only touch are replaced separately."""
    a = RegexRule("a", r"AB", replacement="<a>")
    b = RegexRule("b", r"CD", replacement="<b>")
    assert _redact(a, b, text="ABCD") == "<a><b>"


def test_chains_of_overlaps_form_one_region() -> None:
    """A overlapping B overlapping C is one region spanning all three."""
    a = RegexRule("a", r"abc", replacement="<a>")
    b = RegexRule("b", r"cde", replacement="<b>")
    c = RegexRule("c", r"efghi", replacement="<c>")
    assert _redact(a, b, c, text="-abcdefghi-") == "-<c>-"


def test_a_tie_goes_to_the_earlier_match() -> None:
    """Equally long overlapping matches: the earlier one's replacement wins."""
    first = RegexRule("first", r"abc", replacement="<1>")
    second = RegexRule("second", r"bcd", replacement="<2>")
    assert _redact(second, first, text="abcd") == "<1>"


def test_builtin_and_custom_rules_overlap() -> None:
    """A custom rule overlapping a preset match merges with it like any other rule; the longer match's
    replacement wins, and on an equal-length tie the preset's (presets are ordered first)."""
    rule = RegexRule("long-digits", r"\d{16}", replacement="<digits>")
    f = RegexFilterProcessor(rules=[rule], presets=["pii"], strategy="redact")
    assert f.redact("pay 4111111111111111 now") == "pay [CREDIT_CARD] now"
    longer = RegexRule("pay-digits", r"pay \d{16}", replacement="<digits>")
    f = RegexFilterProcessor(rules=[longer], presets=["pii"], strategy="redact")
    assert f.redact("pay 4111111111111111 now") == "<digits> now"


def test_whole_match_and_group_references() -> None:
    """``$&`` is the whole match, ``$1`` a group, ``$<name>`` a named group, ``$$`` a dollar sign."""
    rule = RegexRule("acct", r"(?P<bank>[A-Z]{2})-(\d{4})", replacement="$<bank>-****($1, $$, $&)")
    assert _redact(rule, text="id FR-1234.") == "id FR-****(FR, $, FR-1234)."


def test_two_digit_references_and_missing_groups() -> None:
    """``$10`` means group 1 then ``0`` when there is no group 10; a group that did not take part is empty."""
    rule = RegexRule("opt", r"(a)(b)?", replacement="[$10|$2]")
    assert _redact(rule, text="a") == "[a0|]"


def test_context_anchored_rules_insert_the_replacement_as_is() -> None:
    """A rule that needs its context (a look-behind) cannot match the text alone: the replacement is
    inserted literally, references included, and the text is still redacted."""
    rule = RegexRule("pin", r"(?<=PIN )(\d{4})", replacement="#$1")
    assert _redact(rule, text="PIN 1234") == "PIN #$1"


def test_merged_regions_insert_the_replacement_as_is() -> None:
    """In a merged region references are not resolved."""
    a = RegexRule("a", r"x(\d+)y", replacement="<$1>")
    b = RegexRule("b", r"y\d", replacement="<b>")
    assert _redact(a, b, text="x12y3") == "<$1>"


async def test_report_lists_overlapping_rules() -> None:
    """A merged region's report entry names its rules in ``overlapping_rules``; a lone match's does not."""
    seen: list[ProcessorViolation] = []
    rules = [
        RegexRule("card", r"\d{16}", replacement="[C]"),
        RegexRule("tail", r"\d{4}\b", replacement="[T]"),
    ]
    f = RegexFilterProcessor(rules=rules, strategy="redact")
    f.on_violation = seen.append
    out = await run_input(f, ["pay 4111111111111111 or 9876"])
    assert out.text == "pay [C] or [T]"
    assert seen[0].detail["redactions"] == [
        {
            "rule": "card",
            "index": 4,
            "length": 16,
            "replacement": "[C]",
            "overlapping_rules": ["card", "tail"],
        },
        {"rule": "tail", "index": 24, "length": 4, "replacement": "[T]"},
    ]

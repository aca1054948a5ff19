"""What a built-in pattern is made of, and the character classes and checks the presets share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from procflow.processors._regex_filter.phones import CJK, CJK_PUNCT, W

__all__ = [
    "CJK",
    "CJK_PUNCT",
    "DIGITS",
    "PARTIAL",
    "PresetPattern",
    "SuffixChars",
    "Trimmer",
    "Validator",
    "W",
    "is_placeholder",
    "token_ok",
    "trim_dots",
]

Validator = Callable[[str], bool]
Trimmer = Callable[[str, int, int], int]


@dataclass(frozen=True, slots=True)
class PresetPattern:
    """One built-in pattern.

    Attributes:
        rule: Public rule name shown in reports (several patterns may share one).
        pattern: Source for the ``regex`` package.
        replacement: Default replacement.
        group: Name of the group to redact instead of the whole match (``key = value`` forms keep the key).
        validate: Check on the redacted text; a candidate failing it is not a match.
        trim: Moves the end of a candidate back (URLs drop trailing punctuation).
        context: A pattern the text right before the match must end with (checked in Python: the
            ``regex`` package's partial matching is unreliable with variable-length look-behinds).
        needles: Strings one of which every match contains (``"0-9"``: any ASCII digit; a ``"(?i)"``
            prefix: any case). A stream skips the pattern while none is pending; a match in progress
            that holds no needle yet lies within the last word, which the stream always holds back.
        needle_re: A finer test, run once a needle is present: a pattern every complete match contains.
        max_hold: The longest match; a stream holds back at most this much for the pattern.
        tail: How a stream finds where a match of this pattern may still be in progress: ``None`` when
            such a match never contains whitespace (it lies within the last word, always held back),
            ``"partial"`` for the ``regex`` package's partial matching, :class:`SuffixChars`, or a
            pattern that matches — anchored at the end of the text — a suffix holding every such match.
        variants: Other readings of the same match, tried first (their ``pattern`` is unused): one
            search serves several rules that share a shape, such as the ``key = value`` forms.
    """

    rule: str
    pattern: str
    replacement: str
    group: str | None = None
    validate: Validator | None = None
    trim: Trimmer | None = None
    context: str | None = None
    needles: tuple[str, ...] = ()
    needle_re: str | None = None
    max_hold: int = 128
    tail: str | SuffixChars | None = None
    variants: tuple[PresetPattern, ...] = ()


DIGITS = "0-9"
"""Needle standing for "any ASCII digit"."""

PARTIAL = "partial"
"""``tail`` value: find matches in progress with partial matching."""


@dataclass(frozen=True, slots=True)
class SuffixChars:
    """``tail`` value: every match in progress lies in the longest suffix made of these characters."""

    chars: str


def token_ok(text: str) -> bool:
    """A credential: it mixes letters and digits (real keys do; prose and placeholders rarely)."""
    return any(ch.isdigit() for ch in text) and any(ch.isalpha() for ch in text)


def trim_dots(text: str, start: int, end: int) -> int:
    """Drop trailing full stops (a token at the end of a sentence)."""
    while end > start and text[end - 1] == ".":
        end -= 1
    return end


_PLACEHOLDER_WORDS = (
    "your",
    "here",
    "example",
    "placeholder",
    "changeme",
    "change_me",
    "redacted",
    "dummy",
    "xxxx",
    "****",
    "....",
    "<",
    "${",
    "{{",
    "%(",
    "$(",
)
_PLACEHOLDER_START = frozenset("<[{$%*•")


def is_placeholder(value: str) -> bool:
    """A stand-in, not a credential: ``********``, ``<password>``, ``${VAR}``, ``$VAR``, ``{{ x }}``,
    ``YOUR_PASSWORD``, ``[API_KEY]`` (already redacted), ``xxxx``, ``…EXAMPLE``, an env-var name."""
    if not value or value[0] in _PLACEHOLDER_START or len(set(value)) <= 2:
        return True
    low = value.lower()
    if any(word in low for word in _PLACEHOLDER_WORDS):
        return True
    return value.isupper() and "_" in value and not any(ch.isdigit() for ch in value)

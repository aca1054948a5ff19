"""Rules as the filter matches them: custom rules, compiled rules, replacement templates, needles."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import regex

from procflow.errors import ConfigurationError
from procflow.processors._regex_filter.presets import (
    DIGITS,
    PARTIAL,
    PresetPattern,
    SuffixChars,
    first_trigger,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "CompiledRule",
    "NeedleIndex",
    "RegexRule",
    "Template",
    "compile_preset",
    "compile_rule",
    "expand",
]

DEFAULT_TIMEOUT = 1.0
"""Seconds one search of a custom rule may take before :class:`PatternTimeoutError` is raised."""

PRESET_HORIZON = 8
"""Characters past a built-in match the engine may read before the match is final (see presets)."""

_FLAG_MASK = regex.IGNORECASE | regex.MULTILINE | regex.DOTALL | regex.VERBOSE | regex.ASCII | regex.UNICODE
_ASCII_DIGIT = re.compile(r"[0-9]")
_REFERENCE = re.compile(r"\$(?:(\$)|(&)|([0-9]{1,2})|<([A-Za-z_][A-Za-z0-9_]*)>)")


@dataclass(frozen=True, slots=True)
class RegexRule:
    """A custom rule: a name, a pattern and the text that replaces what it matches.

    Attributes:
        name: Shown in reports, tripwire metadata and logs.
        pattern: A string (compiled with the ``regex`` package), or a compiled ``re``/``regex`` pattern
            (re-compiled with ``regex``, same flags).
        replacement: Text that replaces a match under the ``redact`` strategy (default
            ``"[REDACTED]"``). ``$&`` inserts the whole match, ``$1``…``$99`` a numbered group,
            ``$<name>`` a named group and ``$$`` a dollar sign; references are resolved only when the
            pattern also matches the redacted text alone, otherwise the replacement is inserted as is.
        timeout: Seconds one search may take (``None`` for no limit); a search that runs longer raises
            :class:`~procflow.errors.PatternTimeoutError` instead of hanging.
        validate: Optional check on the matched text; a candidate it rejects is not a match.
    """

    name: str
    pattern: str | re.Pattern[str] | Any
    replacement: str | None = field(default=None, kw_only=True)
    timeout: float | None = field(default=DEFAULT_TIMEOUT, kw_only=True)
    validate: Callable[[str], bool] | None = field(default=None, kw_only=True)


Template = tuple[str | int | tuple[str], ...]
"""A parsed replacement: literal strings, group numbers (0 = whole match) and ``(group_name,)``."""


@dataclass(slots=True, eq=False)
class CompiledRule:
    """A rule ready for matching (built-in patterns and custom rules alike)."""

    name: str
    rx: Any
    replacement: str
    template: Template | None
    order: int
    group: str | None = None
    validate: Callable[[str], bool] | None = None
    trim: Callable[[str, int, int], int] | None = None
    context: Any = None
    timeout: float | None = None
    horizon: int | None = None
    needles: tuple[str, ...] = ()
    needle_re: Any = None
    max_hold: int = 0
    tail: Any = None
    partial_tail: bool = False
    variants: tuple[CompiledRule, ...] = ()
    quick: bool = False
    """A built-in pattern whose matches in progress are found by its tail (or the last word): a
    stream may skip it after one plain search that finds nothing."""

    @property
    def custom(self) -> bool:
        """A user's rule: no needles, searched with partial matching everywhere."""
        return not self.needles


def _parse_template(name: str, replacement: str, rx: Any) -> Template | None:
    if "$" not in replacement:
        return None
    parts: list[str | int | tuple[str]] = []
    last = 0
    for ref in _REFERENCE.finditer(replacement):
        parts.append(replacement[last : ref.start()])
        last = ref.end()
        dollar, whole, number, group_name = ref.groups()
        if dollar:
            parts.append("$")
        elif whole:
            parts.append(0)
        elif number:
            parts.extend(_number_ref(name, number, rx.groups))
        elif group_name not in rx.groupindex:
            raise ConfigurationError(
                f"rule {name!r}: replacement refers to $<{group_name}> but the pattern has no group of "
                f"that name (groups: {sorted(rx.groupindex) or 'none'}); name it with (?P<{group_name}>…)"
            )
        else:
            parts.append((group_name,))
    parts.append(replacement[last:])
    return tuple(p for p in parts if p != "")


def _number_ref(name: str, number: str, groups: int) -> list[str | int]:
    if int(number) <= groups and int(number) > 0:
        return [int(number)]
    if len(number) == 2 and 0 < int(number[0]) <= groups:
        return [int(number[0]), number[1]]
    if number == "0":
        return ["$0"]
    raise ConfigurationError(
        f"rule {name!r}: replacement refers to ${number} but the pattern has {groups} group(s); "
        "use $& for the whole match or write $$ for a literal dollar sign"
    )


def expand(template: Template, match: Any) -> str:
    out: list[str] = []
    for part in template:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, int):
            out.append(match.group(part) or "")
        else:
            out.append(match.group(part[0]) or "")
    return "".join(out)


def _compile_pattern(name: str, pattern: Any) -> Any:
    if isinstance(pattern, str):
        source, flags = pattern, 0
    elif isinstance(pattern, re.Pattern) or (hasattr(pattern, "pattern") and hasattr(pattern, "flags")):
        source, flags = pattern.pattern, pattern.flags & _FLAG_MASK
    else:
        raise ConfigurationError(
            f"rule {name!r}: pattern must be a string or a compiled pattern, not {type(pattern).__name__}"
        )
    if not isinstance(source, str):
        raise ConfigurationError(f"rule {name!r}: pattern must match text (str), not bytes")
    try:
        return regex.compile(source, flags)
    except (regex.error, ValueError, TypeError) as exc:
        raise ConfigurationError(f"rule {name!r}: invalid pattern {source!r}: {exc}") from exc


def compile_rule(rule: RegexRule, order: int) -> CompiledRule:
    """Validate and compile a custom rule; raise :class:`ConfigurationError` saying what to fix."""
    if not isinstance(rule.name, str) or not rule.name:
        raise ConfigurationError(f"every rule needs a non-empty string name, got {rule.name!r}")
    replacement = "[REDACTED]" if rule.replacement is None else rule.replacement
    if not isinstance(replacement, str):
        raise ConfigurationError(f"rule {rule.name!r}: replacement must be a string")
    timeout = rule.timeout
    if timeout is not None and (isinstance(timeout, bool) or not timeout > 0):
        raise ConfigurationError(f"rule {rule.name!r}: timeout must be a positive number of seconds or None")
    if rule.validate is not None and not callable(rule.validate):
        raise ConfigurationError(f"rule {rule.name!r}: validate must be a callable taking the matched text")
    rx = _compile_pattern(rule.name, rule.pattern)
    return CompiledRule(
        name=rule.name,
        rx=rx,
        replacement=replacement,
        template=_parse_template(rule.name, replacement, rx),
        order=order,
        validate=rule.validate,
        timeout=float(timeout) if timeout is not None else None,
    )


_TAILS: dict[str, Any] = {}
_SHARED: dict[str, Any] = {}


def _shared(source: str) -> Any:
    """A needle pattern, compiled once; with the stdlib engine (cheaper per call) when its classes
    are ASCII-only, so that both engines read it alike."""
    compiled = _SHARED.get(source)
    if compiled is None:
        ascii_only = source.isascii() and not regex.search(r"\\[sSwWdDbB]", source)
        compiled = _SHARED[source] = (re if ascii_only else regex).compile(source)
    return compiled


def _tail_pattern(source: str) -> Any:
    compiled = _TAILS.get(source)
    if compiled is None:
        compiled = _TAILS[source] = regex.compile(f"(?r)(?:{source})\\Z")
    return compiled


_ENGINE_SENSITIVE = regex.compile(r"\\[A-SV-Zabcdeghijklmopqswyz]|\(\?[a-zA-Z]*[aiLufVrwx]|\(\?\||\[\[:")
"""What the two engines may read differently: escapes other than ``\\t \\n \\r \\f \\v \\x \\u
\\U`` (shorthand and property classes), case folding and other flags, branch reset, POSIX classes.
Variable-width look-behinds, which only the ``regex`` package has, fail to compile with ``re``."""


_POSSESSIVE = regex.compile(r"[*+?}]\+|\(\?>")
"""Possessive quantifiers and atomic groups (and, conservatively, ``\\++``)."""

_STDLIB_POSSESSIVE_OK = sys.version_info >= (3, 11, 5)
"""The stdlib engine matched possessive quantifiers wrongly before 3.11.5 (CPython gh-100061 and
gh-106052: a possessive repeat of a group that backtracks, or next to a look-ahead): on older 3.11
releases the phone and card patterns missed numbers, so those patterns stay on ``regex`` there."""


def _preset_pattern(source: str, partial: bool) -> Any:
    """A built-in pattern, compiled with the stdlib engine when it reads it exactly as the ``regex``
    package does (explicit classes and literals, fixed-width look-behinds, no flags) and no partial
    matching is needed: its searches cost a half to a third as much."""
    stdlib_reads_it = not _ENGINE_SENSITIVE.search(source) and (
        _STDLIB_POSSESSIVE_OK or not _POSSESSIVE.search(source)
    )
    if not partial and stdlib_reads_it:
        try:
            return re.compile(source)
        except re.error:
            pass
    return regex.compile(source)


def compile_preset(preset: PresetPattern, order: int) -> CompiledRule:
    """Compile one built-in pattern."""
    tail = preset.tail
    suffix: Any = None
    if isinstance(tail, SuffixChars):
        suffix = tail.chars
    elif tail is not None and tail != PARTIAL:
        suffix = _tail_pattern(tail)
    return CompiledRule(
        name=preset.rule,
        rx=_preset_pattern(preset.pattern, preset.tail == PARTIAL),
        replacement=preset.replacement,
        template=None,
        order=order,
        group=preset.group,
        validate=preset.validate,
        trim=preset.trim,
        context=regex.compile("(?r)" + preset.context) if preset.context else None,
        horizon=PRESET_HORIZON,
        needles=preset.needles,
        needle_re=_shared(preset.needle_re) if preset.needle_re else None,
        max_hold=preset.max_hold,
        tail=suffix,
        partial_tail=preset.tail == PARTIAL,
        variants=tuple(_variant(v, order) for v in preset.variants),
        quick=preset.tail != PARTIAL,
    )


def _variant(preset: PresetPattern, order: int) -> CompiledRule:
    return CompiledRule(
        name=preset.rule,
        rx=None,
        replacement=preset.replacement,
        template=None,
        order=order,
        group=preset.group,
        validate=preset.validate,
        trim=preset.trim,
        context=regex.compile("(?r)" + preset.context) if preset.context else None,
    )


def _gate(needle: str) -> str:
    """The character of ``needle`` least likely in prose: checked first, before the whole needle."""
    return min(needle, key=lambda ch: (ch.islower(), ch.isalpha(), ch.isdigit()))


class NeedleIndex:
    """Picks what to run on a text: rules with a needle in it (and rules without needles), and the
    tails (see :class:`PresetPattern`) of rules with a needle in it.

    Rule sets are bit masks over the rules, and the answer for each mask is computed once.
    """

    __slots__ = (
        "_always",
        "_by_mask",
        "_checks",
        "_fine",
        "_folded",
        "_gates",
        "_rules",
        "_tails",
        "prefilter",
    )

    def __init__(self, rules: tuple[CompiledRule, ...]) -> None:
        self._rules = rules
        self._always = 0
        by_needle: dict[str, int] = {}
        fine: dict[int, tuple[Any, int]] = {}
        for index, rule in enumerate(rules):
            bit = 1 << index
            if not rule.needles:
                self._always |= bit
            for needle in rule.needles:
                by_needle[needle] = by_needle.get(needle, 0) | bit
            if rule.needle_re is not None:
                check, bits = fine.get(id(rule.needle_re), (rule.needle_re, 0))
                fine[id(rule.needle_re)] = (check, bits | bit)
        self._fine = list(fine.values())
        gates: dict[str, list[tuple[str, int]]] = {}
        self._checks: list[tuple[Any, int]] = []
        self._folded: list[tuple[str, int]] = []
        for needle, bits in by_needle.items():
            if needle == DIGITS:
                self._checks.append((_ASCII_DIGIT, bits))
            elif needle.startswith("(?i)"):
                self._folded.append((needle[4:].lower(), bits))
            else:
                gates.setdefault(_gate(needle), []).append((needle, bits))
        self._gates = list(gates.items())
        tails: dict[int, tuple[Any, int, int]] = {}
        for index, rule in enumerate(rules):
            if rule.tail is not None:
                tail, reach, bits = tails.get(id(rule.tail), (rule.tail, 0, 0))
                tails[id(rule.tail)] = (tail, max(reach, rule.max_hold), bits | 1 << index)
        self._tails = list(tails.values())
        self._by_mask: dict[int, tuple[list[CompiledRule], list[tuple[Any, int]]]] = {}
        self.prefilter: Callable[[str, int], int] | None = (
            first_trigger if rules and not self._always else None
        )
        """Where the first possible needle of a text is (``-1``: none; see ``presets.first_trigger``);
        ``None`` with custom rules: those may match anything."""

    def present(self, needle: str, text: str, pos: int = 0) -> bool:
        """Whether ``needle`` occurs in ``text[pos:]``."""
        if needle == DIGITS:
            return _ASCII_DIGIT.search(text, pos) is not None
        if needle.startswith("(?i)"):
            return needle[4:].lower() in text[pos:].lower()
        return text.find(needle, pos) >= 0

    def select(self, text: str, pos: int = 0) -> tuple[list[CompiledRule], list[tuple[Any, int]]]:
        """The rules to run on ``text[pos:]`` (in rule order) and the tails to check: ``(tail, reach)``."""
        pending = text[pos:] if pos else text
        mask = 0
        for gate, needles in self._gates:
            if gate in pending:
                for needle, bits in needles:
                    if needle in pending:
                        mask |= bits
        for check, bits in self._checks:
            if check.search(pending) is not None:
                mask |= bits
        if self._folded:
            lowered = pending.lower()
            for folded, bits in self._folded:
                if folded in lowered:
                    mask |= bits
        tails_mask = mask
        for check, bits in self._fine:
            if mask & bits and check.search(pending) is None:
                mask &= ~bits
        key = (mask | self._always) << len(self._rules) | tails_mask
        entry = self._by_mask.get(key)
        if entry is None:
            if len(self._by_mask) > 4096:
                self._by_mask.clear()
            chosen = mask | self._always
            entry = self._by_mask[key] = (
                [rule for index, rule in enumerate(self._rules) if chosen >> index & 1],
                [(tail, reach) for tail, reach, bits in self._tails if tails_mask & bits],
            )
        return entry

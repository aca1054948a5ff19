"""Incremental matching over a stream of text: release what is final, hold back what may still match.

The scanner keeps the text not yet released, plus some context before it for look-behinds. With every
piece it runs the rules whose needles occur in the pending text, each from where its whole-text search
would go on, and releases everything up to the first position where a match may still be in progress —
never through a region of merged matches. Where a match may be in progress comes from partial matching
(custom rules), the built-in patterns' tails, and the last word (a built-in match in progress with none
of its needles yet lies within it). Pending text the presets' prefilter finds no needle in is released
up to its last word without running any rule.

A match in progress is held back whole, however long, up to the hold limit; past it the stream fails
closed (:class:`~procflow.errors.StreamHoldLimitError`) rather than release the start of a secret. While
a long match is in progress the rules run again only each time the held text has grown by half, so the
cost of a match stays linear in its length. A custom rule's *complete* match that more text could still
extend is held for at most the window (``stream_carryover_size``), then accepted as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import regex

from procflow.errors import StreamHoldLimitError
from procflow.processors._regex_filter.match import (
    Hit,
    OpenScan,
    Region,
    accept_pending,
    merge_hits,
    new_hit,
    scan_final,
    scan_open,
)
from procflow.processors._regex_filter.presets import CJK, CJK_PUNCT
from procflow.processors._regex_filter.rules import CompiledRule, NeedleIndex

__all__ = ["DEFAULT_HOLD_LIMIT", "RegexStreamRedactor", "Release", "StreamScanner"]

_TOKEN_REACH = 65
"""The longest start of a built-in match that holds none of its needles (an email's local part)."""

_SCAN_AFTER = 48
"""Text from the word of the first possible needle is scanned once this many characters are pending
(the text before that word is released at once): dense text is not scanned with every small chunk."""

_RECHECK = 64
"""Held text up to this length is searched again with every piece; longer, once it grew by half (at
256, a secret streamed one character per chunk cost 2.4-3.6x the no-filter stream, at 64 about 1.9x;
the price is that text after a long match may wait for half its length before it is released)."""

DEFAULT_HOLD_LIMIT = 65_536
"""Characters a stream may hold back for one possible match before it fails closed."""


@dataclass(slots=True)
class Release:
    """Text a scan lets go of.

    Attributes:
        start: Offset of ``text`` in the whole stream text.
        text: The original text released.
        regions: The regions to replace, with offsets relative to ``text``.
    """

    start: int
    text: str
    regions: list[Region]


class StreamScanner:
    """Matches the rules incrementally over text pushed piece by piece."""

    __slots__ = (
        "_context",
        "_max_anchor",
        "_needles",
        "_prefilter",
        "_rules",
        "_tail",
        "_window",
        "base",
        "buf",
        "due",
        "emit",
        "extra",
        "limit",
        "parts",
        "resume",
    )

    def __init__(
        self,
        rules: Sequence[CompiledRule],
        *,
        window: int,
        needles: NeedleIndex | None = None,
        limit: int = DEFAULT_HOLD_LIMIT,
    ) -> None:
        self._rules = tuple(rules)
        self._needles = needles if needles is not None else NeedleIndex(self._rules)
        self._prefilter = self._needles.prefilter
        self._tail = any(rule.needles for rule in self._rules)
        self._window = window
        self._context = max(window, 64)
        self._max_anchor = {rule.order: max(8 * max(window, rule.max_hold), 4096) for rule in self._rules}
        self.buf = ""
        self.base = 0
        self.emit = 0
        self.due = 0
        self.parts: list[str] = []
        self.extra = 0
        self.limit = limit
        self.resume: dict[int, int] = {}

    @property
    def pending(self) -> int:
        """Characters pushed but not released yet."""
        return self.base + len(self.buf) + self.extra - self.emit

    @property
    def end(self) -> int:
        """Characters pushed so far."""
        return self.base + len(self.buf) + self.extra

    def _join(self) -> None:
        """Append the pieces pushed while a long match was waiting (joined once, not per piece)."""
        if self.parts:
            self.buf += "".join(self.parts)
            self.parts = []
            self.extra = 0

    def feed(self, text: str) -> Release | None:
        """Append ``text``; return what it settles (``None`` when nothing is released).

        Text the prefilter proves free of any needle is released up to its last word without running
        a rule. A long match in progress is searched again only once the held text has grown by half
        since the last search, so that its cost stays linear in its length.

        Raises:
            StreamHoldLimitError: A possible match held back would grow past ``limit`` characters.
        """
        if self.due:
            self.parts.append(text)
            self.extra += len(text)
            end = self.base + len(self.buf) + self.extra
            if end < self.due and end - self.emit <= self.limit:
                return None
            return self._scan_capped(end)
        buf = self.buf = self.buf + text
        base = self.base
        end = base + len(buf)
        emit = self.emit - base
        prefilter = self._prefilter
        if prefilter is None or self.resume:
            return self._scan_capped(end)
        first = prefilter(buf, emit)
        if first < 0:
            cut = _last_word(buf, max(emit, len(buf) - _TOKEN_REACH))
        elif len(buf) - first >= _SCAN_AFTER:
            return self._scan_capped(end)
        else:
            cut = _last_word(buf, emit, first)
        if cut <= emit:
            return None
        self.emit = base + cut
        if emit > 4 * self._context:
            self._trim()
        return Release(base + emit, buf[emit:cut], [])

    def _scan_capped(self, end: int) -> Release:
        release = self.scan(final=False)
        held = end - self.emit
        if held > self.limit:
            raise StreamHoldLimitError(self.limit)
        self.due = end + held // 2 if held > _RECHECK else 0
        return release

    def _trim(self) -> None:
        """Drop context no rule can look at any more."""
        keep = self.emit - self._context
        if self.resume:
            keep = min(keep, *self.resume.values())
        drop = keep - self.base
        if drop > 0:
            self.buf = self.buf[drop:]
            self.base += drop

    def scan(self, *, final: bool) -> Release:
        """Release what is settled (everything when ``final``: the text has ended)."""
        self._join()
        self._trim()
        buf, base = self.buf, self.base
        n = len(buf)
        emit = self.emit - base
        hits: list[Hit] = []
        anchors: dict[int, int] = {}
        hold = n
        rules, tails = self._needles.select(buf, emit)
        resume = self.resume
        if resume:
            behind = [r for r in self._rules if r.order in resume and resume[r.order] < base + emit]
            if behind:
                rules = sorted({*rules, *behind}, key=_order)
        token_reach = _TOKEN_REACH
        for rule in rules:
            at = resume.get(rule.order) if resume else None
            start = emit if at is None else at - base
            if final:
                hits.extend(scan_final(rule, buf, start))
                continue
            first = None
            if rule.quick:
                first = rule.rx.search(buf, start, n)
                if first is None:
                    if rule.tail is None:
                        token_reach = max(token_reach, rule.max_hold)
                    continue
            found = scan_open(rule, buf, start, self._window, self._needles, first)
            hits.extend(found.hits)
            if found.hold is not None:
                hold = min(hold, self._hold(rule, buf, found, hits, anchors))
            if rule.tail is None and not rule.custom and not rule.partial_tail:
                token_reach = max(token_reach, rule.max_hold)
        if not final:
            for tail, reach in tails:
                if type(tail) is str:
                    hold = min(hold, max(len(buf.rstrip(tail)), emit, n - reach))
                    continue
                match = tail.search(buf, max(emit, n - reach))
                if match is not None:
                    hold = min(hold, match.start())
            if self._tail:
                hold = min(hold, _last_word(buf, max(emit, n - token_reach)))
        if not hits:
            cut = n if final else max(hold, emit)
            self._resume(anchors, [], base, cut)
            self.emit = base + cut
            return Release(base + emit, buf[emit:cut], [])
        hits = [_clip(hit, emit) for hit in hits if hit.end > emit]
        regions = merge_hits(hits)
        cut = n if final else _cut_before(regions, max(hold, emit))
        released = [r for r in regions if r.end <= cut]
        self._resume(anchors, hits, base, cut)
        self.emit = base + cut
        for region in released:
            region.start -= emit
            region.end -= emit
            region.hits = [
                new_hit(Hit, (s - emit, e - emit, rule, ms - emit, me - emit))
                for s, e, rule, ms, me in region.hits
            ]
        return Release(base + emit, buf[emit:cut], released)

    def _resume(self, anchors: dict[int, int], hits: list[Hit], base: int, cut: int) -> None:
        """Where each rule's search goes on next time, when not at the release point.

        Before it: a match in progress that had to be released partly (``anchors``), or a match whose
        redacted part lies past the release point; after it: the end of a released match.
        """
        if not anchors and not hits and not self.resume:
            return
        resume: dict[int, int] = {}
        for order, at in anchors.items():
            if base + cut - self._max_anchor[order] <= at < base + cut:
                resume[order] = at
        for _, end, rule, match_start, match_end in hits:
            if end <= cut:
                if match_end > cut:
                    resume[rule.order] = max(resume.get(rule.order, 0), base + match_end)
            elif match_start < cut:
                resume[rule.order] = min(resume.get(rule.order, base + cut), base + match_start)
        for order, at in self.resume.items():
            if at > base + cut and order not in resume:
                resume[order] = at
        self.resume = resume

    def _hold(
        self, rule: CompiledRule, buf: str, found: OpenScan, hits: list[Hit], anchors: dict[int, int]
    ) -> int:
        """Where ``rule`` holds the text back: from its match in progress, however long (the hold
        limit fails closed); a custom rule's complete match that may still grow, at most its window."""
        at = found.hold
        assert at is not None
        anchors[rule.order] = self.base + at
        if found.pending is None or not rule.custom or len(buf) - at <= self._window:
            return at
        hit = accept_pending(rule, buf, found.pending)
        if hit is not None:
            hits.append(hit)
        return int(found.pending.end())


_BREAK = regex.compile(r"(?r)[\s" + CJK + CJK_PUNCT + "]")

_FIRST_WIDE_BREAK = "\u02ea"
"""The lowest printable character other than the space that ends a word (a Bopomofo tone mark; the CJK
scripts come after it): a printable word whose characters all lie below it holds no break."""


def _last_word(buf: str, low: int, high: int | None = None) -> int:
    """Where the last word of ``buf[low:high]`` starts (``high`` when it ends with a blank).

    A word ends at whitespace and at CJK letters and punctuation: no built-in match contains them.
    """
    n = len(buf) if high is None else high
    if n == low:
        return n
    space = buf.rfind(" ", low, n)
    if space >= 0:
        rest = buf[space + 1 : n]
        if rest.isprintable() and (rest.isascii() or max(rest) < _FIRST_WIDE_BREAK):
            return space + 1  # no other blank after the space, no CJK (accented Latin words too)
    found = _BREAK.search(buf, low, n)
    return low if found is None else found.end()


def _order(rule: CompiledRule) -> int:
    return rule.order


def _clip(hit: Hit, emit: int) -> Hit:
    """A hit of a match that began before the release point keeps only its part after it."""
    return (
        hit if hit.start >= emit else new_hit(Hit, (emit, hit.end, hit.rule, hit.match_start, hit.match_end))
    )


def _cut_before(regions: list[Region], cut: int) -> int:
    """Move ``cut`` back to the start of a region it would split."""
    for region in regions:
        if region.start < cut < region.end:
            return region.start
        if region.start >= cut:
            break
    return cut


class RegexStreamRedactor:
    """Redacts text that arrives in pieces, exactly as if it had been redacted whole.

    ``feed()`` returns the redacted text that is safe to release so far (possibly ``""``): everything
    up to where a match may still be in progress. ``close()`` returns the rest once the text has ended.

    Raises:
        StreamHoldLimitError: From ``feed()``, when a possible match would have to hold back more than
            the hold limit (``stream_hold_limit``): nothing of it is released.
    """

    __slots__ = ("_scanner",)

    def __init__(
        self,
        rules: Sequence[CompiledRule],
        *,
        window: int,
        needles: NeedleIndex | None = None,
        limit: int = DEFAULT_HOLD_LIMIT,
    ) -> None:
        self._scanner = StreamScanner(rules, window=window, needles=needles, limit=limit)

    def feed(self, text: str) -> str:
        """Add ``text``; return the redacted text released by it."""
        release = self._scanner.feed(text)
        return "" if release is None else _redacted(release)

    def close(self) -> str:
        """End the text; return everything still held, redacted."""
        return _redacted(self._scanner.scan(final=True))


def _redacted(release: Release) -> str:
    if not release.regions:
        return release.text
    pieces: list[str] = []
    last = 0
    text = release.text
    for region in release.regions:
        pieces.append(text[last : region.start])
        pieces.append(region.replacement(text))
        last = region.end
    pieces.append(text[last:])
    return "".join(pieces)

"""The search loops shared by whole texts and streams, and the merging of overlapping matches.

Whole texts and streams use the *same* per-rule loop (``search`` from the end of the last match), so
a stream can reproduce whole-text results exactly. The stream variant (:func:`scan_open`) also finds
where a match may still be in progress: for custom rules with the ``regex`` package's partial
matching, which tells where a match could continue past the end of the text received so far.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from procflow.errors import PatternTimeoutError
from procflow.processors._regex_filter.rules import CompiledRule, NeedleIndex, expand

__all__ = ["Hit", "OpenScan", "Region", "accept_pending", "merge_hits", "new_hit", "scan_final", "scan_open"]


class Hit(NamedTuple):
    """One accepted match: the span to redact, the rule, and the span of the whole match (which may be
    longer: ``key = value`` forms redact the value only, URLs drop trailing punctuation)."""

    start: int
    end: int
    rule: CompiledRule
    match_start: int
    match_end: int


new_hit = tuple.__new__
"""Builds a :class:`Hit` from a tuple without the named tuple's Python-level ``__new__`` (≈ 3× cheaper;
hits are built on the stream's hot path)."""


@dataclass(slots=True)
class Region:
    """Strictly overlapping hits merged into one span, replaced once."""

    start: int
    end: int
    hits: list[Hit]

    @property
    def chosen(self) -> CompiledRule:
        """The rule of the longest hit (the earliest one on a tie): its replacement is used."""
        best = self.hits[0]
        for hit in self.hits[1:]:
            if hit.end - hit.start > best.end - best.start:
                best = hit
        return best.rule

    @property
    def rule_names(self) -> list[str]:
        """Names of the rules that matched inside the region, in order of appearance, without repeats."""
        return list(dict.fromkeys(hit.rule.name for hit in self.hits))

    def replacement(self, text: str, offset: int = 0) -> str:
        """The text replacing this region; ``text[start - offset:end - offset]`` is what it covers."""
        rule = self.chosen
        if rule.template is None or len(self.hits) > 1:
            return rule.replacement
        alone = _fullmatch(rule, text[self.start - offset : self.end - offset])
        return rule.replacement if alone is None else expand(rule.template, alone)


def _search(rule: CompiledRule, text: str, pos: int, endpos: int, partial: bool) -> Any:
    if rule.timeout is None:
        if partial:
            return rule.rx.search(text, pos, endpos, partial=True)
        return rule.rx.search(text, pos, endpos)
    try:
        return rule.rx.search(text, pos, endpos, partial=partial, timeout=rule.timeout)
    except TimeoutError as exc:
        raise PatternTimeoutError(rule.name, rule.timeout) from exc


def _fullmatch(rule: CompiledRule, text: str) -> Any:
    if rule.timeout is None:
        return rule.rx.fullmatch(text)
    try:
        return rule.rx.fullmatch(text, timeout=rule.timeout)
    except TimeoutError as exc:
        raise PatternTimeoutError(rule.name, rule.timeout) from exc


def _accept(rule: CompiledRule, text: str, match: Any) -> Hit | None:
    for variant in rule.variants:
        hit = _accept_as(variant, text, match)
        if hit is not None:
            return hit
    return _accept_as(rule, text, match)


def _accept_as(rule: CompiledRule, text: str, match: Any) -> Hit | None:
    if rule.group is None:
        start, end = match.span()
    else:
        start, end = match.span(rule.group)
        if start < 0:
            return None
    if rule.context is not None:
        begin = match.start()
        if rule.context.search(text, max(0, begin - _CONTEXT_REACH), begin) is None:
            return None
    if rule.trim is not None:
        end = rule.trim(text, start, end)
    if end <= start:
        return None
    if rule.validate is not None and not rule.validate(text[start:end]):
        return None
    return new_hit(Hit, (start, end, rule, match.start(), match.end()))


_CONTEXT_REACH = 80
"""How far before a match a built-in ``context`` pattern may look."""


def scan_final(rule: CompiledRule, text: str, start: int) -> list[Hit]:
    """Every accepted match of ``rule`` in ``text`` from ``start``, the text being complete.

    After a match the search goes on from its end; after a candidate the rule rejects (validation,
    context), from the character after the candidate's start, so it never hides a match inside it.
    """
    n = len(text)
    if start > n:
        return []
    # Most texts a rule runs on hold no match of it: one direct search answers for them.
    match = rule.rx.search(text, start, n) if rule.timeout is None else _search(rule, text, start, n, False)
    hits: list[Hit] = []
    while match is not None:
        begin, end = match.span()
        if end == begin:
            pos = end + 1
        else:
            hit = _accept(rule, text, match)
            if hit is None:
                pos = begin + 1
            else:
                hits.append(hit)
                pos = end
        if pos > n:
            break
        match = _search(rule, text, pos, n, False)
    return hits


def _earlier_hold(rule: CompiledRule, text: str, pos: int, first: int) -> int | None:
    """A position before ``first`` (the leftmost complete match) where a match may still be starting.

    Partial search reports a complete match in preference to an earlier partial one, so search again
    with the text cut at ``first``: a match in progress before it now reaches the cut. Each candidate
    is then checked against the whole text (the cut text may allow matches the whole text does not).
    """
    n = len(text)
    while pos < first:
        match = _search(rule, text, pos, first, True)
        if match is None or match.start() >= first:
            return None
        start = match.start()
        if _match_at(rule, text, start, n) is not None:
            return int(start)
        pos = start + 1
    return None


def _match_at(rule: CompiledRule, text: str, pos: int, n: int) -> Any:
    if rule.timeout is None:
        return rule.rx.match(text, pos, n, partial=True)
    try:
        return rule.rx.match(text, pos, n, partial=True, timeout=rule.timeout)
    except TimeoutError as exc:
        raise PatternTimeoutError(rule.name, rule.timeout) from exc


@dataclass(slots=True)
class OpenScan:
    """What a scan of a text that may continue found for one rule.

    Attributes:
        hits: Accepted matches no continuation of the text can change.
        hold: The first position where a match may still be in progress (``None``: nowhere).
        pending: When ``hold`` is a complete match that more text could still change, that match.
    """

    hits: list[Hit]
    hold: int | None = None
    pending: Any = None


def scan_open(
    rule: CompiledRule, text: str, start: int, window: int, needles: NeedleIndex, first: Any = None
) -> OpenScan:
    """Scan ``text`` from ``start`` for ``rule``, the text possibly continuing later.

    ``first`` is the match a plain search of a built-in pattern from ``start`` already found (it is
    not searched for again).

    A complete match is final once enough text follows it: a few characters for built-in patterns
    (whose engines read at most that far past a match), the rest of the ``window`` for custom rules.
    Custom rules use partial matching to find where a match may be in progress; built-in patterns
    search at full speed and leave that to their ``tail`` (see :class:`PresetPattern`), except those
    marked for partial matching, which use it only near the end of the text.
    """
    found = OpenScan([])
    n = len(text)
    custom = rule.custom
    reach = n if custom else rule.max_hold
    pos = start
    while pos <= n:
        if first is None:
            match = _search(rule, text, pos, n, custom)
        else:
            match, first = first, None
        if match is None:
            if rule.partial_tail:
                found.hold = _partial_tail(rule, text, max(pos, n - reach), n, needles)
            return found
        begin = match.start()
        if custom and match.partial:  # only custom rules search with partial matching
            found.hold = begin
            return found
        low = max(pos, n - reach)
        if (custom or rule.partial_tail) and begin > low:
            hold = _earlier_hold(rule, text, low, begin)
            if hold is not None:
                found.hold = hold
                return found
        end = match.end()
        horizon = rule.horizon if rule.horizon is not None else max(1, window - (end - begin))
        if n - end < horizon:
            found.hold = begin
            found.pending = match
            return found
        if end == begin:
            pos = end + 1
            continue
        hit = _accept(rule, text, match)
        if hit is None:
            pos = begin + 1
        else:
            found.hits.append(hit)
            pos = end
    return found


def _partial_tail(rule: CompiledRule, text: str, low: int, n: int, needles: NeedleIndex) -> int | None:
    if not any(needles.present(needle, text, low) for needle in rule.needles):
        return None
    match = _search(rule, text, low, n, True)
    return None if match is None or match.start() >= n else int(match.start())


def accept_pending(rule: CompiledRule, text: str, match: Any) -> Hit | None:
    """Accept a match that is not final yet (a stream forced to release it)."""
    return _accept(rule, text, match)


def merge_hits(hits: list[Hit]) -> list[Region]:
    """Merge strictly overlapping hits (touching ones stay apart) into regions, in text order."""
    hits.sort(key=lambda hit: (hit.start, hit.start - hit.end, hit.rule.order))
    regions: list[Region] = []
    for hit in hits:
        if regions and hit.start < regions[-1].end:
            region = regions[-1]
            region.hits.append(hit)
            if hit.end > region.end:
                region.end = hit.end
        else:
            regions.append(Region(hit.start, hit.end, [hit]))
    return regions

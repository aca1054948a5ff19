"""Checking every text a message carries: its text parts and its flattened ``content.content``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from procflow._messages.message import Message
from procflow._messages.parts import TextPart, ToolInvocationPart
from procflow.processors._regex_filter.match import Hit, merge_hits
from procflow.processors._regex_filter.report import (
    REDACTED_MATCH,
    RegexRedaction,
    RegexRedactionDetail,
    RegexTextPhase,
    apply_regions,
    redaction_entry,
)
from procflow.processors._text_runs import TextRun, joined_runs
from procflow.processors._tool_args import ArgPath, map_strings
from procflow.processors._tool_results import RESULT_FIELDS, rewrite_part

__all__ = ["KnownText", "MessageCheck"]


@dataclass(slots=True)
class MessageCheck:
    """One pass over the messages of a phase.

    Every string of every tool result is checked too (the result, and the tool's output for the model):
    a result string that is also the message's flattened text is checked and reported once.

    Attributes:
        find: Returns the hits in a text.
        phase: The hook, for reports.
        redact: Replace matches (else only record them in ``found``, for ``block``/``warn``).
        report: Build a redaction detail per redacted text (only when someone listens).
        include_values: Put redacted values in the report.
        tool_arguments: Also check every string inside tool-call arguments.
        found: Tripwire-style match entries (``block``/``warn``).
        details: Redaction details, one per redacted part or flattened text.
        changed: Whether a message came out changed (a new object).
    """

    find: Callable[[str], list[Hit]]
    phase: RegexTextPhase
    redact: bool
    report: bool
    include_values: bool
    tool_arguments: bool = False
    found: list[dict[str, Any]] = field(default_factory=list)
    details: list[RegexRedactionDetail] = field(default_factory=list)
    changed: bool = False

    def message(self, message: Message) -> Message:
        """The message with its texts redacted (the same object when nothing changed).

        Text parts the model reads as one text (see :func:`joined_runs`) are checked joined, so a
        value split over two parts is found; each redacted span is mapped back onto the parts it
        covers (see :meth:`joined`).
        """
        content = message.content
        source = content.parts
        parts: list[Any] | None = None
        seen: dict[str, str | None] | None = None
        runs = joined_runs(source, message.role) if len(source) > 1 else None  # one part: no call
        for index, part in enumerate(source):
            if isinstance(part, TextPart):
                if not part.text:
                    continue
                if runs is not None and index in runs:
                    parts = self.run(source, runs[index], index, message.id, parts)
                    continue
                new_text = self.text(part.text, message.id, index)
                if new_text is not None:
                    parts = parts if parts is not None else list(source)
                    parts[index] = part.model_copy(update={"text": new_text})
            elif isinstance(part, ToolInvocationPart):
                new_part = part
                if self.tool_arguments and part.args:
                    args = self.arguments(part.args, message.id, index)
                    if args is not part.args:
                        new_part = part.model_copy(update={"args": args})
                if part.state == "result":
                    seen = seen if seen is not None else {}
                    new_part = self.tool_result(new_part, message.id, index, seen)
                if new_part is not part:
                    parts = parts if parts is not None else list(source)
                    parts[index] = new_part
        fallback = content.content
        if not fallback:
            new_fallback = None
        elif seen is not None and fallback in seen:  # a tool turn's result is also its flattened text
            new_fallback = seen[fallback]
        else:
            new_fallback = self.text(fallback, message.id, None)
        if parts is None and new_fallback is None:
            return message
        update: dict[str, Any] = {}
        if parts is not None:
            update["parts"] = parts
        if new_fallback is not None:
            update["content"] = new_fallback
        self.changed = True
        return message.model_copy(update={"content": content.model_copy(update=update)})

    def run(
        self, source: list[Any], run: list[int], index: int, message_id: str, parts: list[Any] | None
    ) -> list[Any] | None:
        """Check the run of text parts (from :func:`joined_runs`) at its first part, ``index`` (at its
        other parts, do nothing); returns ``parts``, the message's new parts (``None``: none yet),
        with the parts it changed replaced."""
        if run[0] != index:
            return parts
        changed = self.joined(TextRun.of(source, run), message_id)
        if changed:
            parts = parts if parts is not None else list(source)
            for at, new_text in changed.items():
                parts[at] = source[at].model_copy(update={"text": new_text})
        return parts

    def arguments(self, args: dict[str, Any], message_id: str, part_index: int) -> dict[str, Any]:
        """Tool-call arguments with every string checked (the same object when nothing changed)."""
        return _ArgumentCheck(self, message_id, part_index).run(args)

    def tool_result(
        self,
        part: ToolInvocationPart,
        message_id: str,
        part_index: int,
        seen: dict[str, str | None] | None = None,
    ) -> ToolInvocationPart:
        """The part with every string of its result (and its output for the model) checked; ``seen``
        collects each string checked and what it became (``None``: unchanged), and a string already in
        it is not checked again."""
        return rewrite_part(
            part, RESULT_FIELDS, lambda field: _ArgumentCheck(self, message_id, part_index, field, seen)
        )

    def carried(
        self,
        value: Any,
        where: dict[str, Any],
        field: Literal["result", "model_output"] | None = None,
    ) -> Any:
        """A streamed chunk's value (a tool call's arguments, a tool's result, a data chunk's data) with
        every string checked (the same object when nothing changed); entries and reports name the
        chunk by ``where`` (``tool_call_id`` and ``tool_name``, or ``chunk_type``), not a message."""
        return map_strings(value, _ArgumentCheck(self, None, None, field, where=where))

    def text(
        self,
        text: str,
        message_id: str | None,
        part_index: int | None,
        arg_path: ArgPath | None = None,
        field: Literal["result", "model_output"] | None = None,
        where: dict[str, Any] | None = None,
    ) -> str | None:
        """The redacted text, or ``None`` when it is unchanged (or only recorded).

        The text's place (``message_id``, ``part_index``, ``arg_path``, ``field`` and the keys of
        ``where``, each when given) is put in each entry of ``found`` and in the redaction detail.
        """
        hits = self.find(text)
        if not hits:
            return None
        if not self.redact:
            place = _place(message_id, where, part_index, arg_path, field)
            for hit in sorted(hits, key=lambda hit: hit.start):
                self.found.append(
                    {"rule": hit.rule.name, "match": REDACTED_MATCH, "index": hit.start, **place}
                )
            return None
        new_text, entries = apply_regions(
            text, merge_hits(hits), report=self.report, include_values=self.include_values
        )
        if self.report:
            self.detail(entries, _place(message_id, where, part_index, arg_path, field))
        return new_text

    def joined(self, run: TextRun, message_id: str) -> dict[int, str] | None:
        """The new texts of a run's parts, checked as one text: only the parts that changed, by index
        (``None`` when matches were only recorded or there were none).

        Each match is counted once, in the part where it starts (``part_index``, and ``index`` in that
        part's text); one that runs on into later parts lists every part it covers (``part_indexes``).
        """
        text = run.text
        hits = self.find(text)
        if not hits:
            return None
        if not self.redact:
            for hit in sorted(hits, key=lambda hit: hit.start):
                part_index, index = run.locate(hit.start)
                found = {"rule": hit.rule.name, "match": REDACTED_MATCH, "index": index}
                found.update(_place(message_id, None, part_index, None, None))
                _spanned(found, run, hit.start, hit.end)
                self.found.append(found)
            return None
        regions = merge_hits(hits)
        edits = [(region.start, region.end, region.replacement(text)) for region in regions]
        if self.report:
            by_part: dict[int, list[RegexRedaction]] = {}
            for region, (start, end, replacement) in zip(regions, edits, strict=True):
                part_index, index = run.locate(start)
                value = text[start:end] if self.include_values else None
                redaction = redaction_entry(region, index, replacement, value)
                _spanned(cast(dict[str, Any], redaction), run, start, end)
                by_part.setdefault(part_index, []).append(redaction)
            for part_index, entries in by_part.items():
                self.detail(entries, _place(message_id, None, part_index, None, None))
        return run.rewrite(edits)

    def detail(self, entries: list[RegexRedaction], place: dict[str, Any]) -> None:
        """Record the redaction detail of one text (``place``: where it is, as :func:`_place` says)."""
        detail: dict[str, Any] = {"strategy": "redact", "phase": self.phase}
        if "message_id" in place:
            detail["message_id"] = place["message_id"]
        detail["redactions"] = entries
        detail.update(place)
        self.details.append(cast(RegexRedactionDetail, detail))


def _spanned(entry: dict[str, Any], run: TextRun, start: int, end: int) -> None:
    """Name in ``entry`` every part a match runs over, when it runs on past the part it starts in."""
    covered = run.covered(start, end)
    if len(covered) > 1:
        entry["part_indexes"] = covered


def _place(
    message_id: str | None,
    where: dict[str, Any] | None,
    part_index: int | None,
    arg_path: ArgPath | None,
    field: str | None,
) -> dict[str, Any]:
    """Where a text is, as report keys: only those given, in the order reports list them."""
    place: dict[str, Any] = {}
    if message_id is not None:
        place["message_id"] = message_id
    if where:
        place.update(where)
    if part_index is not None:
        place["part_index"] = part_index
    if arg_path is not None:
        place["arg_path"] = list(arg_path)
    if field is not None:
        place["field"] = field
    return place


class _ArgumentCheck:
    """Checks the strings of one part's tool-call arguments, or of one field of its result (a callable
    for ``map_strings``)."""

    __slots__ = ("check", "field", "message_id", "part_index", "seen", "where")

    def __init__(
        self,
        check: MessageCheck,
        message_id: str | None,
        part_index: int | None,
        field: Literal["result", "model_output"] | None = None,
        seen: dict[str, str | None] | None = None,
        where: dict[str, Any] | None = None,
    ) -> None:
        self.check = check
        self.message_id = message_id
        self.part_index = part_index
        self.field = field
        self.seen = seen
        self.where = where

    def run(self, args: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = map_strings(args, self)
        return result

    def __call__(self, value: str, path: ArgPath) -> str | None:
        seen = self.seen
        check = self.check
        if seen is None:
            return check.text(value, self.message_id, self.part_index, path, self.field, self.where)
        if value not in seen:
            seen[value] = check.text(value, self.message_id, self.part_index, path, self.field, self.where)
        return seen[value]


class KnownText:
    """``find`` that answers for one text already searched (the result text, which the response's
    texts repeat) without searching it again.

    With ``needle_free`` (no rule has a needle in that text: see ``NeedleIndex.select``), any text
    found inside it has no needle either, hence no match: the response's texts, which the result text
    is usually made of, are not searched at all. Texts are looked for from where the last one was found
    (they come in order), so a long response costs linear time; one not found there is searched.
    """

    __slots__ = ("_find", "_hits", "_needle_free", "_pos", "_text")

    def __init__(
        self, find: Callable[[str], list[Hit]], text: str, hits: list[Hit], *, needle_free: bool = False
    ) -> None:
        self._find = find
        self._text = text
        self._hits = hits
        self._needle_free = needle_free
        self._pos = 0

    def __call__(self, text: str) -> list[Hit]:
        if text == self._text:
            return list(self._hits)
        if self._needle_free:
            at = self._text.find(text, self._pos)
            if at >= 0:
                self._pos = at + len(text)
                return []
        return self._find(text)

"""Checking every text a message carries: its text parts and its flattened ``content.content``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from procflow._messages.message import Message
from procflow._messages.parts import TextPart, ToolInvocationPart
from procflow.processors._regex_filter.match import Hit, merge_hits
from procflow.processors._regex_filter.report import (
    REDACTED_MATCH,
    RegexRedactionDetail,
    RegexTextPhase,
    apply_regions,
)
from procflow.processors._tool_args import ArgPath, map_strings
from procflow.processors._tool_results import RESULT_FIELDS, rewrite_part

__all__ = ["KnownText", "MessageCheck"]


@dataclass(slots=True)
class MessageCheck:
    """One pass over the messages of a phase.

    Attributes:
        find: Returns the hits in a text.
        phase: The hook, for reports.
        redact: Replace matches (else only record them in ``found``, for ``block``/``warn``).
        report: Build a redaction detail per redacted text (only when someone listens).
        include_values: Put redacted values in the report.
        tool_arguments: Also check every string inside tool-call arguments.
        tool_results: Also check every string inside tool results (what the model is sent of them);
            a result string that is also the message's flattened text is checked and reported once.
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
    tool_results: bool = False
    found: list[dict[str, Any]] = field(default_factory=list)
    details: list[RegexRedactionDetail] = field(default_factory=list)
    changed: bool = False

    def message(self, message: Message) -> Message:
        """The message with its texts redacted (the same object when nothing changed)."""
        content = message.content
        parts: list[Any] | None = None
        seen: dict[str, str | None] | None = None
        for index, part in enumerate(content.parts):
            if isinstance(part, TextPart):
                if not part.text:
                    continue
                new_text = self.text(part.text, message.id, index)
                if new_text is not None:
                    parts = parts if parts is not None else list(content.parts)
                    parts[index] = part.model_copy(update={"text": new_text})
            elif isinstance(part, ToolInvocationPart):
                new_part = part
                if self.tool_arguments and part.args:
                    args = self.arguments(part.args, message.id, index)
                    if args is not part.args:
                        new_part = part.model_copy(update={"args": args})
                if self.tool_results and part.state == "result":
                    seen = seen if seen is not None else {}
                    new_part = self.tool_result(new_part, message.id, index, seen)
                if new_part is not part:
                    parts = parts if parts is not None else list(content.parts)
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

    def text(
        self,
        text: str,
        message_id: str,
        part_index: int | None,
        arg_path: ArgPath | None = None,
        field: Literal["result", "model_output"] | None = None,
    ) -> str | None:
        """The redacted text, or ``None`` when it is unchanged (or only recorded)."""
        hits = self.find(text)
        if not hits:
            return None
        if not self.redact:
            for hit in sorted(hits, key=lambda hit: hit.start):
                entry = {
                    "rule": hit.rule.name,
                    "match": REDACTED_MATCH,
                    "index": hit.start,
                    "message_id": message_id,
                }
                if part_index is not None:
                    entry["part_index"] = part_index
                if arg_path is not None:
                    entry["arg_path"] = list(arg_path)
                if field is not None:
                    entry["field"] = field
                self.found.append(entry)
            return None
        new_text, entries = apply_regions(
            text, merge_hits(hits), report=self.report, include_values=self.include_values
        )
        if self.report:
            detail: RegexRedactionDetail = {
                "strategy": "redact",
                "phase": self.phase,
                "message_id": message_id,
                "redactions": entries,
            }
            if part_index is not None:
                detail["part_index"] = part_index
            if arg_path is not None:
                detail["arg_path"] = list(arg_path)
            if field is not None:
                detail["field"] = field
            self.details.append(detail)
        return new_text


class _ArgumentCheck:
    """Checks the strings of one part's tool-call arguments, or of one field of its result (a callable
    for ``map_strings``)."""

    __slots__ = ("check", "field", "message_id", "part_index", "seen")

    def __init__(
        self,
        check: MessageCheck,
        message_id: str,
        part_index: int,
        field: Literal["result", "model_output"] | None = None,
        seen: dict[str, str | None] | None = None,
    ) -> None:
        self.check = check
        self.message_id = message_id
        self.part_index = part_index
        self.field = field
        self.seen = seen

    def run(self, args: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = map_strings(args, self)
        return result

    def __call__(self, value: str, path: ArgPath) -> str | None:
        seen = self.seen
        if seen is None:
            return self.check.text(value, self.message_id, self.part_index, path, self.field)
        if value not in seen:
            seen[value] = self.check.text(value, self.message_id, self.part_index, path, self.field)
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

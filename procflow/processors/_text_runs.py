"""A message's text parts as the model reads them: runs of parts joined with nothing between them.

An app that assembles a prompt from several parts, or a gateway client sending a content array, can
split a value over two text parts (``"ana.lopez@"`` + ``"example.org"``); the provider prompt sends
them side by side, so the model reads the value whole. A guard that redacts matches on each run's
joined text, then maps every redacted span back onto the parts it covers (:meth:`TextRun.rewrite`).

What breaks a run is what the prompt sends between two text parts (see ``_to_prompt.py``): a file or
an image in any message, and in an assistant message also reasoning, a tool call or a new step. Parts
the prompt does not send (sources, ``data-*``; in a user message, anything but text, files and
images) do not break it; nor does anything in a system or signal message, whose text is sent whole.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from procflow._messages.parts import (
    FilePart,
    ImagePart,
    Part,
    ReasoningPart,
    StepStartPart,
    TextPart,
    ToolInvocationPart,
)

__all__ = ["Edit", "TextRun", "apply_edits", "joined_runs", "text_runs"]

Edit = tuple[int, int, str]
"""A span of a run's joined text (start, end) and what replaces it."""

_BREAKS: dict[str, tuple[type[Any], ...]] = {
    "user": (FilePart, ImagePart),
    "assistant": (FilePart, ImagePart, ReasoningPart, ToolInvocationPart, StepStartPart),
}
"""Per role, the parts the prompt sends between two text parts (other roles: none)."""


def text_runs(parts: Sequence[Part], role: str) -> list[list[int]]:
    """The indexes of the non-empty text parts, grouped by the text the model reads them in, in order."""
    if len(parts) == 1:  # most messages: one text part, one run
        part = parts[0]
        return [[0]] if isinstance(part, TextPart) and part.text else []
    breaks = _BREAKS.get(role, ())
    runs: list[list[int]] = []
    run: list[int] = []
    for index, part in enumerate(parts):
        if isinstance(part, TextPart):
            if part.text:
                run.append(index)
        elif breaks and isinstance(part, breaks) and run:
            runs.append(run)
            run = []
    if run:
        runs.append(run)
    return runs


def joined_runs(parts: Sequence[Part], role: str) -> dict[int, list[int]] | None:
    """The runs of two or more text parts (see :func:`text_runs`), by the index of each of their
    parts; ``None`` for most messages, whose text parts are each read alone."""
    texts = 0
    for part in parts:
        if isinstance(part, TextPart) and part.text:
            texts += 1
    if texts < 2:  # no text to join: nothing allocated
        return None
    joined: dict[int, list[int]] = {}
    for run in text_runs(parts, role):
        if len(run) > 1:
            joined.update(dict.fromkeys(run, run))
    return joined or None


@dataclass(frozen=True, slots=True)
class TextRun:
    """Text parts the model reads as one text, joined.

    Attributes:
        indexes: The parts' indexes in the message's parts.
        starts: Where each part's text starts in ``text``.
        texts: Each part's text.
        text: The parts' texts joined (nothing between them).
    """

    indexes: tuple[int, ...]
    starts: tuple[int, ...]
    texts: tuple[str, ...]
    text: str

    @classmethod
    def of(cls, parts: Sequence[Part], indexes: Sequence[int]) -> TextRun:
        """The run of the text parts at ``indexes`` (non-empty text parts, from :func:`text_runs`)."""
        texts = tuple(cast(TextPart, parts[index]).text for index in indexes)
        starts: list[int] = []
        at = 0
        for text in texts:
            starts.append(at)
            at += len(text)
        return cls(tuple(indexes), tuple(starts), texts, "".join(texts))

    def locate(self, offset: int) -> tuple[int, int]:
        """The index of the part where ``offset`` of ``text`` lies, and the offset in that part's text."""
        at = bisect_right(self.starts, offset) - 1
        return self.indexes[at], offset - self.starts[at]

    def covered(self, start: int, end: int) -> list[int]:
        """The indexes of the parts the span ``start:end`` of ``text`` covers (at least one char of)."""
        first = bisect_right(self.starts, start) - 1
        last = bisect_right(self.starts, end - 1) - 1
        return list(self.indexes[first : last + 1])

    def rewrite(self, edits: Sequence[Edit]) -> dict[int, str]:
        """The new texts of the parts ``edits`` change (spans of ``text`` in order, not overlapping),
        by part index.

        A replacement goes into the part where its span starts; what the span covers of later parts
        is removed from them, so the parts joined equal ``text`` with the edits applied.
        """
        text, starts = self.text, self.starts
        ends = (*starts[1:], len(text))
        pieces: list[list[str]] = [[] for _ in starts]
        cursor = 0
        for start, end, replacement in (*edits, (len(text), len(text), "")):
            for at, (low, high) in enumerate(zip(starts, ends, strict=True)):
                low, high = max(low, cursor), min(high, start)
                if low < high:
                    pieces[at].append(text[low:high])
            if replacement:
                pieces[bisect_right(starts, start) - 1].append(replacement)
            cursor = end
        changed: dict[int, str] = {}
        for index, old, piece in zip(self.indexes, self.texts, pieces, strict=True):
            new = "".join(piece)
            if new != old:
                changed[index] = new
        return changed


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """``text`` with each span of ``edits`` (in order, not overlapping) replaced."""
    pieces: list[str] = []
    cursor = 0
    for start, end, replacement in edits:
        pieces += (text[cursor:start], replacement)
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)

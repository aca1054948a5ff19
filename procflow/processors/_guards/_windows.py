"""Holding streamed text until a guard has judged it: windows of text, released or withheld whole.

A guard that judges text with a model cannot judge every token: it collects text-delta chunks into a
segment, judges the segment once it is complete, and then releases the segment's chunks (possibly
rewritten) or withholds them. Non-text chunks end the pending segment first, so they never overtake
text that precedes them. Segments end only at boundaries the text decides — every ``size``
characters, or at sentence ends — never where the provider split it, so a sentence is always judged
whole. (How many sentences one segment holds does depend on how much text had arrived.)

A guard whose verdict on a sentence can depend on the sentences after it gives the window a
:class:`HoldBack`, which moves each proposed cut earlier (or cancels it) so that what one verdict
needs is judged together; the system-prompt scrubber does, since a leak may run over many sentences.

Reasoning deltas are held and judged the same way (a run of reasoning is a segment of its own), since
consumers show reasoning too. Text also travels outside deltas: in a ``tool-call``'s arguments, a
``tool-result``'s arguments and result, and a ``data-*`` chunk's data. Each string inside those is
judged the same way (and rewritten in place, or the whole chunk withheld), so a guard does not go
silent where a value moves into a tool call or a tool's progress data. When an attempt is thrown away
for a retry (the stream is discarded), the held text is dropped unjudged: nobody will see it, so it
costs no judge call and reports nothing.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from procflow._messages import Chunk
from procflow.processors._tool_args import map_strings

__all__ = [
    "HELD_KINDS",
    "SENTENCE_END",
    "HoldBack",
    "Segmenter",
    "SentenceHolding",
    "StreamWindow",
    "judged_chunk",
]

SENTENCE_END = re.compile(r"[.!?…](?=\s)|[。！？；]|\n\s*\n")
"""Where a sentence ends: ``.!?…`` followed by whitespace, CJK full stops, or a blank line."""

Judged = Callable[[str], Awaitable[str | None]]
"""Judges one segment: returns the text to release (the same, or rewritten), or ``None`` to withhold it."""

_CARRIED: dict[str, tuple[str, ...]] = {
    "tool-call": ("args",),
    "tool-result": ("args", "result", "model_output"),
}
"""The payload fields of the non-text chunks that carry text, by chunk type (``data-*``: ``data``)."""


def _carried(kind: str) -> tuple[str, ...]:
    return ("data",) if kind.startswith("data-") else _CARRIED.get(kind, ())


async def judged_chunk(chunk: Chunk, judge: Judged) -> Chunk | None:
    """``chunk`` with every string its tool arguments, tool result or data carry judged.

    Returns the same chunk when nothing changed, a copy with the rewritten strings, or ``None`` (withhold
    it) when the judge withholds any of them. Each distinct string is judged once.
    """
    fields = [name for name in _carried(chunk.type) if chunk.payload.get(name) is not None]
    found: list[str] = []
    for name in fields:
        map_strings(chunk.payload[name], lambda text, _path: found.append(text))
    verdicts: dict[str, str] = {}
    for text in dict.fromkeys(found):
        released = await judge(text)
        if released is None:
            return None
        verdicts[text] = released
    changed = {text: new for text, new in verdicts.items() if new != text}
    if not changed:
        return chunk
    payload = dict(chunk.payload)
    for name in fields:
        payload[name] = map_strings(payload[name], lambda text, _path: changed.get(text))
    return Chunk(chunk.type, payload, chunk.transient)


@dataclass(slots=True)
class Segmenter:
    """Finds where the pending text can be cut into judged segments.

    Attributes:
        size: With ``sentences=False``, cut every ``size`` characters; with ``sentences=True``, the
            longest a segment may grow without a sentence end (it is then cut after its last
            whitespace, never inside a run of non-space characters).
        sentences: Cut at sentence ends (so a judged value is never split across two segments).
        hold_limit: With ``sentences=True``, the most characters held without any whitespace; past it
            the stream fails closed (the guard stops it), since cutting would split a value.
    """

    size: int
    sentences: bool = False
    hold_limit: int = 65_536

    def cut(self, text: str, start: int = 0) -> int:
        """How many leading characters of ``text`` form complete segments (0: wait for more).

        ``start`` is how much of ``text`` an earlier call already searched without a cut, so each
        character is searched a bounded number of times (linear in the stream).

        Raises:
            OverflowError: more than ``hold_limit`` characters without whitespace are pending.
        """
        if not self.sentences:
            return (len(text) // self.size) * self.size
        end = 0
        # Resume where the last search stopped, backing up over a trailing whitespace run (a blank line
        # may be completed by the new text) and two characters (a stop waiting for its next one).
        resume = min(max(0, start - 2), len(text[:start].rstrip()))
        for match in SENTENCE_END.finditer(text, resume):
            # A sentence end needs the character after it (``a.b`` is no end), except CJK stops.
            if match.end() < len(text) or match.group()[-1] in "。！？；":
                end = match.end()
        if end == 0 and len(text) > self.size:
            # Text searched earlier while already over ``size`` had no whitespace (it would have been cut).
            since = start if start > self.size else 0
            space = max(text.rfind(" ", since), text.rfind("\n", since), text.rfind("\t", since))
            if space >= 0:
                return space + 1
            if len(text) > self.hold_limit:
                raise OverflowError("without a space")
        return end


class HoldBack(Protocol):
    """Keeps back, at the end of each proposed segment, text that must be judged with what follows."""

    def hold_back(self, text: str, cut: int) -> int:
        """How many leading characters of the pending ``text`` to judge now, ``cut`` being proposed.

        Returns ``cut`` or less (0: judge nothing yet). Called once per proposed cut, in stream order;
        a linear implementation reads only ``text`` it has not read before.

        Raises:
            OverflowError: more is held than the guard allows (the stream fails closed).
        """
        ...

    def reset(self) -> None:
        """The pending text was judged whole (end of a run of deltas): start afresh."""
        ...


HELD_KINDS = frozenset({"text-delta", "reasoning-delta"})
"""The delta chunks whose text is held and judged in segments (reasoning reaches consumers too)."""


@dataclass(slots=True)
class StreamWindow:
    """The held text of one stream for one guard: one run of text (or of reasoning) deltas at a time.

    Attributes:
        segmenter: Proposes where the pending text is cut into segments.
        hold: Moves a proposed cut earlier (see :class:`HoldBack`); ``None`` takes every proposal.
    """

    segmenter: Segmenter
    hold: HoldBack | None = None
    pending: str = ""
    searched: int = 0
    template: Chunk | None = None
    released: list[Chunk] = field(default_factory=list)
    attempt: int = 0

    async def push(self, chunk: Chunk, judge: Judged, *, attempt: int = 0) -> list[Chunk]:
        """Take one chunk of attempt number ``attempt`` (the retry count); return what may be released now.

        Text and reasoning deltas are held until their segment is complete (a switch from one to the
        other ends the segment); any other chunk releases the pending segment first, then passes with
        the strings it carries judged (see :func:`judged_chunk`).
        """
        self.attempt = attempt
        if chunk.type not in HELD_KINDS:
            out = await self.flush(judge, attempt=attempt)
            checked = await judged_chunk(chunk, judge)
            return [*out, checked] if checked is not None else out
        out = []
        if self.template is not None and self.template.type != chunk.type:
            out = await self.flush(judge, attempt=attempt)
        if not self.pending:
            self.template = chunk
        self.pending += chunk.payload.get("text") or ""
        cut = self.segmenter.cut(self.pending, self.searched)
        if cut and self.hold is not None:
            cut = self.hold.hold_back(self.pending, cut)
        if not cut:
            self.searched = len(self.pending)
            return out
        segment, self.pending = self.pending[:cut], self.pending[cut:]
        self.searched = 0
        return [*out, *await self._judged(segment, judge)]

    async def flush(self, judge: Judged, *, attempt: int | None = None) -> list[Chunk]:
        """Judge and release whatever is pending (end of a text block or of the stream).

        When ``attempt`` differs from the attempt the pending text came from, that attempt was thrown
        away for a retry: the text is dropped without a judge call.
        """
        if self.hold is not None:
            self.hold.reset()
        if not self.pending:
            return []
        segment, self.pending = self.pending, ""
        self.searched = 0
        if attempt is not None and attempt != self.attempt:
            return []
        return await self._judged(segment, judge)

    async def _judged(self, segment: str, judge: Judged) -> list[Chunk]:
        text = await judge(segment)
        if not text:
            return []
        template = self.template
        kind = template.type if template is not None else "text-delta"
        payload = dict(template.payload) if template is not None else {}
        payload["text"] = text
        return [Chunk(kind, payload)]


class SentenceHolding:
    """The stream hooks of a guard that judges output a sentence at a time (PII, system prompt).

    The guard provides ``_apply(text, args)`` (the text to release, or ``None`` to withhold it),
    ``abort(args, reason, metadata)``, ``id``, ``strategy``, ``stream_window`` and ``stream_hold_limit``.
    """

    id: str
    strategy: str
    stream_window: int
    stream_hold_limit: int
    process_data_parts = True
    """``data-*`` chunks reach the stream hook: the strings in their data are judged too."""

    if TYPE_CHECKING:  # provided by the guard class (GuardBase and the guard itself)

        async def _apply(self, text: str, args: Any) -> str | None: ...

        def abort(self, args: Any, reason: str, metadata: dict[str, Any]) -> Any: ...

    def _hold_back(self, args: Any) -> HoldBack | None:
        """The hold-back of this request's stream window (none: every sentence end is a cut)."""
        return None

    def _window(self, args: Any) -> StreamWindow:
        window: StreamWindow | None = args.state.get("window")
        if window is None:
            segmenter = Segmenter(self.stream_window, sentences=True, hold_limit=self.stream_hold_limit)
            window = args.state["window"] = StreamWindow(segmenter, self._hold_back(args))
        return window

    async def process_output_stream(self, args: Any) -> Any:
        """Hold text a sentence at a time; release each sentence once it is judged (and rewritten)."""
        try:
            window = self._window(args)
            return await window.push(
                args.part, lambda text: self._apply(text, args), attempt=args.retry_count
            )
        except OverflowError as error:
            self.abort(
                args,
                f"{self.id} held more than {self.stream_hold_limit} characters {error}: the text "
                "cannot be judged in pieces without splitting a value, so it is withheld",
                {"error": "hold_limit", "strategy": self.strategy},
            )

    async def flush_output_stream(self, args: Any) -> list[Chunk] | None:
        """End of stream: judge and release the last sentence."""
        return await self._window(args).flush(lambda text: self._apply(text, args), attempt=args.retry_count)

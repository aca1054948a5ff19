"""The chunks a stream holds back while their text may still be part of a match, released in order."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, NamedTuple

from procflow._messages.chunk import Chunk
from procflow.processors._regex_filter.match import Region
from procflow.processors._regex_filter.stream import Release, StreamScanner

__all__ = ["ChunkQueue", "Emitted", "Replacement"]


@dataclass(slots=True)
class _Segment:
    """Held text ``[start, end)`` of the stream text, from text-delta chunks with this payload.

    ``chunk`` is the one chunk the segment holds whole, passed on as it is when released whole.
    """

    start: int
    end: int
    payload: dict[str, Any]
    chunk: Chunk | None = None


class Replacement(NamedTuple):
    """One region replaced in an output chunk: where in the chunk's text, and by what."""

    region: Region
    at: int
    text: str


Emitted = tuple[Chunk, list[Replacement]]
"""An output chunk and the regions replaced in it."""


class ChunkQueue:
    """The text-delta and text-start/end chunks a stream holds back, released in their order."""

    __slots__ = ("items", "scanner")

    def __init__(self, scanner: StreamScanner) -> None:
        self.scanner = scanner
        self.items: deque[_Segment | tuple[int, Chunk]] = deque()

    def add_text(self, chunk: Chunk, text: str) -> Release | None:
        """Hold ``text`` (from ``chunk``) and feed it to the scanner; return what a scan released."""
        scanner = self.scanner
        start = scanner.base + len(scanner.buf) + scanner.extra
        items = self.items
        last = items[-1] if items else None
        if type(last) is _Segment and last.end == start and last.payload.get("id") == chunk.payload.get("id"):
            last.end = start + len(text)
            last.chunk = None
        else:
            items.append(_Segment(start, start + len(text), chunk.payload, chunk))
        return scanner.feed(text)

    def add_marker(self, chunk: Chunk) -> None:
        """Hold a text-start/text-end chunk at the current position of the text."""
        self.items.append((self.scanner.end, chunk))

    def release_plain(self, release: Release) -> Chunk | list[Chunk]:
        """Output chunks for ``release`` when it replaces nothing: one chunk, or a list of them.

        The same chunks as :meth:`release` with no regions, by a shorter loop (the usual case).
        """
        out: list[Chunk] = []
        text, origin = release.text, release.start
        cut = origin + len(text)
        items = self.items
        while items:
            item = items[0]
            if type(item) is tuple:
                if item[0] > cut:
                    break
                out.append(item[1])
                items.popleft()
                continue
            assert isinstance(item, _Segment)
            start, end = item.start, item.end
            if start >= cut:
                break
            if end <= cut and item.chunk is not None:
                out.append(item.chunk)
                items.popleft()
                continue
            piece = text[start - origin : (end if end < cut else cut) - origin]
            if piece:
                out.append(Chunk("text-delta", {**item.payload, "text": piece}))
            if end > cut:
                item.start = cut
                item.chunk = None
                break
            items.popleft()
        return out[0] if len(out) == 1 else out

    def release(self, release: Release, replacements: list[str]) -> list[Emitted]:
        """Output chunks for ``release`` (its regions replaced by ``replacements``), markers in place."""
        out: list[Emitted] = []
        text, origin, regions = release.text, release.start, release.regions
        cut = origin + len(text)
        index = 0
        skip_to = origin
        items = self.items
        while items:
            item = items[0]
            if type(item) is tuple:
                if item[0] > cut:
                    break
                out.append((item[1], []))
                items.popleft()
                continue
            assert isinstance(item, _Segment)
            if item.start >= cut:
                break
            stop = min(item.end, cut)
            if (
                item.chunk is not None
                and stop == item.end
                and skip_to <= item.start
                and (index == len(regions) or origin + regions[index].start >= stop)
            ):
                out.append((item.chunk, []))
                items.popleft()
                continue
            pieces: list[str] = []
            replaced: list[Replacement] = []
            pos = max(item.start, skip_to)
            while index < len(regions) and origin + regions[index].start < stop:
                region = regions[index]
                begin = origin + region.start
                if begin > pos:
                    pieces.append(text[pos - origin : begin - origin])
                pieces.append(replacements[index])
                replaced.append(Replacement(region, begin - item.start, replacements[index]))
                pos = skip_to = origin + region.end
                index += 1
            if pos < stop:
                pieces.append(text[pos - origin : stop - origin])
            piece = "".join(pieces)
            if piece:
                out.append((Chunk("text-delta", {**item.payload, "text": piece}), replaced))
            if item.end > cut:
                item.start = cut
                item.chunk = None
                break
            items.popleft()
        return out

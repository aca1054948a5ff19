"""The chunks a stream holds back while their text may still be part of a match, released in order."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, NamedTuple

from procflow._messages.chunk import Chunk
from procflow.processors._regex_filter.match import Region
from procflow.processors._regex_filter.stream import Release, StreamScanner

__all__ = ["ChunkQueue", "Replacement"]


@dataclass(slots=True)
class _Segment:
    """Held text ``[start, end)`` of the stream text, from text-delta chunks with this payload.

    ``id`` is the payload's ``id`` (the text block): the next chunk of the same block extends the
    segment. ``chunk`` is the one chunk the segment holds whole, passed on as it is when released whole.
    """

    start: int
    end: int
    payload: dict[str, Any]
    id: Any
    chunk: Chunk | None = None


class Replacement(NamedTuple):
    """One region replaced in an output chunk: where in the chunk's text, and by what."""

    region: Region
    at: int
    text: str


class ChunkQueue:
    """The text-delta and text-start/end chunks a stream holds back, released in their order.

    ``end`` counts the characters fed to the scanner so far (the queue is its only feeder).
    """

    __slots__ = ("end", "items", "scanner")

    def __init__(self, scanner: StreamScanner) -> None:
        self.scanner = scanner
        self.items: deque[_Segment | tuple[int, Chunk]] = deque()
        self.end = scanner.end

    def take(self, chunk: Chunk, text: str) -> Chunk | list[Chunk] | Release | None:
        """Hold ``text`` (from ``chunk``), feed it to the scanner and pass on what that settles.

        Returns ``None`` when nothing is released, the output chunks of a release that replaces
        nothing (as :meth:`release_plain`), or the :class:`Release` itself when it replaces text.
        """
        start = self.end
        end = self.end = start + len(text)
        payload = chunk.payload
        items = self.items
        last = items[-1] if items else None
        if type(last) is _Segment and last.id == payload.get("id"):
            last.end = end  # the last item, when a segment, ends where the text does
            last.chunk = None
        else:
            items.append(_Segment(start, end, payload, payload.get("id"), chunk))
        release = self.scanner.feed(text)
        if release is None or release.regions:
            return release
        return self.release_plain(release)

    def add_marker(self, chunk: Chunk) -> None:
        """Hold a text-start/text-end chunk at the current position of the text."""
        self.items.append((self.end, chunk))

    def release_plain(self, release: Release) -> Chunk | list[Chunk]:
        """Output chunks for ``release`` when it replaces nothing: one chunk, or a list of them.

        The same chunks as :meth:`release` with no regions, by a shorter loop (the usual case). A
        chunk released whole is passed on as it is; only a chunk released in part is copied.
        """
        text, origin = release.text, release.start
        cut = origin + len(text)
        items = self.items
        if len(items) == 1:  # the usual case: one held segment, released whole or up to ``cut``
            item = items[0]
            if type(item) is _Segment and item.start < cut:
                start, end = item.start, item.end
                if end > cut:
                    item.start = cut
                    item.chunk = None
                    return Chunk("text-delta", {**item.payload, "text": text[start - origin : cut - origin]})
                items.popleft()
                if item.chunk is not None:
                    return item.chunk
                return Chunk("text-delta", {**item.payload, "text": text[start - origin : end - origin]})
        return self._release_plain(text, origin, cut)

    def _release_plain(self, text: str, origin: int, cut: int) -> Chunk | list[Chunk]:
        out: list[Chunk] = []
        items = self.items
        while items:
            item = items[0]
            if not isinstance(item, _Segment):
                if item[0] > cut:
                    break
                out.append(item[1])
                items.popleft()
                continue
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

    def release(
        self, release: Release, replacements: list[str], *, report: bool
    ) -> tuple[list[Chunk], list[list[Replacement]]]:
        """Output chunks for ``release`` (its regions replaced by ``replacements``), markers in place.

        Also returns, when ``report``, the regions replaced in each output chunk that has any, in
        order (nothing is built for the report otherwise).
        """
        out: list[Chunk] = []
        reports: list[list[Replacement]] = []
        text, origin, regions = release.text, release.start, release.regions
        cut = origin + len(text)
        index = 0
        skip_to = origin
        items = self.items
        while items:
            item = items[0]
            if not isinstance(item, _Segment):
                if item[0] > cut:
                    break
                out.append(item[1])
                items.popleft()
                continue
            if item.start >= cut:
                break
            stop = min(item.end, cut)
            if (
                item.chunk is not None
                and stop == item.end
                and skip_to <= item.start
                and (index == len(regions) or origin + regions[index].start >= stop)
            ):
                out.append(item.chunk)
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
                if report:
                    replaced.append(Replacement(region, begin - item.start, replacements[index]))
                pos = skip_to = origin + region.end
                index += 1
            if pos < stop:
                pieces.append(text[pos - origin : stop - origin])
            piece = "".join(pieces)
            if piece:
                out.append(Chunk("text-delta", {**item.payload, "text": piece}))
                if replaced:
                    reports.append(replaced)
            if item.end > cut:
                item.start = cut
                item.chunk = None
                break
            items.popleft()
        return out, reports

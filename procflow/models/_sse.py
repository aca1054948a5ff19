"""Server-sent events: the ``data`` of each event of a streamed HTTP answer, read in one pass.

Providers only read each event's ``data`` (the event type is inside their JSON), so this decoder
yields just that, one string per event that has data lines, in the order the server sent them. It
follows the WHATWG event-stream rules: lines end with ``\\r\\n``, ``\\n`` or ``\\r``; a blank line ends
an event; ``data`` lines of one event are joined with ``\\n``; one space after the colon is dropped;
comments (``:…``) and other fields (``event``, ``id``, ``retry``) are skipped; an event left
unfinished when the stream ends is dropped. The common event, a single ``data: …`` line, is cut out
of the text without looking at it line by line, and the decoder is one async generator, so an event
costs one hop from the network read to the parser.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

import httpx

from procflow.errors import InvalidResponseError

__all__ = ["check_event_stream", "iter_sse_data", "sse_data"]


def check_event_stream(response: httpx.Response, *, provider: str, url: str) -> None:
    """Raise :class:`InvalidResponseError` unless ``response`` is a ``text/event-stream``."""
    content_type = response.headers.get("content-type", "").partition(";")[0]
    if "text/event-stream" not in content_type:
        raise InvalidResponseError(
            f"{provider} answered a streaming request to {url} without server-sent events: expected "
            f"response header Content-Type to contain 'text/event-stream', got {content_type!r}",
            provider=provider,
        )


def _event_data(block: str) -> str | None:
    """The data of one event's lines (``None`` when it has no data line)."""
    if block.startswith("data: ") and "\n" not in block:
        return block[6:]
    values: list[str] = []
    for line in block.split("\n"):
        if line.startswith("data"):
            if len(line) == 4:
                values.append("")
            elif line[4] == ":":
                value = line[5:]
                values.append(value[1:] if value.startswith(" ") else value)
    return "\n".join(values) if values else None


class _Splitter:
    """Cuts text arriving in any pieces into whole events (everything before a blank line)."""

    __slots__ = ("_cr", "_tail")

    def __init__(self) -> None:
        self._tail: list[str] = []  # the unfinished event, in the pieces it arrived in
        self._cr = False  # the last piece ended in "\r": a line end, perhaps the first half of "\r\n"

    def feed(self, text: str) -> list[str]:
        """The events ``text`` completes (their lines, without the blank line ending each)."""
        if self._cr:
            text = "\r" + text
            self._cr = False
        if "\r" in text:
            if text.endswith("\r"):
                text = text[:-1]
                self._cr = True
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        tail = self._tail
        if "\n\n" not in text and not (tail and tail[-1].endswith("\n") and text.startswith("\n")):
            if text:
                tail.append(text)  # no event ends here: keep the piece, join once one does
            return []
        if tail:
            tail.append(text)
            text = "".join(tail)
            tail.clear()
        blocks = text.split("\n\n")
        rest = blocks.pop()
        if rest:
            tail.append(rest)
        return blocks

    def end(self) -> list[str]:
        """The events a final ``\\r`` completes; an event without its blank line is dropped."""
        if not self._cr:
            return []
        self._cr = False
        return self.feed("\n")


def iter_sse_data(texts: list[str]) -> list[str]:
    """The data of every event in ``texts``, the pieces of one whole stream (for tests and tools)."""
    splitter = _Splitter()
    blocks = [block for text in texts for block in splitter.feed(text)]
    blocks.extend(splitter.end())
    return [data for data in map(_event_data, blocks) if data is not None]


async def sse_data(response: httpx.Response) -> AsyncGenerator[str, None]:
    """Yield the data of each event of ``response`` as it arrives."""
    splitter = _Splitter()
    async for text in response.aiter_text():
        for block in splitter.feed(text):
            if block.startswith("data: ") and "\n" not in block:
                yield block[6:]
            else:
                data = _event_data(block)
                if data is not None:
                    yield data
    for block in splitter.end():
        data = _event_data(block)
        if data is not None:
            yield data

"""RegexFilter's per-stream state and the stream session the stream runner binds to one stream."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from procflow._messages.chunk import Chunk
from procflow.errors import PatternTimeoutError, StreamHoldLimitError
from procflow.processors._args import ProcessOutputStreamArgs, StreamResult
from procflow.processors._regex_filter.chunks import ChunkQueue
from procflow.processors._regex_filter.stream import Release, StreamScanner

if TYPE_CHECKING:
    from procflow.processors._regex_filter.processor import RegexFilterProcessor

__all__ = ["STATE_KEY", "Hooks", "Session", "Stream"]

STATE_KEY = "regex_filter.stream"
"""Where a stream's :class:`Stream` lives in the processor's per-request ``state``."""


class Stream:
    """Per-request stream state, kept in ``args.state`` (processors are shared across requests).

    ``redacts``: text goes through the chunk queue (``block`` and ``redact``), not only the scanner.
    """

    __slots__ = ("queue", "redacts", "scanner")

    def __init__(self, scanner: StreamScanner, *, redacts: bool) -> None:
        self.scanner = scanner
        self.queue = ChunkQueue(scanner)
        self.redacts = redacts


@dataclass(frozen=True, slots=True)
class Hooks:
    """A processor's own stream hooks, as the stream runner's session for them."""

    process: Callable[[ProcessOutputStreamArgs], Awaitable[StreamResult]]
    flush: Callable[[ProcessOutputStreamArgs], Awaitable[list[Chunk] | None]]


class Session:
    """The stream hook bound to one stream by the stream runner (``open_output_stream``).

    A plain function: a text-delta chunk of a stream already under way is held or released without a
    coroutine; anything else (the first text, other chunks, a release that replaces text, which may
    report) is handed back as the hook's coroutine, which the runner awaits.
    """

    __slots__ = ("_processor", "flush")

    def __init__(self, processor: RegexFilterProcessor) -> None:
        self._processor = processor
        self.flush = processor.flush_output_stream

    def process(self, args: ProcessOutputStreamArgs) -> StreamResult | Awaitable[StreamResult]:
        chunk = args.part
        if chunk.type == "text-delta":
            stream: Stream | None = args.state.get(STATE_KEY)
            text = chunk.payload.get("text")
            if stream is not None and stream.redacts and type(text) is str and text:
                try:
                    out = stream.queue.take(chunk, text)
                except (PatternTimeoutError, StreamHoldLimitError) as exc:
                    self._processor._stopped(args, exc)
                if out is None or type(out) is Chunk:  # held, or released as one chunk
                    return out
                if isinstance(out, Release):
                    return self._processor._release(stream, out, args)
                return out
        return self._processor.process_output_stream(args)

"""BatchPartsProcessor: fewer, larger text chunks for the stream consumer, with nothing lost or reordered."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from procflow._messages.chunk import Chunk
from procflow.errors import ConfigurationError
from procflow.processors._args import ProcessOutputStreamArgs, StreamResult
from procflow.processors._base import ProcessorBase

__all__ = ["BatchPartsProcessor"]


class BatchPartsProcessor(ProcessorBase):
    """Batches ``text-delta`` chunks into one chunk per ``batch_size`` deltas.

    A batch is emitted when it holds ``batch_size`` parts, when a non-text chunk arrives (with
    ``emit_on_non_text=True``, the default: the joined text first, then the chunk), when a chunk arrives
    more than ``max_wait_time`` seconds after the first buffered delta, and at the end of the stream
    (``flush_output_stream``). No timer task runs: the wait is checked when chunks arrive, so a stream
    that pauses holds its batch until the next chunk or the end.

    Nothing is lost or reordered. Consecutive deltas of the same text block (same ``id``) are joined;
    with ``emit_on_non_text=False`` non-text chunks wait in the batch in their place (counted as parts)
    and come out in order with the text around them. The processor also sees ``data-*`` chunks
    (``process_data_parts = True``) so that they cannot overtake buffered text.

    Args:
        batch_size: How many parts make a batch (``1`` passes every chunk straight through).
        max_wait_time: Seconds after the first buffered delta past which the next chunk flushes the
            batch; ``None`` (default) for no time limit.
        emit_on_non_text: Flush the batch before each non-text chunk (default ``True``).
        clock: Returns the current time in seconds (default ``time.monotonic``); tests pass a fake.
        id: The processor id (default ``"batch-parts"``).
    """

    name = "BatchPartsProcessor"
    process_data_parts = True

    def __init__(
        self,
        *,
        batch_size: int = 5,
        max_wait_time: float | None = None,
        emit_on_non_text: bool = True,
        clock: Callable[[], float] = time.monotonic,
        id: str = "batch-parts",
    ) -> None:
        if type(batch_size) is not int or batch_size < 1:
            raise ConfigurationError(
                f"BatchPartsProcessor batch_size must be an int >= 1, got {batch_size!r}"
            )
        if max_wait_time is not None and (
            isinstance(max_wait_time, bool) or not isinstance(max_wait_time, int | float) or max_wait_time < 0
        ):
            raise ConfigurationError(
                f"BatchPartsProcessor max_wait_time must be None or seconds >= 0, got {max_wait_time!r}"
            )
        self.id = id
        self.batch_size = batch_size
        self.max_wait_time = max_wait_time
        self.emit_on_non_text = emit_on_non_text
        self.clock = clock

    def __repr__(self) -> str:
        return f"BatchPartsProcessor(batch_size={self.batch_size}, id={self.id!r})"

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> StreamResult:
        """Buffer text deltas; return a batch (a list of chunks) when one is due, else ``None``."""
        state = args.state
        part = args.part
        buffer: list[Chunk] | None = state.get("buffer")
        if buffer is None:
            buffer = state["buffer"] = []
        is_text = part.type == "text-delta"
        if not is_text and self.emit_on_non_text:
            return [*_drain(state), part] if buffer else part
        if not buffer:
            if self.batch_size == 1 and is_text:
                return part
            state["started"] = self.clock()
        buffer.append(part)
        if len(buffer) >= self.batch_size or self._waited_too_long(state):
            return _drain(state)
        return None

    def _waited_too_long(self, state: dict[str, Any]) -> bool:
        if self.max_wait_time is None:
            return False
        return self.clock() - float(state["started"]) > self.max_wait_time

    def flush_output_stream(self, args: ProcessOutputStreamArgs) -> list[Chunk]:
        """End of stream: emit whatever is still buffered."""
        return _drain(args.state) if args.state.get("buffer") else []


def _drain(state: dict[str, Any]) -> list[Chunk]:
    """Empty the buffer, joining consecutive deltas of the same text block."""
    buffer: list[Chunk] = state["buffer"]
    state["buffer"] = []
    out: list[Chunk] = []
    pieces: list[str] = []
    for chunk in buffer:
        last = out[-1] if out else None
        if (
            last is not None
            and chunk.type == "text-delta"
            and last.type == "text-delta"
            and last.payload.get("id") == chunk.payload.get("id")
        ):
            pieces.append(chunk.text or "")
            continue
        _close(out, pieces)
        out.append(chunk)
        pieces = [chunk.text or ""] if chunk.type == "text-delta" else []
    _close(out, pieces)
    return out


def _close(out: list[Chunk], pieces: list[str]) -> None:
    """Give the last emitted delta the joined text of its run (a copy, so no caller's chunk is mutated)."""
    if len(pieces) > 1:
        first = out[-1]
        out[-1] = Chunk(first.type, {**first.payload, "text": "".join(pieces)}, first.transient)

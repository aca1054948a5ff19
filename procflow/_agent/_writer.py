"""The writer handed to hooks and tools: custom ``data-*`` chunks wait in a queue the loop drains."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from procflow._messages.chunk import Chunk
from procflow._messages.writer import coerce_custom_chunk

__all__ = ["ChunkWriter", "PendingChunks"]

PendingChunks = list[tuple[int, Chunk]]
"""Chunks written but not yet delivered, each with the stream hook index to start processing at."""


class ChunkWriter:
    """Queues ``writer.custom(...)`` chunks; the agent loop pushes them through the stream processors.

    Queueing (rather than pushing at once) keeps a stream processor that writes from being re-entered
    while it runs; the loop drains the queue right after the hook or chunk that wrote.

    Args:
        pending: The run's queue.
        start: The first stream hook the chunks go through: ``i + 1`` for the writer of stream hook
            ``i`` (so only *later* processors see what it wrote), ``0`` for everyone else.
    """

    __slots__ = ("_pending", "_start")

    def __init__(self, pending: PendingChunks, start: int = 0) -> None:
        self._pending = pending
        self._start = start

    async def custom(self, chunk: Mapping[str, Any] | Chunk) -> None:
        """Emit one ``data-*`` chunk; raise ``ChunkTypeError`` (a ``ValueError``)
        when its type does not start with ``data-``."""
        self._pending.append((self._start, coerce_custom_chunk(chunk)))

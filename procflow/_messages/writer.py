"""The writer handed to hooks and tools for emitting custom ``data-*`` chunks to the stream consumer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from procflow._messages.chunk import Chunk
from procflow.errors import ChunkTypeError

__all__ = ["StreamWriter", "coerce_custom_chunk"]


@runtime_checkable
class StreamWriter(Protocol):
    """Emits custom chunks: ``await writer.custom({"type": "data-status", "data": {...}})``."""

    async def custom(self, chunk: Mapping[str, Any] | Chunk) -> None:
        """Emit one ``data-*`` chunk to the stream consumer (through processors that asked for them)."""
        ...


def coerce_custom_chunk(chunk: Mapping[str, Any] | Chunk) -> Chunk:
    """Validate and convert what ``writer.custom()`` received into a :class:`Chunk`.

    Raises:
        ChunkTypeError: the type does not start with ``data-`` or the mapping has no ``type``.
    """
    if isinstance(chunk, Chunk):
        if not chunk.is_data:
            raise ChunkTypeError(
                f"custom chunk type {chunk.type!r} must start with 'data-' (e.g. 'data-status')"
            )
        return chunk
    kind = chunk.get("type")
    if not isinstance(kind, str):
        raise ChunkTypeError(
            "a custom chunk needs a 'type' starting with 'data-', e.g. {'type': 'data-status'}"
        )
    return Chunk.data(kind, chunk.get("data"), transient=bool(chunk.get("transient", False)))

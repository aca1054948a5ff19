"""Stream chunks: one part of a model's streamed output.

Chunks sit on the hot path (one per token or so), so they are slotted dataclasses with a plain dict
payload — cheap to build and JSON-serialisable with :meth:`Chunk.to_dict`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from procflow.errors import ChunkTypeError

__all__ = ["CHUNK_TYPES", "INSIDE_TEXT_TYPES", "TEXT_MARKER_TYPES", "Chunk", "is_data_type"]

CHUNK_TYPES = frozenset(
    {
        "start",
        "step-start",
        "text-start",
        "text-delta",
        "text-end",
        "reasoning-start",
        "reasoning-delta",
        "reasoning-end",
        "tool-call",
        "tool-call-delta",
        "tool-result",
        "source",
        "file",
        "step-finish",
        "finish",
        "error",
        "abort",
        "tripwire",
        "response-metadata",
    }
)
"""The built-in chunk types; application chunks use ``data-*`` types instead."""

INSIDE_TEXT_TYPES = frozenset(
    {"reasoning-start", "reasoning-delta", "reasoning-end", "source", "file", "response-metadata"}
)
"""Chunks that interrupt a text without ending it (``data-*`` chunks too): a stream processor holding
text back lets them pass ahead of it, so the text around them stays one text for it."""

TEXT_MARKER_TYPES = frozenset({"reasoning-start", "reasoning-end", "response-metadata"})
"""Those of them that leave no part in the message: a text they arrive inside stays one text part."""


def is_data_type(kind: str) -> bool:
    """Return whether ``kind`` names an application data chunk (``data-…``)."""
    return kind.startswith("data-")


@dataclass(slots=True)
class Chunk:
    """One streamed part: a ``type`` and its payload.

    ``text-delta`` and ``reasoning-delta`` carry ``{"text": ...}``; ``tool-call`` carries
    ``{"tool_call_id", "tool_name", "args"}``; ``finish`` carries ``{"finish_reason", "usage"}``;
    ``tripwire`` carries ``{"reason", "retry", "metadata", "processor_id"}``; ``data-*`` chunks carry
    ``{"data": ...}``. ``transient`` data chunks reach the consumer but are not stored in messages.
    """

    type: str
    payload: dict[str, Any] = field(default_factory=dict)
    transient: bool = False

    @classmethod
    def text_delta(cls, text: str, *, id: str = "0") -> Chunk:
        """Build a ``text-delta`` chunk."""
        return cls("text-delta", {"id": id, "text": text})

    @classmethod
    def data(cls, type: str, data: Any, *, transient: bool = False) -> Chunk:
        """Build a ``data-*`` chunk; ``type`` must start with ``data-``."""
        if not type.startswith("data-"):
            raise ChunkTypeError(f"custom chunk type {type!r} must start with 'data-' (e.g. 'data-status')")
        return cls(type, {"data": data}, transient)

    @property
    def text(self) -> str | None:
        """The text of a text or reasoning delta, else ``None``."""
        value = self.payload.get("text")
        return value if isinstance(value, str) else None

    @property
    def is_data(self) -> bool:
        """Whether this is an application ``data-*`` chunk."""
        return self.type.startswith("data-")

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict ``{"type": ..., "payload": ...}``."""
        out: dict[str, Any] = {"type": self.type, "payload": self.payload}
        if self.transient:
            out["transient"] = True
        return out

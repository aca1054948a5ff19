"""Tripwires: intentional stops raised by processors through ``abort()``.

A tripwire is a status, not a failure. The agent turns it into a ``tripwire`` chunk and
``result.tripwire``; it never reaches the caller of ``generate()``/``stream()`` as an exception.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["TripWire", "TripwireInfo"]


class TripWire(Exception):  # noqa: N818 - the seed's name, kept on purpose
    """Raised by ``abort(reason, retry=..., metadata=...)`` to stop processing.

    Attributes:
        reason: Human-readable reason, shown to the caller (and to the model on retry).
        retry: Whether the agent should ask the model again with ``reason`` as feedback.
        metadata: Structured data for downstream consumers (categories, scores, matches).
        processor_id: The id of the processor that raised it; set by the runner when missing.
        reported: Set by the runner once ``on_violation`` has fired, so it fires once per tripwire.
    """

    def __init__(
        self,
        reason: str,
        *,
        retry: bool = False,
        metadata: dict[str, Any] | None = None,
        processor_id: str | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry = retry
        self.metadata: dict[str, Any] = dict(metadata or {})
        self.processor_id = processor_id
        self.reported = False

    def info(self) -> TripwireInfo:
        """Return the tripwire as the status object callers see."""
        return TripwireInfo(
            reason=self.reason, retry=self.retry, metadata=self.metadata, processor_id=self.processor_id
        )

    def __repr__(self) -> str:
        return f"TripWire({self.reason!r}, retry={self.retry}, processor_id={self.processor_id!r})"


@dataclass(frozen=True, slots=True)
class TripwireInfo:
    """The caller-facing record of a tripwire: ``{reason, retry, metadata, processor_id}``."""

    reason: str
    retry: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    processor_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-ready payload used by ``tripwire`` chunks."""
        return {
            "reason": self.reason,
            "retry": self.retry,
            "metadata": self.metadata,
            "processor_id": self.processor_id,
        }

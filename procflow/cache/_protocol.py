"""The ``ServerCache`` protocol: the async key/value store response caches and guards share."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["ServerCache"]


@runtime_checkable
class ServerCache(Protocol):
    """An async key/value store with per-entry time-to-live.

    Values are plain data (JSON-ready: dicts, lists, strings, numbers, booleans, ``None``); what ``get``
    returns is a copy, never the object given to ``set``. Backends raise
    :class:`~procflow.errors.CacheError` subclasses on failure; callers decide whether that is fatal
    (``ResponseCache`` treats it as a miss).
    """

    async def get(self, key: str) -> Any | None:
        """Return the value stored under ``key``, or ``None`` when it is missing or expired."""
        ...

    async def set(self, key: str, value: Any, ttl: float | None = None) -> None:
        """Store ``value`` under ``key`` for ``ttl`` seconds (``None``: until evicted or deleted)."""
        ...

    async def delete(self, key: str) -> None:
        """Remove ``key`` if present."""
        ...

    async def clear(self) -> None:
        """Remove every entry this cache owns (for Redis: the keys under its prefix)."""
        ...

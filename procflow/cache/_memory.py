"""``InMemoryServerCache``: a process-local TTL + LRU cache with no background task."""

from __future__ import annotations

import marshal
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from procflow.cache._codec import Codec, Serializer
from procflow.errors import ConfigurationError

__all__ = ["InMemoryServerCache"]

Clock = Callable[[], float]


class InMemoryServerCache:
    """A :class:`ServerCache` in this process: time-to-live per entry, at most ``max_entries``, LRU.

    Expired entries are dropped when they are read (or evicted as least recently used), so no timer
    task runs.
    Values go through the same encoding as :class:`RedisCache` (JSON by default): a value that is not
    plain data fails here too, what comes back is what Redis would return, and readers always get a
    fresh copy.

    Args:
        max_entries: Entries kept at most; the least recently used one is evicted beyond it.
        default_ttl: Seconds an entry lives when ``set`` gives no ``ttl`` (``None``: no expiry).
        clock: Seconds as a float, monotonic (default :func:`time.monotonic`); tests inject their own.
        serializer: ``"json"`` (default) or ``"msgpack"``.
    """

    __slots__ = ("_clock", "_codec", "_entries", "default_ttl", "max_entries")

    def __init__(
        self,
        *,
        max_entries: int = 10_000,
        default_ttl: float | None = None,
        clock: Clock = time.monotonic,
        serializer: Serializer = "json",
    ) -> None:
        if not isinstance(max_entries, int) or max_entries < 1:
            raise ConfigurationError(f"max_entries must be a positive integer, got {max_entries!r}")
        _check_ttl(default_ttl)
        self.max_entries = max_entries
        self.default_ttl = default_ttl
        self._clock = clock
        self._codec = Codec(serializer)
        self._entries: OrderedDict[str, tuple[float | None, bytes]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    async def get(self, key: str) -> Any | None:
        """Return a copy of the live value under ``key``, or ``None``."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, data = entry
        if expires is not None and self._clock() >= expires:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return marshal.loads(data)

    async def set(self, key: str, value: Any, ttl: float | None = None) -> None:
        """Store ``value`` for ``ttl`` seconds (default: ``default_ttl``); evict beyond ``max_entries``."""
        _check_ttl(ttl)
        # Round-trip through the codec as Redis would (refusing what it cannot store, turning tuples into
        # lists…), then keep the result in marshal form: copying it out on every read is 2-3x cheaper
        # than decoding JSON. The bytes never leave this process, so no untrusted data is unmarshalled.
        data = marshal.dumps(self._codec.decode(self._codec.encode(value)))
        ttl = self.default_ttl if ttl is None else ttl
        expires = None if ttl is None else self._clock() + ttl
        entries = self._entries
        entries[key] = (expires, data)
        entries.move_to_end(key)
        if len(entries) > self.max_entries:
            self._evict()

    async def delete(self, key: str) -> None:
        """Remove ``key`` if present."""
        self._entries.pop(key, None)

    async def clear(self) -> None:
        """Remove every entry."""
        self._entries.clear()

    def _evict(self) -> None:
        """Drop least recently used entries until within ``max_entries`` (expired ones go on read)."""
        entries = self._entries
        while len(entries) > self.max_entries:
            entries.popitem(last=False)


def _check_ttl(ttl: float | None) -> None:
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float) or ttl <= 0):
        raise ConfigurationError(f"ttl must be a positive number of seconds or None, got {ttl!r}")

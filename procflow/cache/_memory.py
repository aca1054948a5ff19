"""``InMemoryServerCache``: a process-local TTL + LRU cache with no background task."""

from __future__ import annotations

import marshal
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

from procflow.cache._codec import Codec, Serializer
from procflow.errors import ConfigurationError

__all__ = ["InMemoryServerCache"]

Clock = Callable[[], float]
T = TypeVar("T")


_Entry = tuple[float | None, bytes, tuple[Callable[[Any], Any], Any] | None]
"""Expiry (or ``None``), the value in marshal form, and ``(prepare, view)`` once a view was made."""


class InMemoryServerCache:
    """A :class:`ServerCache` in this process: time-to-live per entry, at most ``max_entries``, LRU.

    Expired entries are dropped when they are read (or evicted as least recently used), so no timer
    task runs.
    Values go through the same encoding as :class:`RedisCache` (JSON by default): a value that is not
    plain data fails here too, what comes back is what Redis would return, and readers always get a
    fresh copy.

    procflow's own readers (``ResponseCache``) may also keep a *view* next to an entry: an immutable
    object derived from the stored value once, on write, and handed back uncopied on later reads
    (:meth:`_set_with_view`, :meth:`_view`), so a hit does not decode the value again. ``get`` is not
    affected by it.

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
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    async def get(self, key: str) -> Any | None:
        """Return a copy of the live value under ``key``, or ``None``."""
        entry = self._live(key)
        return None if entry is None else marshal.loads(entry[1])

    async def set(self, key: str, value: Any, ttl: float | None = None) -> None:
        """Store ``value`` for ``ttl`` seconds (default: ``default_ttl``); evict beyond ``max_entries``."""
        self._store(key, value, ttl, None)

    def _set_with_view(self, key: str, value: Any, ttl: float | None, prepare: Callable[[Any], T]) -> None:
        """``set``, and keep ``prepare(copy of the value)`` as the entry's view (procflow-internal).

        The view must be immutable, or never handed out by its reader without copying: :meth:`_view`
        returns this very object to every reader until the entry is replaced, deleted, evicted or
        expired.
        """
        self._store(key, value, ttl, prepare)

    def _view(self, key: str, prepare: Callable[[Any], T]) -> T | None:
        """The view of the live entry under ``key`` (``None`` when there is none), uncopied.

        An entry written by plain ``set`` (or with another ``prepare``) gets its view from ``prepare``
        on this read, kept for the next ones.
        """
        entry = self._entries.get(key)  # as _live does, inline: this is a cache hit's hot path
        if entry is None:
            return None
        if entry[0] is not None and self._clock() >= entry[0]:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        made = entry[2]
        if made is not None and made[0] is prepare:
            return made[1]  # type: ignore[no-any-return]
        view = prepare(marshal.loads(entry[1]))
        self._entries[key] = (entry[0], entry[1], (prepare, view))
        return view

    def _live(self, key: str) -> _Entry | None:
        """The entry under ``key`` unless it expired (then it is dropped); marks it recently used."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires = entry[0]
        if expires is not None and self._clock() >= expires:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return entry

    def _store(self, key: str, value: Any, ttl: float | None, prepare: Callable[[Any], Any] | None) -> None:
        _check_ttl(ttl)
        # Round-trip through the codec as Redis would (refusing what it cannot store, turning tuples into
        # lists…), then keep the result in marshal form: copying it out on every read is 2-3x cheaper
        # than decoding JSON. The bytes never leave this process, so no untrusted data is unmarshalled.
        plain = self._codec.decode(self._codec.encode(value))
        data = marshal.dumps(plain)
        view = None if prepare is None else (prepare, prepare(plain))
        ttl = self.default_ttl if ttl is None else ttl
        expires = None if ttl is None else self._clock() + ttl
        entries = self._entries
        entries[key] = (expires, data, view)
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

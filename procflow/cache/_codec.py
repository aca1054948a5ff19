"""Safe value encodings for caches: JSON or msgpack, never pickle (a cache must not run code on read)."""

from __future__ import annotations

import json
from typing import Any, Literal

from procflow.errors import CacheValueError, ConfigurationError

__all__ = ["Codec", "Serializer", "codec_for"]

Serializer = Literal["json", "msgpack"]
"""How a cache encodes values: ``json`` (default) or ``msgpack`` (needs ``pip install msgpack``)."""


class Codec:
    """Encodes JSON-ready values to bytes and back."""

    __slots__ = ("_dumps", "_loads", "name")

    def __init__(self, name: Serializer) -> None:
        self.name = name
        if name == "json":
            self._dumps = _json_dumps
            self._loads = json.loads
        elif name == "msgpack":
            try:
                import msgpack  # type: ignore[import-untyped]
            except ImportError as exc:
                raise ConfigurationError(
                    "serializer='msgpack' needs the msgpack package: pip install msgpack "
                    "(or use serializer='json')"
                ) from exc
            self._dumps = msgpack.packb
            self._loads = msgpack.unpackb
        else:
            raise ConfigurationError(f"serializer must be 'json' or 'msgpack', got {name!r}")

    def encode(self, value: Any) -> bytes:
        """Encode ``value``; raise :class:`CacheValueError` when it is not plain data."""
        try:
            return self._dumps(value)
        except (TypeError, ValueError, OverflowError) as exc:
            raise CacheValueError(
                f"cache values must be plain {self.name} data (dict, list, str, int, float, bool, None); "
                f"got something else ({type(exc).__name__}); convert it first, e.g. with .model_dump()"
            ) from exc

    def decode(self, data: bytes | str) -> Any:
        """Decode what :meth:`encode` produced."""
        return self._loads(data)


def _json_dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def codec_for(name: Serializer) -> Codec:
    """The codec named ``name`` (``json`` or ``msgpack``)."""
    return Codec(name)

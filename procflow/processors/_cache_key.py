"""The deterministic response-cache key: a digest over the inputs that change a model step's answer."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from pydantic import BaseModel

from procflow.errors import ConfigurationError

__all__ = ["INTERNAL_KEY_PREFIX", "KEY_VERSION", "ModelIdentity", "ResponseCacheKeyInputs", "build_key"]

KEY_VERSION = "rc1"
"""Prefix of every default key; bumped if the derivation ever changes, so old entries are never misread."""

INTERNAL_KEY_PREFIX = "procflow__"
"""Mapping keys with this prefix are procflow's own bookkeeping and never part of a key."""


class ModelIdentity(TypedDict, total=False):
    """Which model answers: provider, model id and the provider interface's specification version."""

    provider: str
    model_id: str
    spec_version: str | None


class ResponseCacheKeyInputs(TypedDict):
    """What the default key is derived from, and what a custom ``key`` function receives."""

    agent_id: str | None
    step_number: int
    scope: str | None
    model: ModelIdentity
    prompt: Sequence[Any]


def build_key(inputs: Mapping[str, Any]) -> str:
    """``rc1:<sha256>`` over ``inputs``: dict order and procflow-internal keys do not matter.

    Strings enter as their UTF-8 bytes with a length prefix (no JSON document is built, so a 100 KB
    prompt is encoded and hashed once); ``bytes`` anywhere (inline images or files) enter as the
    digest of their contents.
    """
    out: list[bytes] = []
    _feed(out, inputs)
    digest = hashlib.sha256(b"".join(out)).hexdigest()
    return f"{KEY_VERSION}:{digest}"


def _first(item: tuple[str, Any]) -> str:
    return item[0]


def _feed(out: list[bytes], value: Any) -> None:
    kind = type(value)
    if kind is str or (kind is not dict and kind is not list and isinstance(value, str)):
        data = value.encode("utf-8", "surrogatepass")
        out.append(b"s%d:" % len(data))
        out.append(data)
    elif kind is dict or (kind is not list and isinstance(value, Mapping)):
        items = sorted(
            ((str(k), v) for k, v in value.items() if not str(k).startswith(INTERNAL_KEY_PREFIX)),
            key=_first,
        )
        out.append(b"{%d:" % len(items))
        for k, v in items:
            _feed(out, k)
            _feed(out, v)
        out.append(b"}")
    elif kind is list or kind is tuple:
        out.append(b"[%d:" % len(value))
        for item in value:
            _feed(out, item)
        out.append(b"]")
    elif value is None:
        out.append(b"n")
    elif kind is bool:
        out.append(b"T" if value else b"F")
    elif isinstance(value, BaseModel):
        _feed(out, value.__dict__)  # the fields, as model_dump() would give them, without copying
    elif isinstance(value, int):
        out.append(b"i%d;" % value)
    elif isinstance(value, float):
        out.append(b"f" + repr(value).encode() + b";")
    elif isinstance(value, bytes | bytearray | memoryview):
        out.append(b"b" + hashlib.sha256(value).digest())
    elif isinstance(value, Sequence):
        _feed(out, list(value))
    else:
        raise ConfigurationError(
            f"cannot derive a cache key from a {type(value).__name__}: key inputs must be JSON-like data "
            "(str, int, float, bool, None, bytes, lists, dicts or pydantic models)"
        )

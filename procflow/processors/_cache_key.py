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

    Strings are hashed by their UTF-8 bytes without building one big JSON document (a 100 KB prompt is
    read once); ``bytes`` anywhere (inline images or files) enter as the digest of their contents.
    """
    h = hashlib.sha256()
    _feed(h, inputs)
    return f"{KEY_VERSION}:{h.hexdigest()}"


def _first(item: tuple[str, Any]) -> str:
    return item[0]


def _feed(h: Any, value: Any) -> None:
    update = h.update
    if isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")
        update(b"s%d:" % len(data))
        update(data)
    elif value is None:
        update(b"n")
    elif value is True or value is False:
        update(b"T" if value else b"F")
    elif isinstance(value, int):
        update(b"i%d;" % value)
    elif isinstance(value, float):
        update(b"f" + repr(value).encode() + b";")
    elif isinstance(value, BaseModel):
        _feed(h, value.__dict__)  # the fields, as model_dump() would give them, without copying
    elif isinstance(value, Mapping):
        items = sorted(
            ((str(k), v) for k, v in value.items() if not str(k).startswith(INTERNAL_KEY_PREFIX)),
            key=_first,
        )
        update(b"{%d:" % len(items))
        for k, v in items:
            _feed(h, k)
            _feed(h, v)
        update(b"}")
    elif isinstance(value, bytes | bytearray | memoryview):
        update(b"b" + hashlib.sha256(value).digest())
    elif isinstance(value, Sequence):
        update(b"[%d:" % len(value))
        for item in value:
            _feed(h, item)
        update(b"]")
    else:
        raise ConfigurationError(
            f"cannot derive a cache key from a {type(value).__name__}: key inputs must be JSON-like data "
            "(str, int, float, bool, None, bytes, lists, dicts or pydantic models)"
        )

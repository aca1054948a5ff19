"""The per-request key/value store handed to every processor hook."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["JUDGE_USAGE_KEY", "RESOURCE_ID_KEY", "STRUCTURED_OUTPUT_KEY", "THREAD_ID_KEY", "RequestContext"]

RESOURCE_ID_KEY = "procflow__resource_id"
"""Key under which the resource (user/tenant) id is stored; memory and caches scope by it."""

THREAD_ID_KEY = "procflow__thread_id"
"""Key under which the conversation thread id is stored."""

JUDGE_USAGE_KEY = "procflow__judge_usage"
"""Key of the list where LLM-backed guards record the usage of their judge calls (for cost guards)."""

STRUCTURED_OUTPUT_KEY = "procflow__structured_output"
"""Key of the object a ``StructuredOutputProcessor`` made (``GenerateResult.object`` reads it)."""


class RequestContext:
    """A mutable mapping of per-request values (resource id, thread id, per-call options).

    Build one per ``generate()``/``stream()`` call; processors read options from it and may add their own.
    """

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        self._values: dict[str, Any] = dict(values or {})

    def get(self, key: str, default: Any = None) -> Any:
        """Return the value stored under ``key``, or ``default``."""
        return self._values.get(key, default)

    def set(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key``."""
        self._values[key] = value

    def has(self, key: str) -> bool:
        """Return whether ``key`` is set."""
        return key in self._values

    def delete(self, key: str) -> None:
        """Remove ``key`` if present."""
        self._values.pop(key, None)

    def keys(self) -> list[str]:
        """Return the keys, in insertion order."""
        return list(self._values)

    def to_dict(self) -> dict[str, Any]:
        """Return a shallow copy of the values."""
        return dict(self._values)

    @property
    def resource_id(self) -> str | None:
        """The resource (user/tenant) id, when set."""
        value = self._values.get(RESOURCE_ID_KEY)
        return value if isinstance(value, str) else None

    @property
    def thread_id(self) -> str | None:
        """The thread id, when set."""
        value = self._values.get(THREAD_ID_KEY)
        return value if isinstance(value, str) else None

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"RequestContext({sorted(self._values)})"

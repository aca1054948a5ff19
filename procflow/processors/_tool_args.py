"""The string values inside tool-call arguments, checked like any other text.

Tool-call arguments are structured data, yet they carry the same e-mail addresses and keys as the text
around them (``lookup_customer(email=...)``): every string inside them, at any depth of dicts and
lists, is checked on its own and rebuilt in place when redacted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["ArgPath", "map_strings"]

ArgPath = tuple[str | int, ...]
"""Where a string sits inside the arguments: keys and list indexes from the top."""


def map_strings(value: Any, change: Callable[[str, ArgPath], str | None], path: ArgPath = ()) -> Any:
    """``value`` with each string ``s`` at ``path`` replaced by ``change(s, path)`` when that is not
    ``None``; the same object when nothing changed (so callers can test ``is``)."""
    if isinstance(value, str):
        new = change(value, path) if value else None
        return value if new is None else new
    if isinstance(value, dict):
        out: dict[Any, Any] | None = None
        for key, item in value.items():
            new_item = map_strings(item, change, (*path, str(key)))
            if new_item is not item:
                out = out if out is not None else dict(value)
                out[key] = new_item
        return value if out is None else out
    if isinstance(value, list):
        items: list[Any] | None = None
        for index, item in enumerate(value):
            new_item = map_strings(item, change, (*path, index))
            if new_item is not item:
                items = items if items is not None else list(value)
                items[index] = new_item
        return value if items is None else items
    return value

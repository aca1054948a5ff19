"""Decoding untrusted JSON without crashing and without quoting it.

``json.loads`` alone raises ``RecursionError`` on deep nesting and ``ValueError`` on a 5,000-digit
integer, and accepts ``NaN``, ``Infinity``, ``1e999`` and lone surrogate escapes (``"\\ud800"``), which
cannot be written back as JSON or UTF-8. :func:`decode_json` turns each of these into a
:class:`JsonInputError` that says what is wrong and where (a field path, a type, a length), never the
value itself.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from procflow.errors import ProcflowError

__all__ = ["MAX_DEPTH", "JsonInputError", "check_value", "decode_json", "describe", "field_path"]

MAX_DEPTH = 100
"""Arrays and objects nested deeper than this are rejected (processors walk values recursively)."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class JsonInputError(ProcflowError, ValueError):
    """What is wrong with a JSON text, in words that quote none of it.

    Attributes:
        problem: The description, starting with the field path when there is one.
    """

    def __init__(self, problem: str) -> None:
        self.problem = problem
        super().__init__(problem)


class _RejectedError(ValueError):
    """Raised from json's hooks; becomes a JsonInputError with the path."""


def _reject_constant(name: str) -> Any:
    raise _RejectedError(f"{name} is not a JSON number; write null or a finite number")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _RejectedError(f"a number of {len(text)} characters is too large for a 64-bit float")
    return value


# Built once: json.loads with hooks builds a decoder per call. ``decode`` keeps no state between calls.
_DECODE = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float).decode


def decode_json(text: str, *, path: str = "") -> Any:
    """Decode ``text``, rejecting what cannot be processed and written back.

    Args:
        text: The JSON text.
        path: Where the text sits (``messages[2].tool_calls[0].function.arguments``), for the messages.

    Raises:
        JsonInputError: invalid JSON, nesting deeper than :data:`MAX_DEPTH`, an integer over Python's
            digit limit, a non-finite number, or a lone surrogate.
    """
    where = f"{path}: " if path else ""
    try:
        if text.startswith("\ufeff"):  # what json.loads says about a byte-order mark
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        value = _DECODE(text)
    except json.JSONDecodeError as exc:
        raise JsonInputError(f"{where}invalid JSON: {exc.msg} (column {exc.colno})") from None
    except RecursionError:
        raise JsonInputError(f"{where}nested deeper than {MAX_DEPTH} levels") from None
    except _RejectedError as exc:
        raise JsonInputError(f"{where}{exc}") from None
    except ValueError:
        # The only other ValueError json raises: an integer longer than sys.get_int_max_str_digits().
        raise JsonInputError(f"{where}an integer has more digits than Python converts (4300)") from None
    # The walk is only needed when the text could hold a problem: enough brackets to nest too deep,
    # or a \uD800-\uDFFF escape (decoded UTF-8 holds no surrogates otherwise).
    deep = text.count("[") + text.count("{") > MAX_DEPTH
    if deep or _SURROGATE_ESCAPE.search(text):
        check_value(value, path=path)
    return value


def check_value(value: Any, *, path: str = "") -> None:
    """Raise :class:`JsonInputError` for nesting deeper than :data:`MAX_DEPTH` or a lone surrogate."""
    stack: list[tuple[Any, int, tuple[str | int, ...]]] = [(value, 0, ())]
    while stack:
        item, depth, at = stack.pop()
        if isinstance(item, str):
            found = _SURROGATE.search(item)
            if found is not None:
                raise JsonInputError(
                    f"{field_path(path, at)}: a lone surrogate (\\u{ord(found.group()):04x}) at character "
                    f"{found.start()} of {len(item)}; text must be valid Unicode"
                )
            continue
        if isinstance(item, dict | list) and depth >= MAX_DEPTH:
            raise JsonInputError(f"{field_path(path, at)}: nested deeper than {MAX_DEPTH} levels")
        if isinstance(item, dict):
            for key, child in item.items():
                if _SURROGATE.search(key):
                    raise JsonInputError(f"{field_path(path, at)}: a key holds a lone surrogate")
                stack.append((child, depth + 1, (*at, key)))
        elif isinstance(item, list):
            stack.extend((child, depth + 1, (*at, index)) for index, child in enumerate(item))


def field_path(base: str, at: tuple[str | int, ...]) -> str:
    """``base`` followed by ``at`` as ``.key`` and ``[index]`` steps (long paths are shortened)."""
    steps = [f"[{step}]" if isinstance(step, int) else f".{_key(step)}" for step in at]
    if len(steps) > 8:
        steps = [*steps[:4], f"…({len(steps) - 6} more)…", *steps[-2:]]
    text = "".join(steps)
    return base + text if base else text.removeprefix(".") or "the line"


def _key(key: str) -> str:
    """A key as written in a path: itself when it is a short identifier, else its length only."""
    if len(key) <= 40 and key.isidentifier():
        return key
    return f"<key of {_count(len(key), 'character')}>"


def describe(value: Any) -> str:
    """The JSON kind of ``value`` (with a length for strings, arrays and objects), never its content."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return f"a string of {_count(len(value), 'character')}"
    if isinstance(value, list):
        return f"an array of {_count(len(value), 'item')}"
    if isinstance(value, dict):
        return f"an object with {_count(len(value), 'key')}"
    return f"a {type(value).__name__}"


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"

"""Reading conversations from JSONL with line numbers, and writing them back line by line."""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from procflow._chat.format import Conversation, ConversationFormatError, parse_conversation
from procflow._chat.json_input import JsonInputError, decode_json

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "JsonlWriter",
    "ReadItem",
    "parse_line",
    "read_conversations",
    "read_raw_lines",
    "too_long_problem",
]


@dataclass(frozen=True, slots=True)
class ReadItem:
    """One non-blank input line: a conversation, or the error that line has.

    Attributes:
        line: The 1-based line number.
        conversation: The parsed conversation, when the line is valid.
        error: What is wrong with the line, when it is not.
        offset: Bytes consumed so far (for progress reporting).
    """

    line: int
    conversation: Conversation | None
    error: ConversationFormatError | None
    offset: int


DEFAULT_MAX_LINE_BYTES = 10_000_000
"""The longest line read (``--max-line-size``); longer lines are rejected without being parsed."""

_SKIP_CHUNK = 1 << 20


def read_conversations(
    stream: IO[bytes], *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[ReadItem]:
    """Yield every non-blank line of ``stream`` as a conversation or a line-numbered error.

    A line longer than ``max_line_bytes`` is read no further than the limit (the rest is skipped
    unparsed) and yields a size error; no line is ever held in memory beyond the limit.
    """
    for number, raw, error, offset in read_raw_lines(stream, max_line_bytes=max_line_bytes):
        if raw is None:
            yield ReadItem(number, None, error, offset)
        else:
            yield ReadItem(number, *parse_line(raw, number), offset)


def read_raw_lines(
    stream: IO[bytes], *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[tuple[int, bytes | None, ConversationFormatError | None, int]]:
    """Yield ``(line number, raw bytes, None, offset)`` for every non-blank line, unparsed.

    An over-long line yields ``(line number, None, size error, offset)`` instead (see
    :func:`read_conversations`); :func:`parse_line` turns the bytes into a conversation.
    """
    offset = 0
    number = 0
    while raw := stream.readline(max_line_bytes + 1):
        number += 1
        offset += len(raw)
        if len(raw) > max_line_bytes and not raw.endswith(b"\n"):
            skipped, length = _skip_line(stream)
            offset += skipped
            length += len(raw)
            error = ConversationFormatError(too_long_problem(length, max_line_bytes), line=number)
            yield number, None, error, offset
            continue
        if not raw.strip():
            continue
        yield number, raw, None, offset


def too_long_problem(length: int, limit: int) -> str:
    """The error of a line of ``length`` bytes (its newline not counted), over the ``limit``."""
    return (
        f"the line is {length:,} bytes, over the limit of {limit:,} bytes (--max-line-size); "
        "it was not parsed"
    )


def _skip_line(stream: IO[bytes]) -> tuple[int, int]:
    """Read to the end of the current line in bounded pieces; return (bytes read, of them not newline)."""
    skipped = 0
    while piece := stream.readline(_SKIP_CHUNK):
        skipped += len(piece)
        if piece.endswith(b"\n"):
            return skipped, skipped - 1
    return skipped, skipped


def parse_line(raw: bytes, number: int) -> tuple[Conversation | None, ConversationFormatError | None]:
    """Parse one raw input line (line ``number``) into a conversation, or the error it has."""
    try:
        text = raw.rstrip(b"\r\n").decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, ConversationFormatError(f"not UTF-8 text (byte {exc.start})", line=number)
    try:
        record: Any = decode_json(text)
    except JsonInputError as exc:
        return None, ConversationFormatError(exc.problem, line=number)
    try:
        return parse_conversation(record, line=number, key_texts=True), None
    except ConversationFormatError as exc:
        return None, exc


class JsonlWriter:
    """Writes one JSON record per line, flushed at once or (``flush_every``) on the first write that
    many seconds after the last flush; :meth:`flush` writes out the rest (a line may wait for the next
    write or that call).

    Args:
        stream: Where the lines go.
        flush_every: ``0`` (default) flushes every line; a number of seconds flushes a line only once
            that long has passed since the last flush, sparing a system call per line on an input
            that never waits (a file). The caller flushes at the end, and when it stops early.
    """

    __slots__ = ("_every", "_flushed", "_stream", "written")

    def __init__(self, stream: IO[str], *, flush_every: float = 0.0) -> None:
        self._stream = stream
        self._every = flush_every
        self._flushed = -math.inf
        self.written = 0

    def write(self, record: dict[str, Any]) -> None:
        """Write ``record`` as one line (and flush, as ``flush_every`` says).

        Raises:
            ConversationFormatError: the record cannot be written as JSON in UTF-8 (a processor put a
                non-finite number, a lone surrogate or a cycle into it); nothing is written then.
        """
        try:
            line = _ENCODE(record) + "\n"
            line.encode("utf-8")
        except (ValueError, UnicodeEncodeError, RecursionError) as exc:
            why = "a lone surrogate" if isinstance(exc, UnicodeEncodeError) else type(exc).__name__
            raise ConversationFormatError(
                f"the processed conversation cannot be written as JSON ({why})"
            ) from None
        self._stream.write(line)
        self.written += 1
        if self._every:
            now = time.monotonic()
            if now - self._flushed < self._every:
                return
            self._flushed = now
        self._stream.flush()

    def flush(self) -> None:
        """Flush what was written."""
        self._stream.flush()


def _plain(value: Any) -> Any:
    """JSON for what processors may put in metadata: pydantic models, dataclasses, sets; else its text."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)


# Built once: json.dumps with options builds an encoder per call. ``encode`` keeps no state.
_ENCODE = json.JSONEncoder(ensure_ascii=False, allow_nan=False, default=_plain).encode

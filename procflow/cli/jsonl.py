"""Reading conversations from JSONL with line numbers, and writing them back line by line."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from procflow.cli.chat_format import Conversation, ConversationFormatError, parse_conversation

__all__ = ["JsonlWriter", "ReadItem", "read_conversations"]


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


def read_conversations(stream: IO[bytes]) -> Iterator[ReadItem]:
    """Yield every non-blank line of ``stream`` as a conversation or a line-numbered error."""
    offset = 0
    for number, raw in enumerate(stream, start=1):
        offset += len(raw)
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            error = ConversationFormatError(f"not UTF-8 text (byte {exc.start})", line=number)
            yield ReadItem(number, None, error, offset)
            continue
        try:
            record: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            error = ConversationFormatError(f"invalid JSON: {exc.msg} (column {exc.colno})", line=number)
            yield ReadItem(number, None, error, offset)
            continue
        try:
            yield ReadItem(number, parse_conversation(record, line=number), None, offset)
        except ConversationFormatError as exc:
            yield ReadItem(number, None, exc, offset)


class JsonlWriter:
    """Writes one JSON record per line and flushes it at once, so an interrupted run loses nothing."""

    __slots__ = ("_stream", "written")

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self.written = 0

    def write(self, record: dict[str, Any]) -> None:
        """Write ``record`` as one line and flush."""
        self._stream.write(json.dumps(record, ensure_ascii=False, default=_plain) + "\n")
        self._stream.flush()
        self.written += 1


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

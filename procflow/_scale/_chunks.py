"""The parent's reading for ``procflow run --workers N``: the input cut into blocks of whole lines.

The parent never looks at a line on its own: it reads the input in large blocks, cuts each after its
last newline, and sends whole lines as one ``bytes`` block with the number of its first line. The
``--max-line-size`` check uses ``bytes`` operations only (the length of a block bounds the length of
every line in it, so a block shorter than the limit needs no check at all). A line over the limit is
skipped as it is read, never held whole, never sent: its place in the block is an empty line, and
the chunk names its number and the error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO

from procflow._cli.jsonl import too_long_problem

__all__ = ["CHUNK_BYTES", "Chunk", "iter_chunks"]

CHUNK_BYTES = 64 << 10
"""Bytes of input per chunk (about a hundred conversations): sending a chunk costs little beside
processing it, and the last chunks, which one worker may finish while the other waits, stay short."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """Consecutive input lines, as read.

    Attributes:
        start: The number of the first line in ``data`` (1-based).
        data: Whole lines, each ending in a newline but perhaps the input's last one.
        too_long: ``(line number, error)`` of each line over ``--max-line-size``; in ``data`` such a
            line is empty.
        offset: Input bytes consumed up to the end of the chunk (for the progress bar).
    """

    start: int
    data: bytes
    too_long: tuple[tuple[int, str], ...]
    offset: int


def iter_chunks(stream: IO[bytes], *, max_line_bytes: int, chunk_bytes: int = CHUNK_BYTES) -> Iterator[Chunk]:
    """Cut ``stream`` into chunks of about ``chunk_bytes`` of whole lines (see the module's docstring)."""
    read: Callable[[int], bytes] = getattr(stream, "read1", stream.read)
    builder = _Builder(max_line_bytes)
    carry = b""  # the start of a line whose newline has not been read yet (at most the limit)
    pushed = b""  # bytes read past an over-long line, still to be cut
    # Read up to a chunk's worth, or as much as the unfinished line holds (a long line is read in
    # doubling pieces, so it is not copied over and over).
    while block := pushed or read(max(chunk_bytes - builder.size, len(carry))):
        if not pushed:
            builder.read += len(block)
        pushed = b""
        data = carry + block if carry else block
        cut = data.rfind(b"\n") + 1
        if cut:
            builder.add_lines(data[:cut])
        carry = data[cut:]
        if len(carry) > max_line_bytes:
            length, pushed, consumed = _skip_line(read, len(carry), chunk_bytes)
            builder.read += consumed
            builder.add_too_long(length)
            carry = b""
        if builder.size >= chunk_bytes:
            yield builder.take(pending=len(carry) + len(pushed))
    if carry:
        builder.add_lines(carry)
    if builder.size:
        yield builder.take(pending=0)


def _skip_line(read: Callable[[int], bytes], length: int, size: int) -> tuple[int, bytes, int]:
    """Read past the end of an over-long line: (its length, what follows its newline, bytes read)."""
    consumed = 0
    while block := read(size):
        consumed += len(block)
        end = block.find(b"\n")
        if end >= 0:
            return length + end, block[end + 1 :], consumed
        length += len(block)
    return length, b"", consumed


class _Builder:
    """The chunk being gathered: its blocks, its over-long lines, the line numbers."""

    __slots__ = ("_limit", "_parts", "_start", "_too_long", "number", "read", "size")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._parts: list[bytes] = []
        self._too_long: list[tuple[int, str]] = []
        self._start = 1
        self.number = 1  # the number of the next line
        self.read = 0  # bytes read from the input so far
        self.size = 0

    def add_lines(self, data: bytes) -> None:
        """Add whole lines (the input's last line may lack its newline)."""
        if len(data) > self._limit + 1 and max(map(len, data.split(b"\n"))) > self._limit:
            data = self._drop_too_long(data)
        self._parts.append(data)
        self.size += len(data)
        self.number += data.count(b"\n") + (not data.endswith(b"\n"))

    def _drop_too_long(self, data: bytes) -> bytes:
        lines = data.split(b"\n")
        for index, line in enumerate(lines):
            if len(line) > self._limit:
                self._too_long.append((self.number + index, too_long_problem(len(line), self._limit)))
                lines[index] = b""
        return b"\n".join(lines)

    def add_too_long(self, length: int) -> None:
        """Add the line skipped by :func:`_skip_line`, ``length`` bytes without its newline."""
        self._too_long.append((self.number, too_long_problem(length, self._limit)))
        self._parts.append(b"\n")
        self.size += 1
        self.number += 1

    def take(self, *, pending: int) -> Chunk:
        """The chunk gathered so far; ``pending`` bytes read are not in it yet."""
        chunk = Chunk(self._start, b"".join(self._parts), tuple(self._too_long), self.read - pending)
        self._parts, self._too_long, self._start, self.size = [], [], self.number, 0
        return chunk

"""The blocks ``procflow run --workers N`` sends: the same lines, numbers and size errors as line by line."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st

from procflow._cli.jsonl import read_raw_lines
from procflow._scale._chunks import Chunk, iter_chunks


def _by_line(data: bytes, limit: int) -> list[tuple[int, bytes | None, str | None]]:
    """What the single-process reader yields: (number, line without its newline, size error)."""
    found: list[tuple[int, bytes | None, str | None]] = []
    for number, raw, error, _ in read_raw_lines(io.BytesIO(data), max_line_bytes=limit):
        line = None if raw is None else raw[:-1] if raw.endswith(b"\n") else raw
        found.append((number, line, None if error is None else error.problem))
    return found


def _from_chunks(chunks: list[Chunk]) -> list[tuple[int, bytes | None, str | None]]:
    """The same, read back from the chunks as a worker reads them."""
    found: list[tuple[int, bytes | None, str | None]] = []
    for chunk in chunks:
        too_long = dict(chunk.too_long)
        lines = chunk.data.split(b"\n")
        if chunk.data.endswith(b"\n"):
            lines.pop()
        for number, line in enumerate(lines, chunk.start):
            if number in too_long:
                assert line == b""
                found.append((number, None, too_long[number]))
            elif line.strip():
                found.append((number, line, None))
    return found


line_text = st.one_of(
    st.binary(max_size=30),
    st.sampled_from([b"", b" ", b"\r", b"\t \r", b"{}", b"x" * 45]),
)


@given(
    lines=st.lists(line_text, max_size=25),
    final_newline=st.booleans(),
    limit=st.integers(1, 40),
    chunk_bytes=st.integers(1, 70),
)
def test_chunks_hold_every_line_with_its_number_and_every_size_error(
    lines: list[bytes], final_newline: bool, limit: int, chunk_bytes: int
) -> None:
    """For any lines, line-size limit and block size: the lines, numbers and errors of read_raw_lines."""
    data = b"\n".join(line.replace(b"\n", b"") for line in lines) + (
        b"\n" if final_newline and lines else b""
    )
    chunks = list(iter_chunks(io.BytesIO(data), max_line_bytes=limit, chunk_bytes=chunk_bytes))
    assert _from_chunks(chunks) == _by_line(data, limit)
    offsets = [chunk.offset for chunk in chunks]
    assert offsets == sorted(offsets)
    assert not chunks or offsets[-1] == len(data)
    assert [c.start for c in chunks[1:]] == [
        c.start + c.data.count(b"\n") + (not c.data.endswith(b"\n")) for c in chunks[:-1]
    ]


def test_no_chunk_holds_a_line_over_the_limit() -> None:
    """A 3 MB line over a 1 KB limit is skipped as read: no chunk carries it, its error names its size."""
    data = b'{"messages": []}\n' + b"x" * 3_000_000 + b"\n" + b'{"messages": []}'
    chunks = list(iter_chunks(io.BytesIO(data), max_line_bytes=1000, chunk_bytes=4096))
    assert max(len(chunk.data) for chunk in chunks) < 5000
    [(number, problem)] = [error for chunk in chunks for error in chunk.too_long]
    assert number == 2
    assert "3,000,000 bytes, over the limit of 1,000 bytes" in problem
    assert _from_chunks(chunks) == _by_line(data, 1000)

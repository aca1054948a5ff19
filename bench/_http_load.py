"""The gateway bench's load generator: streams over keep-alive HTTP/1.1 connections, with no HTTP library.

A paced stream is tens of events a second, and the load generator reads each one as it arrives. Read
through httpx, an event costs the load generator about as much CPU as it costs the gateway (httpx,
httpcore, h11 and anyio's stream each take a turn), so at 200 paced streams the load generator and the
gateway would compete for the same two cores and the direct baseline would already be saturated. Here
a stream is one write of the request and plain socket reads until the chunked body's last chunk: the
answer is decoded once, at the end, to check it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import anyio
import anyio.abc
import httpx

__all__ = ["Answer", "LoadConnection"]

_READ = 65536


@dataclass(frozen=True, slots=True)
class Answer:
    """One response: its status and its (de-chunked) body."""

    status: int
    body: bytes


class LoadConnection:
    """One keep-alive connection to ``url``, sending the same JSON request again and again.

    A connection the server closed is opened again on the next request. Errors propagate (an
    ``OSError``, ``anyio.EndOfStream``, …); the connection is then dropped.
    """

    def __init__(self, url: str, body: dict[str, object]) -> None:
        parsed = httpx.URL(url)
        self._host, self._port = parsed.host, parsed.port or 80
        payload = json.dumps(body).encode()
        head = (
            f"POST {parsed.raw_path.decode()} HTTP/1.1\r\nHost: {self._host}:{self._port}\r\n"
            f"Content-Type: application/json\r\nAccept: text/event-stream\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n"
        )
        self._request = head.encode() + payload
        self._stream: anyio.abc.SocketStream | None = None

    async def send(self) -> Answer:
        """Send the request and read the whole answer."""
        if self._stream is None:
            self._stream = await anyio.connect_tcp(self._host, self._port)
        stream = self._stream
        try:
            await stream.send(self._request)
            answer, keep = await _read_answer(stream)
        except BaseException:
            await self.aclose()
            raise
        if not keep:
            await self.aclose()
        return answer

    async def aclose(self) -> None:
        """Close the connection (a later :meth:`send` opens a new one)."""
        stream, self._stream = self._stream, None
        if stream is not None:
            await stream.aclose()


async def _read_answer(stream: anyio.abc.SocketStream) -> tuple[Answer, bool]:
    buffer = bytearray()
    while (end := buffer.find(b"\r\n\r\n")) < 0:
        buffer += await stream.receive(_READ)
    lines = bytes(buffer[:end]).split(b"\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip().lower()
    rest = buffer[end + 4 :]
    keep = headers.get(b"connection") != b"close"
    if b"content-length" in headers:
        length = int(headers[b"content-length"])
        while len(rest) < length:
            rest += await stream.receive(_READ)
        return Answer(status, bytes(rest[:length])), keep
    if headers.get(b"transfer-encoding") != b"chunked":
        raise ValueError("the answer has neither a Content-Length nor a chunked body")
    # An event stream's chunks end in a blank line, so a body ends at the first "\r\n0\r\n\r\n" after one.
    while not (rest.endswith(b"\r\n0\r\n\r\n") or rest == b"0\r\n\r\n"):
        rest += await stream.receive(_READ)
    return Answer(status, _dechunk(bytes(rest))), keep


def _dechunk(raw: bytes) -> bytes:
    out = bytearray()
    at = 0
    while True:
        line_end = raw.index(b"\r\n", at)
        size = int(raw[at:line_end].split(b";")[0], 16)
        if not size:
            return bytes(out)
        out += raw[line_end + 2 : line_end + 2 + size]
        at = line_end + 2 + size + 2

"""A fake model provider on a real socket, speaking the OpenAI and Anthropic wire protocols.

Tests point a real provider model at it (``base_url=server.base_url``) and script what it answers:
text, reasoning, tool calls, HTTP errors with headers, slow, broken or malformed streams. It records
every request it receives, so tests can check the exact bodies a provider sent. It needs ``uvicorn``
(in procflow's ``dev`` extra).

Example::

    with FakeProviderServer() as server:
        server.add(FakeReply(text="Hello!"))
        model = OpenAICompatibleModel("fake", base_url=server.base_url)
        ...
        assert server.requests[0].json["messages"][-1]["content"] == "Hi"
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections import deque
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Self

import anyio.to_thread

from procflow.testing._fake_app import FakeProviderApp
from procflow.testing._fake_reply import FakeReply, FakeToolCall, RecordedRequest, Responder

__all__ = ["FakeProviderServer", "FakeReply", "FakeToolCall", "RecordedRequest", "Responder"]

_STARTUP_TIMEOUT = 10.0


def _counting_protocol(accepted: Callable[[], None]) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol, counting each accepted connection."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class CountingH11Protocol(H11Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            accepted()
            super().connection_made(transport)  # type: ignore[arg-type]

    return CountingH11Protocol


class FakeProviderServer:
    """The fake provider: an HTTP server on ``127.0.0.1`` (a free port) running in a background thread.

    It answers ``POST …/chat/completions`` (OpenAI protocol) and ``POST …/messages`` (Anthropic protocol)
    with the next scripted reply, streamed when the request asks for it. With no reply left it answers
    HTTP 400 saying so. Like OpenAI's API, it rejects (HTTP 400, OpenAI's wording, no reply used up) a
    chat request whose ``tool`` message answers no call of the assistant message before it, or whose
    assistant tool calls are not all answered before the next message. ``POST …/embeddings`` (OpenAI
    protocol) answers with deterministic vectors of hashed words (see ``fake_embedding``) and uses up
    no reply. Use it as ``with`` / ``async with``
    block, or call :meth:`start` and :meth:`stop`; one server may serve many tests (:meth:`reset` between
    them).

    Args:
        replies: The initial script: replies or responders (functions of the request), played in order.
        host: The interface to listen on.
    """

    def __init__(self, replies: Sequence[FakeReply | Responder] = (), *, host: str = "127.0.0.1") -> None:
        self._script: deque[FakeReply | Responder] = deque(replies)
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._host = host
        self._port: int | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._connections = 0

    def add(self, *replies: FakeReply | Responder) -> Self:
        """Append replies (or responders) to the script."""
        self._script.extend(replies)
        return self

    def reset(self) -> None:
        """Forget the script, the recorded requests and the connection count."""
        with self._lock:
            self._script.clear()
            self._requests.clear()
            self._connections = 0

    @property
    def requests(self) -> list[RecordedRequest]:
        """The requests received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def connections(self) -> int:
        """How many TCP connections the server has accepted since it started (or the last :meth:`reset`):
        a client that reuses its connection opens one for many requests."""
        with self._lock:
            return self._connections

    def _accepted(self) -> None:
        with self._lock:
            self._connections += 1

    @property
    def pending(self) -> int:
        """How many scripted replies are left."""
        return len(self._script)

    @property
    def url(self) -> str:
        """The server root, ``http://127.0.0.1:<port>``."""
        if self._port is None:
            raise RuntimeError(
                "the fake provider server is not started; use it in a `with` block or call start()"
            )
        return f"http://{self._host}:{self._port}"

    @property
    def base_url(self) -> str:
        """The API root to give a provider model as ``base_url`` (``…/v1``, as for OpenAI and Anthropic)."""
        return self.url + "/v1"

    def _record(self, request: RecordedRequest) -> int:
        with self._lock:
            self._requests.append(request)
            return len(self._requests)

    def _next_reply(self, request: RecordedRequest) -> FakeReply:
        try:
            entry = self._script.popleft()
        except IndexError:
            return FakeReply.error(
                400, "fake provider: no scripted reply left; add one with server.add(FakeReply(...))"
            )
        if isinstance(entry, FakeReply):
            return entry
        try:
            return entry(request)
        except Exception as exc:
            return FakeReply.error(500, f"fake provider: the responder failed: {exc!r}")

    def start(self) -> Self:
        """Start serving in a background thread; return once the server accepts connections."""
        if self._thread is not None:
            raise RuntimeError("the fake provider server is already started")
        try:
            import uvicorn
        except ModuleNotFoundError as exc:
            raise ModuleNotFoundError(
                "FakeProviderServer needs uvicorn: pip install 'procflow[testing]'"
            ) from exc
        # Naming the protocol lets asyncio set TCP_NODELAY on accepted connections (no 40 ms Nagle stalls).
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.bind((self._host, 0))
        self._port = sock.getsockname()[1]
        ready = threading.Event()
        failure: list[BaseException] = []

        class _Server(uvicorn.Server):
            async def startup(self, sockets: list[socket.socket] | None = None) -> None:
                try:
                    await super().startup(sockets)
                finally:
                    ready.set()

        config = uvicorn.Config(
            FakeProviderApp(self._record, self._next_reply),
            interface="asgi3",
            http=_counting_protocol(self._accepted),
            ws="none",
            lifespan="off",
            loop="asyncio",
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=1,
            # Longer than httpx's 5 s keep-alive expiry, so an idle client connection is always dropped
            # by the client first: no request races a server-side close.
            timeout_keep_alive=60,
        )
        server = _Server(config)

        def run() -> None:
            try:
                server.run(sockets=[sock])
            except BaseException as exc:  # reported by start(), not lost in the thread
                failure.append(exc)
            finally:
                ready.set()
                sock.close()

        thread = threading.Thread(target=run, name=f"procflow-fake-provider-{self._port}", daemon=True)
        thread.start()
        if not ready.wait(_STARTUP_TIMEOUT) or failure or not server.started:
            server.should_exit = True
            thread.join(_STARTUP_TIMEOUT)
            self._port = None
            reason = repr(failure[0]) if failure else "it did not start in time"
            raise RuntimeError(f"the fake provider server could not start: {reason}")
        self._server, self._thread = server, thread
        return self

    def stop(self) -> None:
        """Stop the server, dropping open connections; does nothing when it is not running."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        server.should_exit = True
        server.force_exit = True
        thread.join(_STARTUP_TIMEOUT)
        self._server = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return await anyio.to_thread.run_sync(self.start)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await anyio.to_thread.run_sync(self.stop)

    def __repr__(self) -> str:
        where = f"{self._host}:{self._port}" if self._port else "stopped"
        return f"FakeProviderServer({where}, {self.pending} replies pending, {len(self._requests)} requests)"

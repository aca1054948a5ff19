"""Serving an ASGI app from a background thread: for tests, notebooks and embedding the gateway."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from procflow.errors import ProcflowError
from procflow.server._config import KEEP_ALIVE_SECONDS

__all__ = ["serve_in_background"]

_STARTUP_TIMEOUT = 10.0


@contextmanager
def serve_in_background(app: Any, *, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve ``app`` with uvicorn in a daemon thread until the block ends; yield its ``…/v1`` base URL.

    Args:
        app: An ASGI app, e.g. :func:`create_app`'s.
        host: The interface to listen on.
        port: The port; 0 picks a free one.

    Raises:
        ProcflowError: the server did not start within 10 seconds.
    """
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        http="h11",
        ws="none",
        lifespan="off",
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=1,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name=f"procflow-serve-{bound}", daemon=True
    )
    thread.start()
    started = threading.Event()
    try:
        for _ in range(int(_STARTUP_TIMEOUT / 0.01)):
            if server.started or not thread.is_alive():
                break
            started.wait(0.01)
        if not server.started:
            raise ProcflowError(f"the server on {host}:{bound} did not start")
        yield f"http://{host}:{bound}/v1"
    finally:
        server.should_exit = True
        thread.join(_STARTUP_TIMEOUT)
        sock.close()

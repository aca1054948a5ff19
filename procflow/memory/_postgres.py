"""``PostgresStorage``: memory in PostgreSQL (psycopg 3 async, a connection pool, pgvector)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio

from procflow._logging import log
from procflow._messages.message import Message
from procflow.errors import ConfigurationError, MemoryStorageError
from procflow.memory import _rows
from procflow.memory._storage import Scope, StoredThread, Turn, VectorHit

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["PostgresStorage"]

_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE memory_threads (
            id text PRIMARY KEY,
            resource_id text,
            working_memory text,
            next_seq bigint NOT NULL DEFAULT 0,
            created_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL
        )""",
        "CREATE INDEX memory_threads_by_resource ON memory_threads (resource_id, updated_at)",
        """CREATE TABLE memory_messages (
            id text PRIMARY KEY,
            thread_id text NOT NULL,
            resource_id text,
            seq bigint NOT NULL,
            role text NOT NULL,
            created_at timestamptz NOT NULL,
            data text NOT NULL,
            UNIQUE (thread_id, seq)
        )""",
        """CREATE TABLE memory_resources (
            id text PRIMARY KEY,
            working_memory text,
            created_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL
        )""",
    ),
)
_VECTORS = (
    "CREATE EXTENSION IF NOT EXISTS vector",
    """CREATE TABLE IF NOT EXISTS memory_vectors (
        message_id text PRIMARY KEY,
        thread_id text NOT NULL,
        resource_id text,
        embedding vector NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS memory_vectors_by_thread ON memory_vectors (thread_id)",
    "CREATE INDEX IF NOT EXISTS memory_vectors_by_resource ON memory_vectors (resource_id)",
)
_LOCK = "SELECT pg_advisory_xact_lock(hashtext('procflow_memory_schema'))"

# One statement saves the whole turn, so it is atomic on its own and costs one round trip. The thread's
# row is upserted first: its lock orders concurrent turns on one thread, and its counter gives each
# message of the turn its position.
_SAVE_TURN = """
WITH thread AS (
    INSERT INTO memory_threads AS t (id, resource_id, working_memory, next_seq, created_at, updated_at)
    VALUES (%(thread)s, %(resource)s, %(thread_wm)s, %(count)s, %(now)s, %(now)s)
    ON CONFLICT (id) DO UPDATE SET
        next_seq = t.next_seq + excluded.next_seq,
        updated_at = excluded.updated_at,
        resource_id = coalesce(t.resource_id, excluded.resource_id),
        working_memory = coalesce(excluded.working_memory, t.working_memory)
    RETURNING next_seq
), saved AS (
    INSERT INTO memory_messages (id, thread_id, resource_id, seq, role, created_at, data)
    SELECT m.id, %(thread)s, %(resource)s, thread.next_seq - %(count)s + m.ord - 1, m.role, m.created_at,
        m.data
    FROM thread, unnest(%(ids)s::text[], %(roles)s::text[], %(times)s::timestamptz[], %(datas)s::text[])
        WITH ORDINALITY AS m (id, role, created_at, data, ord)
    ON CONFLICT (id) DO UPDATE SET role = excluded.role, data = excluded.data
    RETURNING 1
), resource AS (
    INSERT INTO memory_resources AS r (id, working_memory, created_at, updated_at)
    SELECT %(resource)s, %(resource_wm)s, %(now)s, %(now)s WHERE %(resource)s::text IS NOT NULL
    ON CONFLICT (id) DO UPDATE SET
        working_memory = coalesce(excluded.working_memory, r.working_memory),
        updated_at = excluded.updated_at
    RETURNING 1
){vectors}
SELECT count(*) FROM saved
"""
_SAVE_VECTORS = """, vectors AS (
    INSERT INTO memory_vectors (message_id, thread_id, resource_id, embedding)
    SELECT v.id, %(thread)s, %(resource)s, v.embedding::vector
    FROM unnest(%(vector_ids)s::text[], %(vectors)s::text[]) AS v (id, embedding)
    ON CONFLICT (message_id) DO UPDATE SET embedding = excluded.embedding
    RETURNING 1
)"""
_SAVE_PLAIN = _SAVE_TURN.format(vectors="")
_SAVE_WITH_VECTORS = _SAVE_TURN.format(vectors=_SAVE_VECTORS)


def _vector_text(vector: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


class PostgresStorage:
    """Memory in PostgreSQL, for many app instances sharing one database.

    Uses psycopg 3's async API with a connection pool; the schema is created and migrated on first use
    (under an advisory lock, so instances starting together migrate once). Vector search uses pgvector,
    whose extension and table are created when vectors are first saved or searched. psycopg's async API
    runs on the asyncio backend, and the pool belongs to the event loop that first used the storage.

    Args:
        dsn: A libpq connection string or URL; the storage opens and owns a pool for it.
        pool: An ``psycopg_pool.AsyncConnectionPool`` you own (then ``dsn`` must be omitted).
        max_size: Connections at most in the pool the storage opens.
    """

    backend = "postgres"

    def __init__(
        self, dsn: str | None = None, *, pool: AsyncConnectionPool[Any] | None = None, max_size: int = 10
    ) -> None:
        if (dsn is None) == (pool is None):
            raise ConfigurationError("PostgresStorage needs exactly one of dsn='postgresql://…' or pool=…")
        self._dsn = dsn
        self._pool = pool
        self._owns_pool = pool is None
        self._max_size = max_size
        self._ready = False
        self._vectors_ready = False
        self._opening: anyio.Lock | None = None

    def __repr__(self) -> str:
        return "PostgresStorage(pool)" if self._dsn is None else "PostgresStorage(dsn)"

    async def __aenter__(self) -> PostgresStorage:
        async with self._connection("open"):
            pass
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- plumbing --------------------------------------------------------------------------------------

    async def _get_pool(self) -> AsyncConnectionPool[Any]:
        if self._pool is not None and self._ready:
            return self._pool
        if self._opening is None:
            self._opening = anyio.Lock()
        async with self._opening:
            if self._pool is None:
                from psycopg_pool import AsyncConnectionPool

                # Autocommit: every read and the turn's save are single statements (one round trip each).
                pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
                    self._dsn or "",
                    min_size=1,
                    max_size=self._max_size,
                    open=False,
                    kwargs={"autocommit": True},
                )
                await pool.open(wait=True)
                self._pool = pool
            if not self._ready:
                async with self._pool.connection() as conn:
                    await _migrate(conn)
                self._ready = True
        return self._pool

    @asynccontextmanager
    async def _connection(self, operation: str) -> AsyncIterator[AsyncConnection[Any]]:
        import psycopg

        try:
            pool = await self._get_pool()
            async with pool.connection() as conn:
                yield conn
        except MemoryStorageError:
            raise
        except (psycopg.Error, OSError) as exc:
            log.warning("memory_storage_failed", backend="postgres", operation=operation)
            raise MemoryStorageError(str(exc).strip(), backend="postgres", operation=operation) from exc

    async def _ensure_vectors(self, conn: AsyncConnection[Any]) -> None:
        if self._vectors_ready:
            return
        async with conn.transaction():
            await conn.execute(_LOCK)
            for statement in _VECTORS:
                await conn.execute(statement)
        self._vectors_ready = True

    async def aclose(self) -> None:
        """Close the pool the storage opened (a pool you passed in stays yours to close)."""
        if self._owns_pool and self._pool is not None:
            pool, self._pool, self._ready = self._pool, None, False
            await pool.close()

    # -- writes ----------------------------------------------------------------------------------------

    async def save_turn(self, turn: Turn) -> None:
        """Save the turn's messages, vectors and working memory in one statement (one transaction).

        The thread's row is locked first (``INSERT … ON CONFLICT DO UPDATE``), so concurrent turns on one
        thread take their message positions one after the other.
        """
        rows = [_rows.message_row(m, turn) for m in turn.messages]
        thread_text, resource_text = _rows.working_memory_texts(turn)
        params: dict[str, Any] = {
            "thread": turn.thread_id,
            "resource": turn.resource_id,
            "count": len(rows),
            "now": datetime.now(UTC),
            "thread_wm": thread_text,
            "resource_wm": resource_text,
            "ids": [r["id"] for r in rows],
            "roles": [r["role"] for r in rows],
            "times": [r["created_at"] for r in rows],
            "datas": [r["data"] for r in rows],
        }
        if turn.vectors:
            params["vector_ids"] = list(turn.vectors)
            params["vectors"] = [_vector_text(v) for v in turn.vectors.values()]
        async with self._connection("save_turn") as conn:
            if turn.vectors:
                await self._ensure_vectors(conn)
            await conn.execute(_SAVE_WITH_VECTORS if turn.vectors else _SAVE_PLAIN, params)

    async def delete_thread(self, thread_id: str) -> None:
        """Forget a thread: its messages, vectors and thread-scoped working memory."""
        async with self._connection("delete_thread") as conn, conn.transaction():
            if self._vectors_ready or await _has_table(conn, "memory_vectors"):
                await conn.execute("DELETE FROM memory_vectors WHERE thread_id = %s", (thread_id,))
            await conn.execute("DELETE FROM memory_messages WHERE thread_id = %s", (thread_id,))
            await conn.execute("DELETE FROM memory_threads WHERE id = %s", (thread_id,))

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
        params = (thread_id, *_rows.visible_params(include_signals, resource_id), last)
        async with self._connection("get_messages") as conn:
            cursor = await conn.execute(_rows.POSTGRES.messages, params)
            return _rows.newest_first(await cursor.fetchall())

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
        async with self._connection("get_context") as conn:
            cursor = await conn.execute(_rows.POSTGRES.anchor, (message_id, thread_id, *visible))
            found = await cursor.fetchone()
            if found is None:
                return []
            seq, data = found
            cursor = await conn.execute(_rows.POSTGRES.around("<"), (thread_id, *visible, seq, before))
            older = await cursor.fetchall()
            cursor = await conn.execute(_rows.POSTGRES.around(">"), (thread_id, *visible, seq, after))
            newer = await cursor.fetchall()
        return _rows.context_messages(older, data, newer)

    async def get_thread(self, thread_id: str) -> StoredThread | None:
        """The thread, or ``None`` when nothing was saved on it."""
        threads = await self._threads("id", thread_id, "get_thread")
        return threads[0] if threads else None

    async def list_threads(self, resource_id: str) -> list[StoredThread]:
        """The resource's threads, most recently updated first."""
        return await self._threads("resource_id", resource_id, "list_threads")

    async def _threads(self, column: str, value: str, operation: str) -> list[StoredThread]:
        async with self._connection(operation) as conn:
            cursor = await conn.execute(_rows.POSTGRES.threads(column), (value,))
            return _rows.threads_of(await cursor.fetchall())

    async def get_working_memory(self, scope: Scope, key: str) -> str | None:
        """The working memory of a thread (``key`` = thread id) or a resource, when one was saved."""
        async with self._connection("get_working_memory") as conn:
            cursor = await conn.execute(_rows.POSTGRES.working_memory(scope), (key,))
            row = await cursor.fetchone()
        return None if row is None else row[0]

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
        sql = _rows.POSTGRES.search(column)
        async with self._connection("search_vectors") as conn:
            await self._ensure_vectors(conn)
            cursor = await conn.execute(sql, (_vector_text(vector), len(vector), value, top_k))
            return _rows.vector_hits(await cursor.fetchall())


async def _has_table(conn: AsyncConnection[Any], name: str) -> bool:
    cursor = await conn.execute("SELECT to_regclass(%s) IS NOT NULL", (name,))
    row = await cursor.fetchone()
    return bool(row and row[0])


async def _migrate(conn: AsyncConnection[Any]) -> None:
    """Bring the schema to the newest version in one transaction, under an advisory lock."""
    async with conn.transaction():
        await conn.execute(_LOCK)
        await conn.execute("CREATE TABLE IF NOT EXISTS procflow_memory_schema (version integer NOT NULL)")
        cursor = await conn.execute("SELECT max(version) FROM procflow_memory_schema")
        row = await cursor.fetchone()
        version = int(row[0]) if row and row[0] is not None else 0
        if version > len(_MIGRATIONS):
            raise MemoryStorageError(
                f"the database has memory schema version {version}, newer than this procflow's "
                f"{len(_MIGRATIONS)}; upgrade procflow",
                backend="postgres",
                operation="migrate",
            )
        for number in range(version, len(_MIGRATIONS)):
            for statement in _MIGRATIONS[number]:
                await conn.execute(statement)
            await conn.execute("INSERT INTO procflow_memory_schema (version) VALUES (%s)", (number + 1,))

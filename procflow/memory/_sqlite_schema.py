"""The SQLite memory schema: its migrations, applied in order, the version kept in ``PRAGMA user_version``."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from procflow.errors import MemoryStorageError

__all__ = ["SCHEMA_VERSION", "migrate"]

_MIGRATIONS: tuple[str, ...] = (
    # 1: threads, messages (ordered per thread by seq), resources, and message vectors.
    """
    CREATE TABLE memory_threads (
        id TEXT PRIMARY KEY,
        resource_id TEXT,
        working_memory TEXT,
        next_seq INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX memory_threads_by_resource ON memory_threads (resource_id, updated_at);
    CREATE TABLE memory_messages (
        id TEXT PRIMARY KEY,
        thread_id TEXT NOT NULL,
        resource_id TEXT,
        seq INTEGER NOT NULL,
        role TEXT NOT NULL,
        created_at TEXT NOT NULL,
        data TEXT NOT NULL
    );
    CREATE UNIQUE INDEX memory_messages_order ON memory_messages (thread_id, seq);
    CREATE TABLE memory_resources (
        id TEXT PRIMARY KEY,
        working_memory TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE TABLE memory_vectors (
        message_id TEXT PRIMARY KEY,
        thread_id TEXT NOT NULL,
        resource_id TEXT,
        dims INTEGER NOT NULL,
        vector BLOB NOT NULL
    );
    CREATE INDEX memory_vectors_by_thread ON memory_vectors (thread_id);
    CREATE INDEX memory_vectors_by_resource ON memory_vectors (resource_id);
    """,
)

SCHEMA_VERSION = len(_MIGRATIONS)
"""The schema version this release writes (kept in ``PRAGMA user_version``)."""


def migrate(conn: Any, transaction: Callable[[Any], AbstractContextManager[None]]) -> None:
    """Bring the schema to :data:`SCHEMA_VERSION`, one migration per transaction."""
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    if version > SCHEMA_VERSION:
        raise MemoryStorageError(
            f"the database has schema version {version}, newer than this procflow's {SCHEMA_VERSION}; "
            "upgrade procflow",
            backend="sqlite",
            operation="migrate",
        )
    for number in range(version, SCHEMA_VERSION):
        with transaction(conn):
            # Another process may have migrated while this one waited for the write lock.
            (current,) = conn.execute("PRAGMA user_version").fetchone()
            if current > number:
                continue
            for statement in _MIGRATIONS[number].split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number + 1}")

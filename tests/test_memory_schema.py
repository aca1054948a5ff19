"""Storage schemas are versioned: created on first use, never silently used by an older procflow."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import psycopg
import pytest

from procflow.errors import ConfigurationError, MemoryStorageError
from procflow.memory import PostgresStorage, SQLiteStorage

SCHEMA_VERSION = SQLiteStorage.schema_version


async def test_sqlite_schema_is_created_in_wal_mode_with_its_version(tmp_path: Path) -> None:
    """A new file gets the current schema version and WAL journaling."""
    path = tmp_path / "m.sqlite"
    async with SQLiteStorage(path) as storage:
        assert await storage.get_thread("none") is None
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


async def test_a_newer_sqlite_schema_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    """A database migrated by a newer procflow is not used; the error says to upgrade."""
    path = tmp_path / "m.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    storage = SQLiteStorage(path)
    with pytest.raises(MemoryStorageError, match="upgrade procflow"):
        await storage.get_messages("t")
    await storage.aclose()


async def test_postgres_instances_starting_together_migrate_once(postgres_dsn: str) -> None:
    """Two storages opening one new database at once both work; the schema version is recorded once."""
    first, second = PostgresStorage(postgres_dsn), PostgresStorage(postgres_dsn)
    async with anyio.create_task_group() as tg:
        tg.start_soon(first.get_messages, "t")
        tg.start_soon(second.get_messages, "t")
    await first.aclose()
    await second.aclose()
    with psycopg.connect(postgres_dsn) as conn:
        assert conn.execute("SELECT version FROM procflow_memory_schema").fetchall() == [(1,)]


def test_postgres_storage_needs_exactly_one_of_dsn_or_pool() -> None:
    """PostgresStorage() without a DSN or a pool says what to pass."""
    with pytest.raises(ConfigurationError, match="dsn"):
        PostgresStorage()

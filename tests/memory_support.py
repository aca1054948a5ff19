"""The memory test suite's backends: every storage test runs on a SQLite file and on real PostgreSQL."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from procflow import Agent
from procflow.memory import Memory, MemoryStorage, PostgresStorage, SQLiteStorage
from procflow.testing import ScriptedModel

_FAULT_SQLITE = """
CREATE TRIGGER injected_fault BEFORE INSERT ON memory_messages WHEN NEW.role = 'assistant'
BEGIN SELECT RAISE(ABORT, 'injected fault'); END
"""
_FAULT_POSTGRES = (
    """CREATE FUNCTION injected_fault() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.role = 'assistant' THEN RAISE EXCEPTION 'injected fault'; END IF; RETURN NEW; END $$""",
    """CREATE TRIGGER injected_fault BEFORE INSERT ON memory_messages
    FOR EACH ROW EXECUTE FUNCTION injected_fault()""",
)


@dataclass
class Backend:
    """A storage under test, plus raw SQL access to its database (to inject faults)."""

    kind: str
    storage: MemoryStorage
    location: str

    def sql(self, *statements: str) -> None:
        """Run SQL directly on the database, outside the storage."""
        if self.kind == "sqlite":
            with sqlite3.connect(self.location) as conn:
                for statement in statements:
                    conn.execute(statement)
            return
        with psycopg.connect(self.location, autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement)

    def another(self) -> MemoryStorage:
        """A second storage object on the same database (another app instance)."""
        if self.kind == "sqlite":
            return SQLiteStorage(self.location)
        return PostgresStorage(self.location)

    def fail_assistant_inserts(self) -> None:
        """Make the database reject any assistant message insert (a fault in the middle of a turn)."""
        self.sql(_FAULT_SQLITE) if self.kind == "sqlite" else self.sql(*_FAULT_POSTGRES)

    def heal(self) -> None:
        """Remove the injected fault."""
        if self.kind == "sqlite":
            self.sql("DROP TRIGGER injected_fault")
        else:
            self.sql("DROP TRIGGER injected_fault ON memory_messages")


@pytest.fixture(params=["sqlite", "postgres"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    """A fresh storage: a SQLite file in ``tmp_path``, or a new database on the session's PostgreSQL."""
    if request.param == "sqlite":
        path = str(tmp_path / "memory.sqlite")
        made = Backend("sqlite", SQLiteStorage(path), path)
    else:
        dsn = request.getfixturevalue("postgres_dsn")
        made = Backend("postgres", PostgresStorage(dsn), dsn)
    try:
        yield made
    finally:
        await made.storage.aclose()


def echo(request: Any) -> str:
    """A scripted answer repeating the last user text of the prompt."""
    users = [m.text for m in request.prompt if m.role == "user"]
    return f"echo: {users[-1] if users else ''}"


def echo_agent(memory: Memory, **options: Any) -> tuple[Agent, ScriptedModel]:
    """An agent with ``memory`` whose scripted model echoes the last user message."""
    model = ScriptedModel([echo], repeat_last=True)
    return Agent(id="memory-test", model=model, memory=memory, **options), model


async def texts(storage: MemoryStorage, thread: str, **options: Any) -> list[tuple[str, str]]:
    """The thread's stored messages as ``(role, text)`` pairs."""
    return [(m.role, m.text) for m in await storage.get_messages(thread, **options)]

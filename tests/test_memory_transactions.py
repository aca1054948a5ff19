"""Transactional turns on both backends: concurrent turns on one thread, a fault in the middle of a save."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import pytest
from memory_support import Backend, backend, echo_agent, texts

from procflow import Message
from procflow.errors import MemoryStorageError
from procflow.memory import Memory, SQLiteStorage
from procflow.memory._sqlite import _driver

__all__ = ["backend"]

T = {"thread": "t-1", "resource": "user-1"}


async def test_fifty_concurrent_turns_on_one_thread_keep_every_message_once(backend: Backend) -> None:
    """50 requests at once on one thread: 100 messages, each stored once, each turn's pair adjacent."""
    agent, _ = echo_agent(Memory(storage=backend.storage, last_messages=4))
    async with anyio.create_task_group() as tg:
        for n in range(50):
            tg.start_soon(lambda n=n: agent.generate(f"message {n}", memory=T))
    stored = await texts(backend.storage, "t-1")
    assert len(stored) == 100
    users = [text for role, text in stored if role == "user"]
    assert sorted(users) == sorted(f"message {n}" for n in range(50))
    for (role_a, user), (role_b, answer) in zip(stored[::2], stored[1::2], strict=True):
        assert (role_a, role_b) == ("user", "assistant")
        assert answer == f"echo: {user}"
    ids = [m.id for m in await backend.storage.get_messages("t-1")]
    assert len(set(ids)) == 100


async def test_two_app_instances_on_one_database_share_a_thread_safely(backend: Backend) -> None:
    """Two storage objects (two processes' worth) saving on one thread at once lose nothing."""
    other = backend.another()
    try:
        first, _ = echo_agent(Memory(storage=backend.storage, last_messages=0))
        second, _ = echo_agent(Memory(storage=other, last_messages=0))
        async with anyio.create_task_group() as tg:
            for n in range(20):
                agent = first if n % 2 else second
                tg.start_soon(lambda a=agent, n=n: a.generate(f"m{n}", memory=T))
    finally:
        await other.aclose()
    stored = await texts(backend.storage, "t-1")
    assert sorted(t for r, t in stored if r == "user") == sorted(f"m{n}" for n in range(20))
    assert len(stored) == 40


async def test_a_fault_mid_save_raises_clearly_and_leaves_none_of_the_turn(backend: Backend) -> None:
    """The assistant insert fails after the user one: a MemoryStorageError, and the thread is unchanged."""
    agent, _ = echo_agent(Memory(storage=backend.storage))
    await agent.generate("first", memory=T)
    backend.fail_assistant_inserts()
    with pytest.raises(MemoryStorageError, match="failed to save_turn") as caught:
        await agent.generate("second", memory=T)
    assert caught.value.backend == backend.kind and caught.value.operation == "save_turn"
    assert await texts(backend.storage, "t-1") == [("user", "first"), ("assistant", "echo: first")]
    thread = await backend.storage.get_thread("t-1")
    assert thread is not None and thread.message_count == 2
    backend.heal()
    await agent.generate("third", memory=T)
    assert [t for _, t in await texts(backend.storage, "t-1")] == [
        "first",
        "echo: first",
        "third",
        "echo: third",
    ]


async def test_a_storage_reopens_after_aclose(backend: Backend) -> None:
    """aclose releases connections; the next use opens them again and sees the saved turns."""
    agent, _ = echo_agent(Memory(storage=backend.storage))
    await agent.generate("before", memory=T)
    await backend.storage.aclose()
    await agent.generate("after", memory=T)
    assert len(await backend.storage.get_messages("t-1")) == 4


def test_a_second_process_opening_a_new_file_waits_for_the_first_ones_write(tmp_path: Path) -> None:
    """A new file still has a rollback journal, whose change to WAL SQLite does not wait for: opening
    a storage while another connection writes the file waits for it instead of failing at once."""
    path = tmp_path / "new.db"
    driver, _ = _driver()  # the storage's own SQLite library: two copies in one process break locking
    writer = driver.connect(str(path), isolation_level=None, check_same_thread=False)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("CREATE TABLE other_app (x)")
    done = threading.Timer(0.3, writer.execute, args=("COMMIT",))
    done.start()

    async def main() -> list[Message]:
        async with SQLiteStorage(path) as storage:
            return await storage.get_messages("t-1")

    try:
        assert anyio.run(main) == []
    finally:
        done.join()
        writer.close()
    reader = driver.connect(str(path))
    assert reader.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    reader.close()

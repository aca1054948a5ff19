"""``procflow chat --memory PATH.sqlite --thread T``, in-process through the command's entry function."""

from __future__ import annotations

import io
from pathlib import Path

import anyio
import pytest

from procflow._cli.app import build_parser
from procflow._cli.console import stderr_console
from procflow.memory import SQLiteStorage


def _chat(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *argv: str, stdin: str) -> str:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    args = build_parser().parse_args(["chat", *argv])
    assert args.handler(args, stderr_console()) == 0
    return capsys.readouterr().out


async def _user_texts(db: str, thread: str) -> list[str]:
    async with SQLiteStorage(db) as storage:
        return [m.text for m in await storage.get_messages(thread) if m.role == "user"]


def _answers(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("assistant> ")]


def test_chat_with_memory_keeps_the_conversation_across_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second run on the same file and thread continues where the first left off."""
    db = str(tmp_path / "chat.sqlite")
    first = _chat(monkeypatch, capsys, "--memory", db, "--thread", "t1", stdin="hello\n")
    second = _chat(monkeypatch, capsys, "--memory", db, "--thread", "t1", stdin="again\n")
    other = _chat(monkeypatch, capsys, "--memory", db, "--thread", "t2", stdin="fresh\n")
    assert _answers(first) == ["assistant> (scripted model, 1 messages in context) I received: hello"]
    assert _answers(second) == ["assistant> (scripted model, 3 messages in context) I received: again"]
    assert _answers(other) == ["assistant> (scripted model, 1 messages in context) I received: fresh"]
    assert anyio.run(_user_texts, db, "t1") == ["hello", "again"]


def test_reset_with_memory_forgets_the_stored_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """/reset deletes the thread from the file, so the next run starts afresh too."""
    db = str(tmp_path / "chat.sqlite")
    _chat(monkeypatch, capsys, "--memory", db, stdin="hello\n/reset\n")
    out = _chat(monkeypatch, capsys, "--memory", db, stdin="again\n")
    assert _answers(out) == ["assistant> (scripted model, 1 messages in context) I received: again"]

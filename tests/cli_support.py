"""Running the real ``procflow`` console script in a subprocess, for the CLI tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_DATA = ROOT / "examples" / "data" / "conversations.jsonl"
EXAMPLE_PIPELINE = ROOT / "examples" / "pipeline.py"

_SCRIPT = Path(sys.executable).with_name("procflow")
COMMAND = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "procflow.cli"]


def procflow(
    *args: str | Path,
    stdin: str | None = None,
    cwd: Path = ROOT,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``procflow ARGS`` and return the finished process (stdout and stderr captured as text)."""
    environment = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb", **(env or {})}
    return subprocess.run(
        [*COMMAND, *map(str, args)],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        env=environment,
        timeout=50,
        check=False,
        preexec_fn=_default_sigint,
    )


def _default_sigint() -> None:
    """Give the child the default Ctrl-C handling even when this test run ignores SIGINT.

    A shell starts background jobs with SIGINT ignored and children inherit that, so a CLI started from
    such a run would never see the interrupt the interruption test sends.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def jsonl(text: str) -> list[dict[str, Any]]:
    """Decode JSONL text into its records."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def write_jsonl(path: Path, *records: Any) -> Path:
    """Write ``records`` (dicts are encoded, strings written as they are) one per line; return ``path``."""
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def chat(*turns: tuple[str, str | None], **fields: Any) -> dict[str, Any]:
    """Build a chat-format conversation from ``(role, content)`` pairs."""
    return {**fields, "messages": [{"role": role, "content": content} for role, content in turns]}

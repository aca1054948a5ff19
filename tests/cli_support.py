"""Running the ``procflow`` command for the CLI tests: in-process through ``main()``, or as a real process.

Most tests call :func:`procflow`, which runs ``procflow._cli.main(argv)`` in this process with its own
stdin, stdout, stderr, environment and working directory (fast, and measured by coverage). Signals,
exit codes of the console script and closed pipes are tested with :func:`procflow_process`.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from procflow._cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_DATA = ROOT / "examples" / "data" / "conversations.jsonl"
EXAMPLE_PIPELINE = ROOT / "examples" / "pipeline.py"
PIPELINES = ROOT / "tests" / "fixtures" / "cli_pipelines.py"
WORKFLOWS = ROOT / "tests" / "fixtures" / "cli_workflows.py"

_SCRIPT = Path(sys.executable).with_name("procflow")
COMMAND = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "procflow._cli"]
ENVIRONMENT = {"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}


@dataclass(frozen=True, slots=True)
class Done:
    """A finished ``procflow`` run: its exit code and what it wrote."""

    returncode: int
    stdout: str
    stderr: str
    stdout_bytes: bytes


def procflow(
    *args: str | Path,
    stdin: str | bytes | None = None,
    cwd: Path = ROOT,
    env: dict[str, str] | None = None,
    closed_after: int | None = None,
) -> Done:
    """Run ``procflow ARGS`` in this process through ``main()``; return its code, stdout and stderr.

    ``closed_after=N`` makes stdout a pipe whose reader goes away after N bytes (as ``| head`` does).
    """
    data = stdin.encode("utf-8") if isinstance(stdin, str) else (stdin or b"")
    err = io.BytesIO()
    out = io.BytesIO() if closed_after is None else _ClosingPipe(closed_after)
    streams = (
        io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"),
        io.TextIOWrapper(out, encoding="utf-8", write_through=True),
        io.TextIOWrapper(err, encoding="utf-8", write_through=True),
    )
    with _environment({**ENVIRONMENT, **(env or {})}), contextlib.chdir(cwd), _standard_streams(*streams):
        try:
            code = main([str(arg) for arg in args])
        except SystemExit as exit_:  # argparse: --help, --version, usage errors
            code = exit_.code if isinstance(exit_.code, int) else 1
    raw = out.getvalue()
    return Done(code, raw.decode("utf-8", "replace"), err.getvalue().decode("utf-8"), raw)


class _ClosingPipe(io.BytesIO):
    """A stdout whose reader stops reading after ``limit`` bytes: later writes raise BrokenPipeError."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def write(self, data: Any) -> int:
        if self.tell() + len(data) > self.limit:
            raise BrokenPipeError(32, "Broken pipe")
        return super().write(data)


@contextlib.contextmanager
def _standard_streams(
    stdin: io.TextIOWrapper, stdout: io.TextIOWrapper, stderr: io.TextIOWrapper
) -> Iterator[None]:
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
    try:
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def procflow_process(
    *args: str | Path,
    stdin: str | None = None,
    cwd: Path = ROOT,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the real console script ``procflow ARGS`` and return the finished process."""
    return subprocess.run(
        [*COMMAND, *map(str, args)],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        env={**os.environ, **ENVIRONMENT, **(env or {})},
        timeout=50,
        check=False,
        preexec_fn=default_sigint,
    )


def default_sigint() -> None:
    """Give the child the default Ctrl-C handling even when this test run ignores SIGINT.

    A shell starts background jobs with SIGINT ignored and children inherit that, so a CLI started from
    such a run would never see the interrupt the interruption tests send.
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

"""Ctrl-C, closed pipes and exit codes of the real ``procflow`` console script, in child processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from cli_support import (
    COMMAND,
    ENVIRONMENT,
    PIPELINES,
    ROOT,
    chat,
    default_sigint,
    jsonl,
    procflow_process,
    write_jsonl,
)


def _start(*args: str | Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*COMMAND, *map(str, args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        cwd=ROOT,
        env={**os.environ, **ENVIRONMENT},
        preexec_fn=default_sigint,
    )


def test_an_interrupted_run_keeps_what_it_wrote(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT) mid-run exits 130; conversations done so far are written; the report says so."""
    source = write_jsonl(tmp_path / "in.jsonl", *[chat(("user", f"turn {i}")) for i in range(5)])
    out, report = tmp_path / "out.jsonl", tmp_path / "report.json"
    done = procflow_process("run", source, "-p", f"{PIPELINES}:interrupting", "-o", out, "--report", report)
    assert done.returncode == 130
    assert [r["messages"][0]["content"] for r in jsonl(out.read_text(encoding="utf-8"))] == [
        "turn 0",
        "turn 1",
        "turn 2",
    ]
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["interrupted"] is True
    assert data["conversations"]["processed"] == 3
    assert "procflow run (interrupted)" in done.stderr
    assert "Traceback" not in done.stderr


def test_ctrl_c_during_start_up_prints_no_traceback(tmp_path: Path) -> None:
    """SIGINT while the pipeline is being imported exits 130 with nothing but a newline on stderr."""
    source = write_jsonl(tmp_path / "in.jsonl", chat(("user", "hi")))
    done = procflow_process("run", source, "-p", f"{PIPELINES}:interrupt_on_import")
    assert done.returncode == 130
    assert (done.stdout, done.stderr) == ("", "\n")


def test_a_closed_stdout_ends_the_run_quietly(tmp_path: Path) -> None:
    """`procflow run … | head -1`: the run stops when the reader goes, exit 141, nothing on stderr."""
    source = write_jsonl(tmp_path / "in.jsonl", *[chat(("user", f"x{i}@example.com")) for i in range(3000)])
    with _start("run", source, "-p", f"{PIPELINES}:pipeline") as process:
        assert process.stdout is not None and process.stderr is not None
        first = process.stdout.readline()
        process.stdout.close()  # what `head -1` does after its first line
        assert process.wait(timeout=50) == 141
        assert json.loads(first) == chat(("user", "[EMAIL]"))
        assert process.stderr.read() == ""


def test_head_in_a_shell_pipeline_sees_one_line_and_no_noise(tmp_path: Path) -> None:
    """In a real shell pipeline `| head -1` prints one line and procflow adds nothing on stderr."""
    source = write_jsonl(tmp_path / "in.jsonl", *[chat(("user", f"line {i}")) for i in range(3000)])
    command = " ".join([*COMMAND, "run", str(source), "-p", f"{PIPELINES}:shouting", "|", "head", "-1"])
    done = subprocess.run(
        ["sh", "-c", command],
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
        preexec_fn=default_sigint,
    )
    assert done.returncode == 0
    assert jsonl(done.stdout) == [chat(("user", "LINE 0"))]
    assert done.stderr == ""


def test_ctrl_c_at_the_chat_prompt_exits_at_once() -> None:
    """SIGINT while `procflow chat` waits for input exits 130 without a traceback."""
    with _start("chat", "--model", "scripted") as process:
        assert process.stdout is not None and process.stderr is not None
        banner = process.stdout.readline()
        assert banner.startswith("procflow chat — pipeline the bundled guard")
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=20) == 130
        assert "Traceback" not in process.stderr.read()


def test_the_console_script_returns_the_usage_exit_code() -> None:
    """The installed script exits 2 on a usage error and 0 on --version, like main()."""
    assert procflow_process("run", "--phase", "sideways").returncode == 2
    assert procflow_process("--version").returncode == 0

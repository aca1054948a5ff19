"""``procflow run --workers N``: the same output and report as one process, bad input and Ctrl-C included."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cli_support import (
    COMMAND,
    ENVIRONMENT,
    EXAMPLE_DATA,
    PIPELINES,
    ROOT,
    chat,
    default_sigint,
    jsonl,
    procflow,
    write_jsonl,
)

EXAMPLE_RECORDS = [json.loads(line) for line in EXAMPLE_DATA.read_text(encoding="utf-8").splitlines() if line]


def generated(count: int) -> list[dict[str, Any]]:
    """``count`` realistic conversations: the example ones over and over, each with its own id and e-mail."""
    records = []
    for index in range(count):
        record = json.loads(json.dumps(EXAMPLE_RECORDS[index % len(EXAMPLE_RECORDS)]))
        record["id"] = f"gen-{index}"
        record["messages"].append({"role": "user", "content": f"Write to me at user{index}@example.net"})
        records.append(record)
    return records


def run_both(tmp_path: Path, source: Path, *options: str) -> tuple[tuple[int, bytes, dict[str, Any]], ...]:
    """Run ``procflow run`` on ``source`` with --workers 1 and 2: (exit code, output bytes, report) each."""
    results = []
    for workers in ("1", "2"):
        out, report = tmp_path / f"out{workers}.jsonl", tmp_path / f"report{workers}.json"
        done = procflow("run", source, "-o", out, "--report", report, "-q", "--workers", workers, *options)
        data = json.loads(report.read_text(encoding="utf-8"))
        assert data.pop("output") == str(out)
        data.pop("seconds")
        results.append((done.returncode, out.read_bytes(), data))
    return tuple(results)


def test_two_workers_write_the_example_file_and_report_exactly_as_one_process(tmp_path: Path) -> None:
    """On the example conversations, --workers 2 writes the same bytes and the same report as --workers 1."""
    single, parallel = run_both(tmp_path, EXAMPLE_DATA)
    assert single == parallel
    assert single[0] == 0
    assert single[2]["conversations"]["blocked"] > 0
    assert single[2]["redactions_total"] > 0


def test_two_workers_match_one_process_on_2000_generated_conversations(tmp_path: Path) -> None:
    """2,000 conversations (many chunks, in flight at once) come out in input order, counted exactly."""
    source = write_jsonl(tmp_path / "in.jsonl", *generated(2000))
    single, parallel = run_both(tmp_path, source)
    assert single == parallel
    assert single[2]["conversations"]["written"] == 2000
    assert [r["id"] for r in jsonl(parallel[1].decode())] == [f"gen-{i}" for i in range(2000)]


def _with_bad_lines(tmp_path: Path) -> Path:
    lines: list[Any] = list(generated(300))
    lines[10] = '{"messages": [{"role": "user"'
    lines[150] = {"messages": [{"role": "wizard", "content": "hi"}]}
    lines[200] = "x" * 5000
    lines[299] = b"\xff"
    path = tmp_path / "bad.jsonl"
    path.write_bytes(
        b"\n".join(
            line
            if isinstance(line, bytes)
            else (line if isinstance(line, str) else json.dumps(line)).encode()
            for line in lines
        )
        + b"\n"
    )
    return path


def test_bad_lines_are_skipped_and_reported_the_same_with_workers(tmp_path: Path) -> None:
    """--on-error skip over bad JSON, a bad role, an over-long line and bad UTF-8: same output and report."""
    single, parallel = run_both(
        tmp_path, _with_bad_lines(tmp_path), "--on-error", "skip", "--max-line-size", "4KB"
    )
    assert single == parallel
    assert [e["line"] for e in single[2]["errors"]] == [11, 151, 201, 300]
    assert "over the limit of 4,000 bytes" in single[2]["errors"][2]["error"]


def test_a_line_longer_than_a_whole_chunk_is_skipped_unread_the_same_with_workers(tmp_path: Path) -> None:
    """A 300 KB line (several of the parent's read blocks) over a 100 KB limit: same output and report."""
    lines = [json.dumps(record) for record in generated(400)]
    lines[250] = json.dumps(chat(("user", "y" * 300_000)))
    source = tmp_path / "long.jsonl"
    source.write_text("\n".join(lines), encoding="utf-8")  # and no newline after the last line
    single, parallel = run_both(tmp_path, source, "--on-error", "skip", "--max-line-size", "100KB")
    assert single == parallel
    assert [e["line"] for e in single[2]["errors"]] == [251]
    assert single[2]["conversations"]["written"] == 399


def test_two_workers_read_stdin_as_one_process_does(tmp_path: Path) -> None:
    """Conversations piped in on stdin, blank lines among them: --workers 2 writes what --workers 1 writes."""
    text = "\n\n".join(json.dumps(record) for record in generated(500)) + "\n"
    outputs = [procflow("run", "-", "-q", "--workers", workers, stdin=text) for workers in ("1", "2")]
    assert [done.returncode for done in outputs] == [0, 0]
    assert outputs[0].stdout_bytes == outputs[1].stdout_bytes
    assert len(jsonl(outputs[1].stdout)) == 500


def test_the_first_bad_line_stops_workers_where_it_stops_one_process(tmp_path: Path) -> None:
    """--on-error fail: exit 1 at line 11, the ten lines before it written, later chunks' work discarded."""
    single, parallel = run_both(tmp_path, _with_bad_lines(tmp_path), "--max-line-size", "4KB")
    assert single == parallel
    assert single[0] == 1
    assert single[2]["conversations"]["written"] == 10
    assert single[2]["conversations"]["lines"] == 11


def test_a_processor_error_is_reported_the_same_from_a_worker(tmp_path: Path) -> None:
    """A processor failing in a worker is an error of its line, named as the single-process run names it."""
    source = write_jsonl(tmp_path / "in.jsonl", chat(("user", "hi")), chat(("user", "again")))
    single, parallel = run_both(tmp_path, source, "-p", f"{PIPELINES}:broken", "--on-error", "skip")
    assert single == parallel
    assert "processing failed: ProcessorResultError" in single[2]["errors"][0]["error"]


def test_unordered_writes_every_conversation_and_the_same_report(tmp_path: Path) -> None:
    """--unordered may reorder lines but writes the same set of them and reports the same counts."""
    source = write_jsonl(tmp_path / "in.jsonl", *generated(300))
    out, report = tmp_path / "out.jsonl", tmp_path / "report.json"
    done = procflow("run", source, "-o", out, "--report", report, "-q", "--workers", "2", "--unordered")
    assert done.returncode == 0, done.stderr
    (_, expected, expected_report), _ = run_both(tmp_path, source)
    assert sorted(out.read_bytes().splitlines()) == sorted(expected.splitlines())
    data = json.loads(report.read_text(encoding="utf-8"))
    assert {k: data[k] for k in expected_report if k != "output"} == {
        k: v for k, v in expected_report.items() if k != "output"
    }


def test_keyboard_interrupt_inside_a_worker_ends_the_run_like_ctrl_c(tmp_path: Path) -> None:
    """KeyboardInterrupt raised in a worker: exit 130, earlier lines written, the report says interrupted."""
    source = write_jsonl(tmp_path / "in.jsonl", *(chat(("user", f"n{i}")) for i in range(3)))
    single, parallel = run_both(tmp_path, source, "-p", f"{PIPELINES}:interrupted")
    assert single == parallel
    assert single[0] == 130
    assert single[2]["interrupted"] is True
    assert single[2]["conversations"]["written"] == 1


@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_a_worker_count_below_one_is_a_usage_error(value: str) -> None:
    """--workers takes a whole number of at least 1; anything else exits 2 saying so."""
    done = procflow("run", EXAMPLE_DATA, "--workers", value)
    assert done.returncode == 2
    assert "is not a number of workers" in done.stderr


SLOW_PIPELINE = '''
class Slow:
    """Burns a few milliseconds of CPU per conversation, so a run lasts long enough to interrupt."""

    id = "slow"

    def process_input(self, args):
        total = 0
        for i in range(40_000):
            total += i * i
        return None


pipeline = [Slow()]
'''


@pytest.mark.slow
def test_sigint_mid_run_leaves_whole_lines_an_accurate_report_and_exit_130(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the real command) while workers run: exit 130, only whole lines, report = output."""
    (tmp_path / "slow.py").write_text(SLOW_PIPELINE, encoding="utf-8")
    source = write_jsonl(tmp_path / "in.jsonl", *generated(20_000))
    out, report = tmp_path / "out.jsonl", tmp_path / "report.json"
    args = ["run", source, "-p", tmp_path / "slow.py", "-o", out, "--report", report, "--workers", "2", "-q"]
    with subprocess.Popen(
        [*COMMAND, *map(str, args)],
        cwd=ROOT,
        env={**os.environ, **ENVIRONMENT},
        stderr=subprocess.PIPE,
        preexec_fn=default_sigint,
    ) as child:
        while not out.exists() or out.stat().st_size < 10_000:  # wait until workers have written some output
            with pytest.raises(subprocess.TimeoutExpired):  # still running
                child.wait(timeout=0.05)
        child.send_signal(signal.SIGINT)
        code = child.wait(timeout=30)
    assert code == 130
    text = out.read_text(encoding="utf-8")
    assert text.endswith("\n")
    written = jsonl(text)
    assert 0 < len(written) < 20_000
    assert [r["id"] for r in written] == [f"gen-{i}" for i in range(len(written))]
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["interrupted"] is True
    assert data["conversations"]["written"] == len(written)

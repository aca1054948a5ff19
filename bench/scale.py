"""Rows/s of ``procflow run``: one process vs ``--workers 2`` vs ``--engine ray --workers 2``.

Each row times the real command (``python -m procflow run``) end to end on the same generated file
of realistic conversations (the example ones over and over, each with its own id and e-mail), with the
bundled guard: start-up, pipeline loading (once per worker or actor) and, for Ray, starting a local
2-CPU cluster are included, as a user pays them. DESIGN §7: ``--workers 2`` ≥ 1.8× one process on two
cores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._harness import Row

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "data" / "conversations.jsonl"
SIZES = {"full": 10_000, "tiny": 8}
BUDGET = 1.8


def conversations(count: int) -> list[dict[str, Any]]:
    """``count`` realistic conversations: the examples again and again, each with its own id and e-mail."""
    base = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines() if line.strip()]
    records = []
    for index in range(count):
        record = json.loads(json.dumps(base[index % len(base)]))
        record["id"] = f"gen-{index}"
        record["messages"].append({"role": "user", "content": f"Write to me at user{index}@example.net"})
        records.append(record)
    return records


def _time_run(source: Path, out: Path, *options: str) -> tuple[float, float]:
    """Wall time of the command, and the CPU time of its own process (not its workers': they are the
    fork server's children, which the command never waits for)."""
    command = [sys.executable, "-m", "procflow", "run", str(source), "-o", str(out), "-q", *options]
    started = time.perf_counter()
    child = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise subprocess.CalledProcessError(child.returncode, command)
    return wall, usage.ru_utime + usage.ru_stime


def _time_halves(folder: Path, records: list[dict[str, Any]]) -> float:
    """Wall time of two independent single-process runs over the two halves at once: what two cores give."""
    commands = []
    for index, half in enumerate((records[: len(records) // 2], records[len(records) // 2 :])):
        path = folder / f"half{index}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in half), encoding="utf-8")
        out = str(folder / f"half{index}.out.jsonl")
        commands.append(
            [sys.executable, "-m", "procflow", "run", str(path), "-o", out, "-q", "--workers", "1"]
        )
    started = time.perf_counter()
    children = [
        subprocess.Popen(c, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for c in commands
    ]
    for child in children:
        child.wait()
    return time.perf_counter() - started


def run(size: str) -> list[Row]:
    """Time the three ways of running the same job; rows/s with the single process as the baseline."""
    count = SIZES[size]
    with tempfile.TemporaryDirectory(prefix="procflow-bench-scale-") as folder:
        source = Path(folder) / "in.jsonl"
        records = conversations(count)
        source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        single_seconds, single_cpu = _time_run(source, Path(folder) / "one.jsonl", "--workers", "1")
        ceiling = count / _time_halves(Path(folder), records)
        workers_seconds, parent_cpu = _time_run(source, Path(folder) / "two.jsonl", "--workers", "2")
        ray = (
            None
            if size == "tiny"
            else count / _time_run(source, Path(folder) / "ray.jsonl", "--engine", "ray")[0]
        )
    single, workers = count / single_seconds, count / workers_seconds
    note = f"{count:,} conversations, bundled guard, whole command (start-up included)"
    rows = [
        Row("scale", "procflow run, 1 process", single, "rows/s", note=note),
        Row(
            "scale",
            "procflow run --workers 2",
            workers,
            "rows/s",
            baseline=single,
            baseline_name="1 process",
            ratio=workers / single,
            budget=f"≥ {BUDGET}× (2 cores)",
            passed=None if size == "tiny" else workers / single >= BUDGET,
            note=f"{note}; the parent process's own CPU: {parent_cpu:.2f} s, "
            f"{parent_cpu / single_cpu:.0%} of one process's {single_cpu:.2f} s",
        ),
        Row(
            "scale",
            "2 independent processes, half the file each (the machine's ceiling)",
            ceiling,
            "rows/s",
            baseline=single,
            baseline_name="1 process",
            ratio=ceiling / single,
            note="what two cores give right now with no coordination at all; --workers 2 cannot beat it",
        ),
    ]
    if ray is None:
        rows.append(
            Row(
                "scale",
                "procflow run --engine ray --workers 2",
                0.0,
                "rows/s",
                note="skipped at tiny size: starting a Ray cluster (~10-20 s) dominates a few rows",
            )
        )
    else:
        rows.append(
            Row(
                "scale",
                "procflow run --engine ray --workers 2",
                ray,
                "rows/s",
                baseline=single,
                baseline_name="1 process",
                ratio=ray / single,
                note=f"{note}; a local 2-CPU cluster started by the command",
            )
        )
    return rows

"""``procflow run --engine ray`` and ``run_ray``: on a local 2-CPU Ray cluster, the single-process result."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import EXAMPLE_DATA, PIPELINES, chat, procflow, write_jsonl

from procflow._cli import run_ray

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(300),
]  # a local Ray cluster starts slowly on a loaded machine


@pytest.fixture(scope="module", autouse=True)
def ray_cluster() -> Iterator[None]:
    """One local Ray cluster (2 CPUs, no dashboard) for the whole module, shut down at its end."""
    try:
        import ray
        import ray.data
    except ImportError:
        pytest.fail(
            "Ray Data is not installed, so the Ray engine cannot be tested: "
            "pip install -e '.[dev]' (dev includes procflow[ray], i.e. ray[data])"
        )
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING, log_to_driver=False)
    yield
    ray.shutdown()


def _dataset(tmp_path: Path) -> Path:
    """The example conversations with three bad rows among them (bad JSON, a bad role, an over-long line)."""
    lines: list[Any] = EXAMPLE_DATA.read_text(encoding="utf-8").splitlines()
    lines.insert(4, '{"messages": [{"role": "user"')
    lines.insert(12, json.dumps({"messages": [{"role": "wizard", "content": "hi"}]}))
    lines.insert(20, json.dumps(chat(("user", "x" * 9000))))
    return write_jsonl(tmp_path / "in.jsonl", *lines)


def _single(tmp_path: Path, source: Path, *options: str) -> tuple[int, str, dict[str, Any]]:
    out, report = tmp_path / "single.jsonl", tmp_path / "single.json"
    done = procflow("run", source, "-o", out, "--report", report, "-q", "--workers", "1", *options)
    return done.returncode, out.read_text(encoding="utf-8"), _comparable(json.loads(report.read_text()))


def _comparable(report: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k not in ("seconds", "output")}


def test_run_ray_on_two_workers_equals_the_single_process_run(tmp_path: Path) -> None:
    """run_ray with 2 actors: the same conversations out (any order) and an identical report."""
    source = _dataset(tmp_path)
    code, expected, expected_report = _single(
        tmp_path, source, "--on-error", "skip", "--max-line-size", "8KB"
    )
    assert code == 0
    out = tmp_path / "ray.jsonl"
    report = run_ray(source, out, workers=2, on_error="skip", max_line_size=8000)
    assert sorted(out.read_text(encoding="utf-8").splitlines()) == sorted(expected.splitlines())
    assert _comparable(report) == expected_report
    assert [e["line"] for e in report["errors"]] == [5, 13, 21]  # per-row failures are never lost
    assert report["conversations"]["blocked"] > 0


def test_the_ray_engine_from_the_command_stops_at_the_first_bad_line_as_one_process_does(
    tmp_path: Path,
) -> None:
    """procflow run --engine ray with --on-error fail: exit 1, output and report those of one process."""
    source = _dataset(tmp_path)
    code, expected, expected_report = _single(tmp_path, source, "-p", f"{PIPELINES}:pipeline")
    out, report = tmp_path / "ray.jsonl", tmp_path / "ray.json"
    done = procflow(
        "run", source, "-p", f"{PIPELINES}:pipeline", "--engine", "ray", "-o", out, "--report", report, "-q"
    )
    assert (done.returncode, code) == (1, 1)
    assert f"{source}:5: invalid JSON" in done.stderr
    assert out.read_text(encoding="utf-8") == expected
    assert _comparable(json.loads(report.read_text())) == expected_report


def test_parquet_out_keeps_failed_rows_and_reads_back_in(tmp_path: Path) -> None:
    """Parquet output has a row per input row, failures with their error; read back it gives the same run."""
    import pyarrow.parquet as pq

    source = _dataset(tmp_path)
    first = run_ray(source, tmp_path / "out.parquet", on_error="skip", max_line_size=8000)
    table = pq.read_table(tmp_path / "out.parquet").sort_by("line")
    assert table.num_rows == first["conversations"]["lines"]
    failed = [(r["line"], r["error"]) for r in table.to_pylist() if r["error"] is not None]
    assert failed == [(e["line"], e["error"]) for e in first["errors"]]
    again = run_ray(tmp_path / "out.parquet", tmp_path / "again.jsonl", on_error="skip")
    assert again["conversations"]["written"] == first["conversations"]["written"]
    assert again["redactions"] == {}  # the text was already redacted by the first run
    assert len(again["errors"]) == 3

"""Run every benchmark and print a Markdown table; write bench/results.json.

Usage: ``python -m bench [--size full|tiny] [--only NAME ...] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from bench._harness import Row

MODULES = [
    "core",
    "workflows",
    "langgraph_peer",
    "regex_filter",
    "agent_stream",
    "mastra_peer",
    "memory",
    "memory_turn",
    "token_limiter",
    "providers",
    "message_list",
    "gateway",
    "startup",
    "cache",
    "main_job",
    "scale",
]
# Rows that run another framework (LangGraph; Mastra on Node.js, installed with `npm ci`): only in
# `make bench`, never in the test suite's smoke run, which must not need the network or another runtime.
PEERS = ("langgraph_peer", "mastra_peer")


def _as_row(group: str, item: Any) -> Row:
    if isinstance(item, Row):
        return item
    data = dict(item)
    return Row(
        group=data.get("group", group),
        name=str(data["name"]),
        value=float(data["value"]),
        unit=str(data.get("unit", "")),
        baseline=data.get("baseline"),
        baseline_name=str(data.get("baseline_name", "")),
        ratio=data.get("ratio"),
        budget=str(data.get("budget", "")),
        passed=data.get("passed"),
        spread=data.get("spread"),
        note=str(data.get("note", "")),
    )


async def run_module(name: str, size: str) -> list[Row]:
    """Import ``bench.<name>`` and run its ``run(size)`` (sync or async)."""
    module = importlib.import_module(f"bench.{name}")
    result = module.run(size)
    if inspect.isawaitable(result):
        result = await result
    return [_as_row(name, item) for item in result]


def _fmt(value: float | None) -> str:
    if value is None:
        return ""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def markdown(rows: list[Row]) -> str:
    """The results as a Markdown table."""
    lines = [
        "| group | benchmark | value | baseline | ratio | budget | status |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        status = {True: "pass", False: "OVER", None: "info"}[row.passed]
        baseline = f"{_fmt(row.baseline)} ({row.baseline_name})" if row.baseline is not None else ""
        ratio = f"{row.ratio:.2f}×" if row.ratio is not None else ""
        spread = f" ±{row.spread * 100:.0f}%" if row.spread else ""
        lines.append(
            f"| {row.group} | {row.name} | {_fmt(row.value)} {row.unit}{spread} | {baseline} | {ratio} | "
            f"{row.budget} | {status} |"
        )
    return "\n".join(lines)


async def main_async(size: str, only: list[str], out: Path) -> dict[str, Any]:
    rows: list[Row] = []
    started = time.perf_counter()
    for name in MODULES:
        if only and name not in only:
            continue
        print(f"… {name}", file=sys.stderr, flush=True)
        try:
            rows.extend(await run_module(name, size))
        except Exception as exc:  # one broken or unavailable benchmark must not stop the others
            print(f"  skipped {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
    print(markdown(rows))
    payload = {
        "size": size,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "seconds": round(time.perf_counter() - started, 1),
        "rows": [r.to_dict() for r in rows],
    }
    return payload


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--size", choices=["full", "tiny"], default="full")
    parser.add_argument("--only", nargs="*", default=[], help=f"subset of: {', '.join(MODULES)}")
    parser.add_argument("--json", type=Path, default=Path(__file__).with_name("results.json"))
    args = parser.parse_args()
    payload = anyio.run(main_async, args.size, args.only, args.json)
    args.json.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\nwrote {args.json} in {payload['seconds']} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

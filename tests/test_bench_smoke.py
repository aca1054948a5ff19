"""Every procflow benchmark module runs with tiny sizes, so the bench code never rots (no timing asserts).

The side-by-side rows against other frameworks (``PEERS``) run in ``make bench`` only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.__main__ import MODULES, PEERS, markdown, run_module

BENCH = Path(__file__).resolve().parent.parent / "bench"
PRESENT = [name for name in MODULES if name not in PEERS and (BENCH / f"{name}.py").exists()]


@pytest.mark.parametrize("name", PRESENT)
async def test_benchmark_runs_tiny(name: str) -> None:
    """The module returns well-formed rows that render in the Markdown table."""
    rows = await run_module(name, "tiny")
    assert rows, f"bench.{name} returned no rows"
    for row in rows:
        assert row.name and row.unit
        assert row.value == row.value  # not NaN
    assert markdown(rows).count("\n") == len(rows) + 1

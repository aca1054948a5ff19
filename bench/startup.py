"""Start-up: ``import procflow`` and ``procflow --help`` in a fresh interpreter, against ``python -c pass``.

Budgets (issue 21): ``import procflow`` ≤ 150 ms and ``procflow --help`` ≤ 250 ms of wall time. The three
commands are run in interleaved rounds (so load on the machine hits them alike); each row gives the median
with its spread, the median of ``python -c pass`` as the baseline, and in the note the time added above
the bare interpreter and the fastest round.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench._harness import Row, summarize

ROUNDS = {"full": 15, "tiny": 2}
ROOT = Path(__file__).resolve().parent.parent
_SCRIPT = Path(sys.executable).with_name("procflow")

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import procflow": [sys.executable, "-c", "import procflow"],
    "procflow --help": [str(_SCRIPT), "--help"]
    if _SCRIPT.exists()
    else [sys.executable, "-c", "import sys; from procflow._cli import main; sys.exit(main(['--help']))"],
}
BUDGETS_MS = {"import procflow": 150.0, "procflow --help": 250.0}


def _wall(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def run(size: str) -> list[Row]:
    """Time each command over interleaved rounds; one row per budgeted command."""
    samples: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for command in COMMANDS.values():  # warm the file system cache
        _wall(command)
    for _ in range(ROUNDS[size]):
        for name, command in COMMANDS.items():
            samples[name].append(_wall(command))
    floor = statistics.median(samples["python -c pass"]) * 1000
    rows = []
    for name, budget in BUDGETS_MS.items():
        timing = summarize(samples[name])
        value = timing.median * 1000
        rows.append(
            Row(
                group="startup",
                name=name,
                value=value,
                unit="ms",
                baseline=floor,
                baseline_name="python -c pass",
                ratio=value / floor if floor else None,
                budget=f"≤ {budget:.0f} ms",
                passed=value <= budget,
                spread=timing.spread,
                note=f"+{value - floor:.0f} ms over the bare interpreter; "
                f"fastest {min(samples[name]) * 1000:.0f} ms",
            )
        )
    return rows

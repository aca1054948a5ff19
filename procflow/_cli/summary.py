"""The statistics of one ``procflow run``: the summary table and the ``--report`` JSON."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table

from procflow._cli.processing import Outcome

__all__ = ["RunStats"]


@dataclass(slots=True)
class RunStats:
    """Counts and timings of one run.

    Attributes:
        pipeline: The pipeline reference (``default`` for the bundled guard).
        input: The input path (``-`` for stdin).
        output: The output path (``-`` for stdout).
        lines: Non-blank input lines seen.
        processed: Conversations processed (blocked ones included).
        blocked: Conversations a tripwire blocked.
        skipped: Lines skipped because of an error (``--on-error skip``).
        written: Records written to the output.
        redactions: Redactions per rule.
        warnings: Matches per rule reported by ``warn``-strategy processors.
        blocked_by: Blocked conversations per processor id.
        errors: ``{"line": n, "error": "..."}`` for every bad line or failed conversation.
        interrupted: Whether the run was stopped before the end of the input.
    """

    pipeline: str
    input: str
    output: str
    lines: int = 0
    processed: int = 0
    blocked: int = 0
    skipped: int = 0
    written: int = 0
    redactions: Counter[str] = field(default_factory=Counter)
    warnings: Counter[str] = field(default_factory=Counter)
    blocked_by: Counter[str] = field(default_factory=Counter)
    errors: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False
    started: float = field(default_factory=time.perf_counter)
    finished: float | None = None

    @property
    def seconds(self) -> float:
        """Wall time of the run so far (or in total, once finished)."""
        end = self.finished if self.finished is not None else time.perf_counter()
        return end - self.started

    def add(self, outcome: Outcome) -> None:
        """Count one processed conversation."""
        blocked_by = None if outcome.tripwire is None else outcome.tripwire.processor_id or "unknown"
        self.count(outcome.redactions, outcome.warnings, blocked_by)

    def count(
        self, redactions: Mapping[str, int], warnings: Mapping[str, int], blocked_by: str | None
    ) -> None:
        """Count one processed conversation from its counts (as a worker process sends them back).

        Args:
            redactions: Redactions per rule.
            warnings: ``warn``-strategy matches per rule.
            blocked_by: The id of the processor that blocked it (``unknown`` when it had none), or
                ``None`` when it was not blocked.
        """
        self.processed += 1
        if redactions:
            self.redactions.update(redactions)
        if warnings:
            self.warnings.update(warnings)
        if blocked_by is not None:
            self.blocked += 1
            self.blocked_by[blocked_by] += 1

    def finish(self) -> None:
        """Stop the clock."""
        self.finished = time.perf_counter()

    def to_report(self) -> dict[str, Any]:
        """Return the JSON-ready summary written by ``--report``."""
        return {
            "pipeline": self.pipeline,
            "input": self.input,
            "output": self.output,
            "conversations": {
                "lines": self.lines,
                "processed": self.processed,
                "blocked": self.blocked,
                "skipped": self.skipped,
                "written": self.written,
            },
            "redactions": dict(sorted(self.redactions.items())),
            "redactions_total": sum(self.redactions.values()),
            "warnings": dict(sorted(self.warnings.items())),
            "blocked_by": dict(sorted(self.blocked_by.items())),
            "errors": self.errors,
            "interrupted": self.interrupted,
            "seconds": round(self.seconds, 4),
        }

    def render(self, console: Console) -> None:
        """Print the summary tables to ``console``."""
        title = "procflow run" + (" (interrupted)" if self.interrupted else "")
        table = Table(title=title, show_header=False, title_justify="left")
        table.add_column("what")
        table.add_column("value")
        table.add_row("pipeline", self.pipeline)
        table.add_row("conversations processed", str(self.processed))
        table.add_row("blocked", str(self.blocked))
        if self.skipped:
            table.add_row("bad lines skipped", str(self.skipped))
        table.add_row("redactions", str(sum(self.redactions.values())))
        rate = self.processed / self.seconds if self.seconds > 0 else 0.0
        table.add_row("time", f"{self.seconds:.2f} s ({rate:,.0f} conversations/s)")
        table.add_row("output", self.output)
        console.print(table)
        for heading, counts in (
            ("redactions by rule", self.redactions),
            ("warnings by rule", self.warnings),
            ("blocked by processor", self.blocked_by),
        ):
            if counts:
                console.print(_counts_table(heading, counts))


def _counts_table(heading: str, counts: Counter[str]) -> Table:
    table = Table(title=heading, title_justify="left")
    table.add_column(heading.split(" by ")[1])
    table.add_column(heading.split(" by ")[0], justify="right")
    for name, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        table.add_row(name, str(count))
    return table

"""Measuring helpers: warm-up, repetitions, median and spread; rows with a same-run baseline ratio."""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["Row", "Timing", "summarize", "time_async", "time_sync"]


@dataclass(frozen=True, slots=True)
class Timing:
    """Per-iteration seconds: the median of the repetitions and their spread (max - min) / median."""

    median: float
    spread: float
    samples: int


@dataclass(frozen=True, slots=True)
class Row:
    """One benchmark result, compared with a baseline measured in the same process."""

    group: str
    name: str
    value: float
    unit: str
    baseline: float | None = None
    baseline_name: str = ""
    ratio: float | None = None
    budget: str = ""
    passed: bool | None = None
    spread: float | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def summarize(samples: list[float]) -> Timing:
    """Median and spread of per-iteration samples measured by hand (e.g. interleaved with a baseline)."""
    median = statistics.median(samples)
    spread = (max(samples) - min(samples)) / median if median else 0.0
    return Timing(median, spread, len(samples))


def time_sync(fn: Callable[[], Any], *, number: int, repeat: int = 7, warmup: int = 1) -> Timing:
    """Time ``fn`` called ``number`` times per repetition; return per-call seconds."""
    for _ in range(warmup):
        for _ in range(max(1, number // 10)):
            fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - start) / number)
    return summarize(samples)


async def time_async(
    fn: Callable[[], Awaitable[Any]], *, number: int, repeat: int = 7, warmup: int = 1
) -> Timing:
    """Time ``await fn()`` called ``number`` times per repetition; return per-call seconds."""
    for _ in range(warmup):
        for _ in range(max(1, number // 10)):
            await fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            await fn()
        samples.append((time.perf_counter() - start) / number)
    return summarize(samples)

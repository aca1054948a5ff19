"""Conversation length: the input phase's cost per message, from 50 to 1,600 messages.

A processor that returns every message rewritten (as a redactor does) makes the runner apply the
returned list to the live ``MessageList``; that must cost O(1) per message, so the per-message cost
at 1,600 messages is reported as a ratio of the per-message cost at 50 (budget: flat, ≤ 1.5×). The
lengths take turns in every repetition, and ratios are medians of per-repetition ratios.

The budget row times with the cyclic garbage collector paused, as :mod:`timeit` does: it measures
the operations' own cost. Python's collector is not flat in the live working set (a 1,600-message
conversation keeps every copy alive through many young collections, so they are promoted and
trigger full collections that a 50-message conversation never reaches), so the same timing with the
collector running is reported next to it as information.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Awaitable, Callable

from bench._harness import Row
from procflow import Message
from procflow.processors import ProcessInputArgs
from procflow.testing import run_input

SIZES = {"full": ((50, 200, 1600), 9), "tiny": ((5, 20), 2)}
BUDGET = 1.5
CALLS = 4000
"""Messages per timed sample at every length (``CALLS // n`` conversations of ``n``)."""


class RewriteAll:
    """Returns a changed copy of every message, the worst case for applying a hook's result."""

    id = "rewrite-all"

    def process_input(self, args: ProcessInputArgs) -> list[Message]:
        return [m.with_text(m.text + "!") for m in args.messages]


async def _per_message(once: Callable[[], Awaitable[None]], n: int, *, collect: bool) -> float:
    """Seconds per message over ``CALLS // n`` calls, the collector paused unless ``collect``."""
    number = max(1, CALLS // n)
    gc.collect()
    if not collect:
        gc.disable()
    try:
        started = time.perf_counter()
        for _ in range(number):
            await once()
        return (time.perf_counter() - started) / number / n
    finally:
        gc.enable()


async def run(size: str = "full") -> list[Row]:
    """Per-message input-phase cost at each conversation length, against the shortest."""
    lengths, repeat = SIZES[size]
    processor = RewriteAll()
    calls: dict[int, Callable[[], Awaitable[None]]] = {}
    for n in lengths:
        messages = [Message.user(f"message {i} with a little text") for i in range(n)]

        async def once(messages: list[Message] = messages) -> None:
            await run_input(processor, messages)

        calls[n] = once
        await once()  # warm-up
    paused: dict[int, list[float]] = {n: [] for n in lengths}
    collecting: dict[int, list[float]] = {n: [] for n in lengths}
    for _ in range(repeat):
        for n in lengths:
            paused[n].append(await _per_message(calls[n], n, collect=False))
            collecting[n].append(await _per_message(calls[n], n, collect=True))
    shortest, longest = lengths[0], lengths[-1]

    def ratio(samples: dict[int, list[float]], n: int) -> float:
        return statistics.median(a / b for a, b in zip(samples[n], samples[shortest], strict=True))

    rows = []
    for n in lengths[1:]:
        value = ratio(paused, n)
        rows.append(
            Row(
                group="message_list",
                name=f"input phase, every message rewritten: cost per message at {n} messages",
                value=statistics.median(paused[n]) * 1e6,
                unit="µs/message",
                baseline=statistics.median(paused[shortest]) * 1e6,
                baseline_name=f"at {shortest} messages",
                ratio=value,
                budget=f"≤ {BUDGET}×" if n == longest else "",
                passed=value <= BUDGET if n == longest else None,
                note="the cyclic garbage collector paused while timing, as timeit does",
            )
        )
    rows.append(
        Row(
            group="message_list",
            name=f"input phase, every message rewritten, collector running: cost per message at {longest}",
            value=statistics.median(collecting[longest]) * 1e6,
            unit="µs/message",
            baseline=statistics.median(collecting[shortest]) * 1e6,
            baseline_name=f"at {shortest} messages, collector running",
            ratio=ratio(collecting, longest),
            budget="info",
            note="Python's generational collector: a long conversation keeps more objects alive "
            "through young collections, which promotes them and triggers full collections",
        )
    )
    return rows

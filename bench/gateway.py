"""Gateway load test: concurrent streams through `procflow serve` vs straight to the upstream, on loopback.

The upstream is the fake provider (its own process); the gateway is the real `procflow serve` command
(its own process, one event loop: it can use one core) running the bundled guard (Unicode
normalisation, RegexFilter redaction of PII and secrets, a prompt-injection block, a token limit). Each
load level keeps ``concurrency`` streams going for ``seconds`` (a closed loop: a stream that ends is
followed at once by the next), first straight to the upstream (the baseline), then through the
gateway, each after a short unmeasured warm-up. Two kinds of level, measuring different things:

* **Paced streams** (the DESIGN §7 budget, on the 200-stream level). The upstream answers the way a
  hosted model streams: its first event after :data:`PACE` ``first_delay`` (time to first token), then
  one event of ``chunk_size`` characters every ``delay`` seconds. The pace is taken from what real
  providers do, not tuned to this machine: OpenAI's Chat Completions stream sends one token (about 4
  characters of English) per event, and its fast models produce 50–100 tokens a second, so events come
  10–20 ms apart; the first token takes 0.3–1 s (Anthropic's deltas are larger and rarer, so this is the
  harder case for a gateway, whose cost is mostly per event). Here: 4 characters every 15 ms (about 67
  tokens/s) after 0.4 s, so the 204-character answer is a stream of about 1.2 s, and 200 streams open
  at once are about 165 new streams and 11,000 events a second. That is what "200 concurrent streams"
  means for a real upstream, and the added p50/p99 is latency the gateway adds to such a stream.
* **Saturation** (unpaced, no budget). The upstream answers each request at once with the whole stream
  (20-character chunks in one write), so the closed loop measures throughput: streams per second
  straight to the upstream and through the gateway, and the gateway's CPU time per stream. Past a few
  concurrent streams the latency of these rows is queueing for the CPU (Little's law: streams in flight
  / streams per second), which is why they carry no latency budget.

The load generator reads its streams with plain socket reads (:mod:`bench._http_load`), not httpx:
read through httpx a paced event costs the load generator about what it costs the gateway, and the
direct baseline at 100 paced streams was then 3.8 s for a 1.2 s stream (the load generator saturated).

For both kinds the gateway's CPU time per stream (user + system of its process over the measured phase,
divided by the streams done) is the number that says what the gateway itself costs; divided by the
events per stream it is the cost per event. One gateway process saturates near 1000 / (CPU ms per
stream) streams a second: the last row says what that is for paced streams on this machine. On a
2-core machine shared with the fake upstream and the load generator (and here with other work) every
latency row is noisy: compare runs, not single numbers. A last row (:mod:`bench._gateway_pool`) measures
in one process what the gateway's small upstream pools save when many upstream connections sit idle,
which the closed loop rarely leaves.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

import anyio
import httpx

from bench._gateway_pool import pool_rows
from bench._harness import Row
from bench._http_load import LoadConnection

Kind = Literal["paced", "saturation"]

SIZES: dict[str, tuple[tuple[Kind, int, float], ...]] = {
    "full": (
        ("paced", 1, 30.0),
        ("paced", 50, 20.0),
        ("paced", 200, 20.0),
        ("saturation", 1, 10.0),
        ("saturation", 50, 20.0),
        ("saturation", 200, 20.0),
    ),
    "tiny": (("paced", 4, 0.5), ("saturation", 4, 1.0)),
}
"""Load levels: kind, concurrent streams, seconds of load per phase (direct, then through the gateway)."""

WARMUP_SECONDS = {"full": 3.0, "tiny": 0.3}
"""Unmeasured load before each phase: connections, lazy imports, the token counter's encoding."""


@dataclass(frozen=True, slots=True)
class Pace:
    """How the upstream paces a paced stream: seconds to the first event, between events, characters
    per text event."""

    first_delay: float
    delay: float
    chunk_size: int


PACE = {"full": Pace(first_delay=0.4, delay=0.015, chunk_size=4), "tiny": Pace(0.02, 0.002, 4)}
"""The paced upstream: one token (4 characters) every 15 ms after 0.4 s, like OpenAI's fast models (see
the module docstring); ``tiny`` (the test suite's smoke run) only checks that the code runs."""

BUDGET_MS = 5.0
"""DESIGN §7: added p99 latency at 200 concurrent streams."""

BUDGET_STREAMS = 200
"""The paced level the budget applies to."""

TEXT = "Our support team answers within a day. Thank you for your patience. " * 3

PACED_MARK = "(paced)"
"""In the user message of a paced request: the upstream paces its answer to it."""

_UPSTREAM = """
import json, sys, threading
from procflow.testing import FakeProviderServer, FakeReply
text, pace = sys.argv[1], json.loads(sys.argv[2])
fast = FakeReply(text=text, chunk_size=20)
paced = FakeReply(text=text, **pace)
def answer(request):
    return paced if sys.argv[3].encode() in request.body else fast
server = FakeProviderServer([answer] * 2_000_000).start()
print(server.base_url, flush=True)
threading.Event().wait()
"""


class _Child:
    """A child process; with ``stderr`` captured, its text once it has ended."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.stderr_text = ""


@contextmanager
def _process(command: list[str], *, stderr: bool = False) -> Iterator[_Child]:
    with tempfile.TemporaryFile("w+") as log:
        target = log if stderr else subprocess.DEVNULL
        child = _Child(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=target, text=True))
        try:
            yield child
        finally:
            child.process.terminate()
            child.process.wait(10)
            if child.process.stdout is not None:
                child.process.stdout.close()
            log.seek(0)
            child.stderr_text = log.read()


async def _wait_healthy(client: httpx.AsyncClient, url: str) -> None:
    with anyio.fail_after(30):
        while True:
            try:
                if (await client.get(url)).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await anyio.sleep(0.05)


async def _load(
    url: str, body: dict[str, object], concurrency: int, seconds: float
) -> tuple[list[float], Counter[str], int]:
    """Keep ``concurrency`` streams going for ``seconds``: per-stream latencies, errors by kind, and the
    events in one stream.

    Each stream has its own keep-alive connection (:class:`~bench._http_load.LoadConnection`). An
    error's kind is the exception chain (type and message), the HTTP status and the start of the body,
    the error event a 200 stream carried, or ``"no [DONE]"`` for a stream cut short: a run says *what*
    failed, not just how often.
    """
    latencies: list[float] = []
    errors: Counter[str] = Counter()
    events = 0
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal events
        connection = LoadConnection(url, body)
        try:
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                try:
                    with anyio.fail_after(60):
                        answer = await connection.send()
                except (
                    OSError,
                    TimeoutError,
                    ValueError,
                    anyio.EndOfStream,
                    anyio.BrokenResourceError,
                ) as exc:
                    errors[_error_kind(exc)] += 1
                    continue
                text = answer.body
                if answer.status != 200:
                    errors[f"HTTP {answer.status}: {text[:120].decode(errors='replace')}"] += 1
                elif (at := text.find(b'data: {"error"')) >= 0:
                    errors[f"error event: {text[at + 6 : at + 166].decode(errors='replace')}"] += 1
                elif not text.rstrip().endswith(b"[DONE]"):
                    errors[f"no [DONE]: ...{text[-120:].decode(errors='replace')}"] += 1
                else:
                    latencies.append(time.perf_counter() - started)
                    events = text.count(b"data: ")
        finally:
            await connection.aclose()

    async with anyio.create_task_group() as group:
        for _ in range(concurrency):
            group.start_soon(worker)
    return latencies, errors, events


def _error_kind(exc: BaseException) -> str:
    """The exception and what caused it, without the URL."""
    parts = []
    cause: BaseException | None = exc
    while cause is not None and len(parts) < 4:
        parts.append(f"{type(cause).__name__}({str(cause)[:80]})" if str(cause) else type(cause).__name__)
        cause = cause.__cause__ or cause.__context__
    return " ← ".join(parts)


def _p(values: list[float], q: float) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def _cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) of process ``pid`` so far, where ``/proc`` tells it (Linux)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(slots=True)
class _Phase:
    """One phase's results: stream latencies, errors by kind, seconds, a process's CPU seconds, and the
    events of one stream."""

    latencies: list[float]
    errors: Counter[str]
    seconds: float
    cpu: float | None
    events: int

    def per_stream_ms(self) -> float | None:
        return None if self.cpu is None or not self.latencies else self.cpu * 1000 / len(self.latencies)

    def rate(self) -> float:
        return len(self.latencies) / self.seconds


async def _phase(
    url: str,
    body: dict[str, object],
    level: tuple[int, float],
    warmup: float,
    pid: int,
) -> _Phase:
    concurrency, seconds = level
    _, errors, _ = await _load(url, body, concurrency, warmup)
    before, started = _cpu_seconds(pid), time.perf_counter()
    latencies, measured, events = await _load(url, body, concurrency, seconds)
    # The phase lasts until its last stream ends (a paced stream started just before the deadline too).
    after, ended = _cpu_seconds(pid), time.perf_counter()
    cpu = None if before is None or after is None else after - before
    return _Phase(latencies, errors + measured, ended - started, cpu, events)


@dataclass(frozen=True, slots=True)
class _Setup:
    upstream_url: str
    gateway_url: str
    upstream_pid: int
    gateway_pid: int
    warmup: float


async def _level(setup: _Setup, kind: Kind, concurrency: int, seconds: float) -> list[Row]:
    question = "When do you answer?" + (f" {PACED_MARK}" if kind == "paced" else "")
    body: dict[str, object] = {
        "model": "m1",
        "stream": True,
        "messages": [{"role": "user", "content": question}],
        # As the gateway's own upstream call does: the upstream then sends (and paces) the same events.
        "stream_options": {"include_usage": True},
    }
    upstream = setup.upstream_url + "/chat/completions"
    level = (concurrency, seconds)
    direct = await _phase(upstream, body, level, setup.warmup, setup.upstream_pid)
    through = await _phase(setup.gateway_url, body, level, setup.warmup, setup.gateway_pid)
    if kind == "paced":
        return _paced_rows(f"paced, {concurrency} streams open × {seconds:g} s", concurrency, direct, through)
    return _saturation_rows(f"saturation (unpaced), {concurrency} streams × {seconds:g} s", direct, through)


def _done(direct: _Phase, through: _Phase) -> str:
    return (
        f"{len(through.latencies)} streams via the gateway ({through.rate():.0f}/s), "
        f"{len(direct.latencies)} direct ({direct.rate():.0f}/s)"
    )


def _paced_rows(load: str, concurrency: int, direct: _Phase, through: _Phase) -> list[Row]:
    done = _done(direct, through)
    budgeted = concurrency == BUDGET_STREAMS
    rows: list[Row] = []
    for q in (50, 99):
        base, value = _p(direct.latencies, q) * 1000, _p(through.latencies, q) * 1000
        added = value - base
        rows.append(
            Row(
                group="gateway",
                name=f"{load}: p{q} latency added by the gateway",
                value=added,
                unit="ms",
                baseline=base,
                baseline_name=f"p{q} of the whole stream straight to the upstream",
                ratio=value / base if base else None,
                budget=f"≤ {BUDGET_MS:g} ms" if q == 99 and budgeted else "",
                passed=(added <= BUDGET_MS) if q == 99 and budgeted else None,
                note=done,
            )
        )
    return rows + _cpu_rows(load, direct, through) + [_error_row(load, direct, through, done)]


def _saturation_rows(load: str, direct: _Phase, through: _Phase) -> list[Row]:
    done = _done(direct, through)
    p50 = (
        f"p50 of a stream {_p(through.latencies, 50) * 1000:.0f} ms via the gateway, "
        f"{_p(direct.latencies, 50) * 1000:.1f} ms direct (queueing: no budget)"
    )
    rows = [
        Row(
            group="gateway",
            name=f"{load}: streams per second through the gateway",
            value=through.rate(),
            unit="streams/s",
            baseline=direct.rate(),
            baseline_name="streams per second straight to the upstream",
            ratio=through.rate() / direct.rate() if direct.rate() else None,
            note=p50,
        )
    ]
    return rows + _cpu_rows(load, direct, through) + [_error_row(load, direct, through, done)]


def _cpu_rows(load: str, direct: _Phase, through: _Phase) -> list[Row]:
    gateway_cpu, upstream_cpu = through.per_stream_ms(), direct.per_stream_ms()
    if gateway_cpu is None:
        return []
    per_event = f"{gateway_cpu * 1000 / through.events:.0f} µs per event" if through.events else ""
    return [
        Row(
            group="gateway",
            name=f"{load}: gateway CPU time per stream",
            value=gateway_cpu,
            unit="ms",
            baseline=upstream_cpu,
            baseline_name="the fake upstream's CPU time per direct stream",
            ratio=gateway_cpu / upstream_cpu if upstream_cpu else None,
            note=(
                f"user + system time of the gateway process over the measured phase / streams done; "
                f"{through.events} events per stream, {per_event}"
            ),
        )
    ]


def _error_row(load: str, direct: _Phase, through: _Phase, done: str) -> Row:
    errors = direct.errors + through.errors
    kinds = "; ".join(f"{count} × {kind}" for kind, count in errors.most_common(5))
    return Row(
        group="gateway",
        name=f"{load}: errors (gateway {through.errors.total()}, direct {direct.errors.total()})",
        value=float(errors.total()),
        unit="errors",
        budget="0",
        passed=not errors,
        note=kinds or f"{done}; all complete (warm-up included)",
    )


def _saturation_estimate(rows: list[Row]) -> list[Row]:
    """What rate of paced streams one gateway process sustains: one core / CPU time per paced stream."""
    paced = [row for row in rows if row.name.startswith("paced") and "CPU time per stream" in row.name]
    if not paced or not paced[-1].value:
        return []
    per_stream_ms = paced[-1].value
    return [
        Row(
            group="gateway",
            name="paced streams per second one gateway process can sustain (one core)",
            value=1000 / per_stream_ms,
            unit="streams/s",
            note=(
                f"1000 / {per_stream_ms:.2f} ms (the CPU per stream of the largest paced level); the "
                "gateway runs one event loop, so one core is its ceiling, shared here with everything else"
            ),
        )
    ]


async def run(size: str = "full") -> list[Row]:
    """Paced and unpaced concurrent streams through the gateway vs straight to the upstream."""
    levels = SIZES[size]
    pace = PACE[size]
    upstream_args = [TEXT, json.dumps(_pace_dict(pace))]
    with _process([sys.executable, "-c", _UPSTREAM, *upstream_args, PACED_MARK]) as upstream:
        assert upstream.process.stdout is not None
        upstream_url = upstream.process.stdout.readline().strip()
        port = _free_port()
        most = max(concurrency for _, concurrency, _ in levels)
        command = [sys.executable, "-m", "procflow", "serve", "--upstream", upstream_url]
        command += ["--upstream-model", "m1", "--port", str(port), "--max-concurrent", str(most)]
        with _process(command, stderr=True) as gateway:
            async with httpx.AsyncClient() as probe:
                await _wait_healthy(probe, f"http://127.0.0.1:{port}/healthz")
            setup = _Setup(
                upstream_url=upstream_url,
                gateway_url=f"http://127.0.0.1:{port}/v1/chat/completions",
                upstream_pid=upstream.process.pid,
                gateway_pid=gateway.process.pid,
                warmup=WARMUP_SECONDS[size],
            )
            rows: list[Row] = []
            for kind, concurrency, seconds in levels:
                rows += await _level(setup, kind, concurrency, seconds)
    if any(row.unit == "errors" and row.value for row in rows) and gateway.stderr_text:
        print("gateway stderr (last 40 lines):", *gateway.stderr_text.splitlines()[-40:], sep="\n")
    return rows + _saturation_estimate(rows) + await pool_rows(size)


def _pace_dict(pace: Pace) -> dict[str, float]:
    return {"first_delay": pace.first_delay, "delay": pace.delay, "chunk_size": pace.chunk_size}


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])

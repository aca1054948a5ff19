"""Gateway load test: concurrent streams through `procflow serve` vs straight to the upstream, on loopback.

The upstream is the fake provider (its own process), answering every request with the same streamed
text; the gateway is the real `procflow serve` command (its own process) running the bundled guard
(Unicode normalisation, RegexFilter redaction of PII and secrets, a prompt-injection block, a token
limit). For each load level the load generator keeps ``concurrency`` streams open for ``seconds``, first
straight to the upstream (the baseline), then through the gateway (each after a short unmeasured
warm-up), and reports p50/p99 of the whole-stream latency, the latency the gateway adds, every error by
kind, and the gateway's CPU time per stream. Each process has its own interpreter; on a 2-core machine
they share the cores with the load generator, so past a few concurrent streams the added latency is
mostly queueing for the CPU (Little's law: streams in flight / streams per second), and the CPU time
per stream is the number that says what the gateway itself costs.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass

import anyio
import httpx

from bench._harness import Row

SIZES = {"full": ((1, 10.0), (50, 30.0), (200, 30.0)), "tiny": ((4, 1.0),)}
"""Load levels: concurrent streams, seconds of load per phase (direct, then through the gateway)."""

WARMUP_SECONDS = {"full": 3.0, "tiny": 0.3}
"""Unmeasured load before each phase: connections, lazy imports, the token counter's encoding."""

STREAMS_PER_CLIENT = 25
"""Load-generator streams per ``httpx.AsyncClient``: httpcore's pool does work per connection it holds on
every request, so one client for 200 streams would make the load generator the bottleneck."""

BUDGET_MS = 5.0
"""DESIGN §7: added p99 latency at 200 concurrent streams."""

TEXT = "Our support team answers within a day. Thank you for your patience. " * 3

_UPSTREAM = """
import sys, threading
from procflow.testing import FakeProviderServer, FakeReply
reply = FakeReply(text=sys.argv[1], chunk_size=20)
server = FakeProviderServer([reply] * 500_000).start()
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
    clients: list[httpx.AsyncClient], url: str, concurrency: int, seconds: float
) -> tuple[list[float], Counter[str]]:
    """Keep ``concurrency`` streams going for ``seconds``; return per-stream latencies and errors by kind.

    An error's kind is the exception chain (type and message), the HTTP status and the start of the
    body, the error event a 200 stream carried, or ``"no [DONE]"`` for a stream cut short: a run says
    *what* failed, not just how often.
    """
    latencies: list[float] = []
    errors: Counter[str] = Counter()
    body = {"model": "m1", "stream": True, "messages": [{"role": "user", "content": "When do you answer?"}]}
    deadline = time.perf_counter() + seconds

    async def worker(client: httpx.AsyncClient) -> None:
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            try:
                async with client.stream("POST", url, json=body) as response:
                    text = await response.aread()
            except httpx.HTTPError as exc:
                errors[_error_kind(exc)] += 1
                continue
            if response.status_code != 200:
                errors[f"HTTP {response.status_code}: {text[:120].decode(errors='replace')}"] += 1
            elif (at := text.find(b'data: {"error"')) >= 0:
                errors[f"error event: {text[at + 6 : at + 166].decode(errors='replace')}"] += 1
            elif not text.rstrip().endswith(b"[DONE]"):
                errors[f"no [DONE]: ...{text[-120:].decode(errors='replace')}"] += 1
            else:
                latencies.append(time.perf_counter() - started)

    async with anyio.create_task_group() as group:
        for i in range(concurrency):
            group.start_soon(worker, clients[i % len(clients)])
    return latencies, errors


def _error_kind(exc: BaseException) -> str:
    """The exception and what caused it (httpx's transport errors wrap the socket's), without the URL."""
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
    """One phase's results: stream latencies, errors by kind, seconds, and a process's CPU seconds."""

    latencies: list[float]
    errors: Counter[str]
    seconds: float
    cpu: float | None

    def per_stream_ms(self) -> float | None:
        return None if self.cpu is None or not self.latencies else self.cpu * 1000 / len(self.latencies)


async def _phase(
    clients: list[httpx.AsyncClient], url: str, concurrency: int, seconds: float, warmup: float, pid: int
) -> _Phase:
    _, errors = await _load(clients, url, concurrency, warmup)
    before = _cpu_seconds(pid)
    latencies, measured = await _load(clients, url, concurrency, seconds)
    after = _cpu_seconds(pid)
    cpu = None if before is None or after is None else after - before
    return _Phase(latencies, errors + measured, seconds, cpu)


@dataclass(frozen=True, slots=True)
class _Setup:
    upstream_url: str
    gateway_url: str
    upstream_pid: int
    gateway_pid: int
    warmup: float


async def _level(setup: _Setup, concurrency: int, seconds: float) -> list[Row]:
    async with AsyncExitStack() as stack:
        clients = []
        for _ in range(-(-concurrency // STREAMS_PER_CLIENT)):
            limits = httpx.Limits(
                max_connections=STREAMS_PER_CLIENT, max_keepalive_connections=STREAMS_PER_CLIENT
            )
            clients.append(await stack.enter_async_context(httpx.AsyncClient(limits=limits, timeout=60)))
        upstream = setup.upstream_url + "/chat/completions"
        direct = await _phase(clients, upstream, concurrency, seconds, setup.warmup, setup.upstream_pid)
        through = await _phase(
            clients, setup.gateway_url, concurrency, seconds, setup.warmup, setup.gateway_pid
        )
    return _rows(f"{concurrency} concurrent streams × {seconds:g} s", direct, through)


def _rows(load: str, direct: _Phase, through: _Phase) -> list[Row]:
    via, straight = len(through.latencies), len(direct.latencies)
    done = (
        f"{via} streams via the gateway ({via / through.seconds:.0f}/s), "
        f"{straight} direct ({straight / direct.seconds:.0f}/s)"
    )
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
                baseline_name=f"p{q} straight to the upstream",
                ratio=value / base if base else None,
                budget=f"≤ {BUDGET_MS:g} ms" if q == 99 else "",
                passed=(added <= BUDGET_MS) if q == 99 else None,
                note=done,
            )
        )
    gateway_cpu, upstream_cpu = through.per_stream_ms(), direct.per_stream_ms()
    if gateway_cpu is not None:
        rows.append(
            Row(
                group="gateway",
                name=f"{load}: gateway CPU time per stream",
                value=gateway_cpu,
                unit="ms",
                baseline=upstream_cpu,
                baseline_name="the fake upstream's CPU time per direct stream",
                ratio=gateway_cpu / upstream_cpu if upstream_cpu else None,
                note="user + system time of the gateway process over the measured phase / streams done",
            )
        )
    errors = direct.errors + through.errors
    kinds = "; ".join(f"{count} × {kind}" for kind, count in errors.most_common(5))
    rows.append(
        Row(
            group="gateway",
            name=f"{load}: errors (gateway {through.errors.total()}, direct {direct.errors.total()})",
            value=float(errors.total()),
            unit="errors",
            budget="0",
            passed=not errors,
            note=kinds or f"{done}; all complete (warm-up included)",
        )
    )
    return rows


async def run(size: str = "full") -> list[Row]:
    """Concurrent streams through the gateway vs straight to the upstream: added p50/p99, errors by kind."""
    levels = SIZES[size]
    with _process([sys.executable, "-c", _UPSTREAM, TEXT]) as upstream:
        assert upstream.process.stdout is not None
        upstream_url = upstream.process.stdout.readline().strip()
        port = _free_port()
        most = max(concurrency for concurrency, _ in levels)
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
            for concurrency, seconds in levels:
                rows += await _level(setup, concurrency, seconds)
    if any(row.unit == "errors" and row.value for row in rows) and gateway.stderr_text:
        print("gateway stderr (last 40 lines):", *gateway.stderr_text.splitlines()[-40:], sep="\n")
    return rows


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])

"""Gateway load test: concurrent streams through `procflow serve` vs straight to the upstream, on loopback.

The upstream is the fake provider (its own process), answering every request with the same streamed
text; the gateway is the real `procflow serve` command (its own process) running the bundled guard
(Unicode normalisation, RegexFilter redaction of PII and secrets, a prompt-injection block, a token
limit). The load generator keeps ``concurrency`` streams open for ``seconds``, first straight to the
upstream (the baseline), then through the gateway, and reports p50/p99 of the whole-stream latency and
the latency the gateway adds. Each process has its own interpreter; on a 2-core machine they share the
cores with the load generator, so the added latency includes that contention.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import httpx

from bench._harness import Row

SIZES = {"full": (200, 20.0), "tiny": (4, 1.0)}
"""Concurrent streams, seconds of load per phase."""

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


@contextmanager
def _process(command: list[str]) -> Iterator[subprocess.Popen[str]]:
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        yield child
    finally:
        child.terminate()
        child.wait(10)
        if child.stdout is not None:
            child.stdout.close()


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
    client: httpx.AsyncClient, url: str, concurrency: int, seconds: float
) -> tuple[list[float], int]:
    """Keep ``concurrency`` streams going for ``seconds``; return per-stream latencies and errors."""
    latencies: list[float] = []
    errors = 0
    body = {"model": "m1", "stream": True, "messages": [{"role": "user", "content": "When do you answer?"}]}
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal errors
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            try:
                async with client.stream("POST", url, json=body) as response:
                    text = await response.aread()
                ok = response.status_code == 200 and text.rstrip().endswith(b"[DONE]")
            except httpx.HTTPError:
                ok = False
            if ok:
                latencies.append(time.perf_counter() - started)
            else:
                errors += 1

    async with anyio.create_task_group() as group:
        for _ in range(concurrency):
            group.start_soon(worker)
    return latencies, errors


def _p(values: list[float], q: float) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


async def run(size: str = "full") -> list[Row]:
    """200 concurrent streams through the gateway vs straight to the upstream: added p50/p99."""
    concurrency, seconds = SIZES[size]
    with _process([sys.executable, "-c", _UPSTREAM, TEXT]) as upstream:
        assert upstream.stdout is not None
        upstream_url = upstream.stdout.readline().strip()
        port = _free_port()
        command = [sys.executable, "-m", "procflow._cli", "serve", "--upstream", upstream_url]
        command += ["--upstream-model", "m1", "--port", str(port), "--max-concurrent", str(concurrency * 2)]
        with _process(command):
            limits = httpx.Limits(max_connections=concurrency * 2, max_keepalive_connections=concurrency * 2)
            async with httpx.AsyncClient(limits=limits, timeout=60) as client:
                await _wait_healthy(client, f"http://127.0.0.1:{port}/healthz")
                direct, direct_errors = await _load(
                    client, upstream_url + "/chat/completions", concurrency, seconds
                )
                gateway_url = f"http://127.0.0.1:{port}/v1/chat/completions"
                through, through_errors = await _load(client, gateway_url, concurrency, seconds)
    rows: list[Row] = []
    for q in (50, 99):
        base, value = _p(direct, q) * 1000, _p(through, q) * 1000
        added = value - base
        rows.append(
            Row(
                group="gateway",
                name=f"{concurrency} concurrent streams, p{q} latency added by the gateway",
                value=added,
                unit="ms",
                baseline=base,
                baseline_name=f"p{q} straight to the upstream",
                ratio=value / base if base else None,
                budget=f"≤ {BUDGET_MS:g} ms" if q == 99 else "",
                passed=(added <= BUDGET_MS) if q == 99 else None,
                note=f"{len(through)} streams via the gateway, {len(direct)} direct",
            )
        )
    rows.append(
        Row(
            group="gateway",
            name="errors under load (gateway + direct)",
            value=float(through_errors + direct_errors),
            unit="errors",
            budget="0",
            passed=through_errors + direct_errors == 0,
        )
    )
    return rows


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])

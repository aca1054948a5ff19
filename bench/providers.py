"""Provider benchmarks against the fake server on 127.0.0.1.

1. Per-chunk cost of the OpenAI-compatible stream parser. The baseline is the floor every SSE client
   pays on the same bytes: ``httpx`` + ``httpx-sse`` reading the events and ``json.loads`` of each one.
   The measured path is ``OpenAICompatibleModel.stream()`` turning the same events into procflow
   chunks. Both read one pre-rendered answer over the same reused connection, interleaved, and each
   is timed by the CPU time of the reading thread (the fake server runs in another), so the machine's
   other load does not count and the difference is the parser's own cost.
2. Connection reuse: sequential ``generate()`` calls on one model (its own client, one connection),
   against the former behaviour, a new ``httpx.AsyncClient`` (and connection) per call. The fake server
   counts the TCP connections it accepts.
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

import httpx
from httpx_sse import EventSource

from bench._harness import summarize
from procflow.models import ModelRequest, OpenAICompatibleModel, PromptMessage, PromptText
from procflow.testing import FakeProviderServer, FakeReply, RecordedRequest

SIZES = {"full": (20_000, 7), "tiny": (200, 2)}
"""Text deltas per streamed answer, repetitions."""

CALLS = {"full": (100, 5), "tiny": (5, 1)}
"""Sequential generate() calls per measurement, repetitions (before and after interleaved)."""

BUDGET_US = 2.0
"""Allowed parser cost per chunk above the bare SSE + JSON floor, in microseconds."""

REQUEST = ModelRequest(prompt=[PromptMessage(role="user", content=[PromptText(text="Write a long story.")])])


async def _rendered_stream(server: FakeProviderServer, client: httpx.AsyncClient, deltas: int) -> bytes:
    """Let the fake server render a long streamed answer once, and keep its bytes."""
    server.add(FakeReply(text="word" * deltas, chunk_size=4))
    body = {"model": "bench", "messages": [], "stream": True, "stream_options": {"include_usage": True}}
    response = await client.post(server.base_url + "/chat/completions", json=body)
    return response.content


async def run(size: str = "full") -> list[dict[str, Any]]:
    """Measure the stream parser's per-chunk cost and the gain of connection reuse."""
    return [await _parser_row(size), await _reuse_row(size)]


async def _thread_seconds(call: Any) -> float:
    """CPU seconds this thread spent in ``await call()`` (waiting for the server does not count)."""
    start = time.thread_time()
    await call()
    return time.thread_time() - start


async def _timed_calls(server: FakeProviderServer, calls: int, call: Any) -> tuple[float, int]:
    """Seconds per call and connections opened for ``calls`` sequential calls of ``call()``."""
    server.reset()
    server.add(*(FakeReply(text="Hello there.") for _ in range(calls)))
    start = time.perf_counter()
    for _ in range(calls):
        await call()
    return (time.perf_counter() - start) / calls, server.connections


async def _reuse_row(size: str) -> dict[str, Any]:
    calls, repeat = CALLS[size]
    before: list[float] = []
    after: list[float] = []
    async with FakeProviderServer() as server:

        async def client_per_call() -> None:
            # What every call did before: open a client (and a connection), send, close it.
            async with httpx.AsyncClient() as client:
                await OpenAICompatibleModel("bench", base_url=server.base_url, client=client).generate(
                    REQUEST
                )

        async with OpenAICompatibleModel("bench", base_url=server.base_url) as model:

            async def reused() -> None:
                await model.generate(REQUEST)

            for _ in range(repeat):
                seconds, opened_before = await _timed_calls(server, calls, client_per_call)
                before.append(seconds)
                await model.aclose()  # each repetition starts cold: its first call connects
                seconds, opened_after = await _timed_calls(server, calls, reused)
                after.append(seconds)
    base, ours = summarize(before), summarize(after)
    return {
        "group": "providers",
        "name": f"{calls} sequential generate() calls on one model: latency per call (connection reuse)",
        "value": ours.median * 1e6,
        "unit": "µs/call",
        "baseline": base.median * 1e6,
        "baseline_name": "a new httpx client per call, as before (µs)",
        "ratio": ours.median / base.median if base.median else None,
        "budget": f"1 connection for {calls} calls",
        "passed": opened_after == 1,
        "spread": ours.spread,
        "note": f"connections opened: {opened_before} before, {opened_after} after",
    }


async def _parser_row(size: str) -> dict[str, Any]:
    deltas, repeat = SIZES[size]
    async with FakeProviderServer() as server, httpx.AsyncClient() as client:
        payload = (await _rendered_stream(server, client, deltas)).decode()
        events = payload.count("\n\n")

        def replay(_: RecordedRequest) -> FakeReply:
            return FakeReply(body=payload, headers={"Content-Type": "text/event-stream"})

        url = server.base_url + "/chat/completions"
        model = OpenAICompatibleModel("bench", base_url=server.base_url, client=client)

        async def bare() -> None:
            server.add(replay)
            async with client.stream("POST", url, json={"model": "bench", "stream": True}) as response:
                async for event in EventSource(response).aiter_sse():
                    if event.data != "[DONE]":
                        json.loads(event.data)

        async def parsed() -> None:
            server.add(replay)
            async for _chunk in model.stream(REQUEST):
                pass

        bare_cpu: list[float] = []
        parsed_cpu: list[float] = []
        await bare()  # warm-up: the connection, both code paths
        await parsed()
        for _ in range(repeat):  # interleaved, so both sides see the same machine
            bare_cpu.append(await _thread_seconds(bare))
            parsed_cpu.append(await _thread_seconds(parsed))
    base, ours = summarize(bare_cpu), summarize(parsed_cpu)
    base_us = base.median / events * 1e6
    ours_us = ours.median / events * 1e6
    extra = statistics.median(p - b for p, b in zip(parsed_cpu, bare_cpu, strict=True)) / events * 1e6
    return {
        "group": "providers",
        "name": f"OpenAI-compatible stream parser, {deltas:,} text deltas over a socket: CPU per chunk",
        "value": ours_us,
        "unit": "µs/chunk",
        "baseline": base_us,
        "baseline_name": "httpx-sse + json.loads per event (µs)",
        "ratio": ours_us / base_us if base_us else None,
        "budget": f"≤ {BUDGET_US:g} µs per chunk above the SSE + JSON floor",
        "passed": extra <= BUDGET_US,
        "spread": ours.spread,
        "note": f"parser adds {extra:+.2f} µs per chunk (median of {repeat} interleaved pairs; CPU time of "
        "the reading thread, the fake server runs in its own)",
    }

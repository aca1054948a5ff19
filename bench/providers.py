"""Provider benchmarks: per-chunk cost of the OpenAI-compatible stream parser against the fake server.

The baseline is the floor every SSE client pays on the same bytes: ``httpx`` + ``httpx-sse`` reading
the events and ``json.loads`` of each one. The measured path is ``OpenAICompatibleModel.stream()``
turning the same events into procflow chunks. Both read one pre-rendered answer from the fake
provider on 127.0.0.1, over the same reused connection, so the difference is the parser's own cost.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from httpx_sse import EventSource

from bench._harness import time_async
from procflow.messages.prompt import PromptMessage, PromptText
from procflow.models import ModelRequest, OpenAICompatibleModel
from procflow.testing import FakeProviderServer, FakeReply, RecordedRequest

SIZES = {"full": (20_000, 7), "tiny": (200, 2)}
"""Text deltas per streamed answer, repetitions."""

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
    """Measure per-chunk stream parsing cost against the bare SSE + JSON floor."""
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

        base = await time_async(bare, number=1, repeat=repeat)
        ours = await time_async(parsed, number=1, repeat=repeat)
    base_us = base.median / events * 1e6
    ours_us = ours.median / events * 1e6
    extra = ours_us - base_us
    return [
        {
            "group": "providers",
            "name": f"OpenAI-compatible stream parser, {deltas:,} text deltas over a socket: cost per chunk",
            "value": ours_us,
            "unit": "µs/chunk",
            "baseline": base_us,
            "baseline_name": "httpx-sse + json.loads per event (µs)",
            "ratio": ours_us / base_us if base_us else None,
            "budget": f"≤ {BUDGET_US:g} µs per chunk above the SSE + JSON floor",
            "passed": extra <= BUDGET_US,
            "spread": ours.spread,
            "note": f"parser adds {extra:.2f} µs per chunk",
        }
    ]

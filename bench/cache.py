"""Response-cache hits: a user's second identical request with a 100 KB prompt, in memory and on Redis.

Each row runs pairs of identical requests through ``Agent.generate``: the user's first request (a
miss: the model answers, the answer is stored) and then the same request again, its 100 KB message
arriving as new objects with the same content (as a repeated chat request decoded from JSON would).
The timed part is the second request's ``ResponseCache.process_llm_request`` — deriving the key over
the resolved prompt, reading the entry and rebuilding its 41 chunks — that is, what the cache adds to
a hit; every pair uses a different text, so each hit sees its text for the second time only. Budgets
(DESIGN §7): ≤ 200 µs in memory, ≤ 2 ms on Redis over loopback. Baselines, in the same run: SHA-256
over the prompt's UTF-8 text (what hashing the whole prompt on every request costs at least), and a raw
redis-py ``GET`` of a 2 KB value. Two more floors, timed on the same texts right after each hit (so the
timed sequence is unchanged) and shown as info rows after the in-memory row: BLAKE2b-256 over the same
bytes (the key's own hash, were the prompt hashed whole), and comparing the prompt's text with an equal
copy, which is what the key's digest memo must read at least to prove it has seen the text before.
"""

from __future__ import annotations

import gc
import hashlib
import importlib.util
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._harness import summarize, time_async
from procflow import Agent, RequestContext
from procflow.cache import InMemoryServerCache, RedisCache, ServerCache
from procflow.processors import ProcessLLMRequestArgs, ProcessLLMRequestResult, ResponseCache
from procflow.testing import ScriptedModel

ROOT = Path(__file__).resolve().parent.parent
SIZES = {"full": 300, "tiny": 5}
"""Timed hits per row (after 5 warm-up pairs)."""
WORDS = [
    *("the", "order", "shipped", "from", "Oslo", "yesterday", "Lieferung", "Rechnung"),
    *("注文", "配達", "заказ", "订单", "📦", "#4711", "OK?"),
]
INSTRUCTIONS = "You are a helpful support agent."


def _text(seed: int, size: int = 100_000) -> str:
    """A ~100 KB multilingual user message, built anew on every call (same seed, same content)."""
    rng = random.Random(seed)
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(WORDS)
        words.append(word)
        length += len(word.encode()) + 1
    return " ".join(words)


class _TimedCache(ResponseCache):
    """Records how long each ``process_llm_request`` took and whether it answered from the cache."""

    def __init__(self, backend: ServerCache) -> None:
        super().__init__(cache=backend, timeout=5)
        self.last: tuple[float, bool] = (0.0, False)

    async def process_llm_request(self, args: ProcessLLMRequestArgs) -> ProcessLLMRequestResult | None:
        started = time.perf_counter()
        answer = await super().process_llm_request(args)
        self.last = (time.perf_counter() - started, answer is not None)
        return answer


FLOOR_BLAKE2B = "floor: BLAKE2b-256 of the same prompt's UTF-8 text"
FLOOR_COMPARE = "floor: comparing the prompt's text with an equal copy (what a digest-memo hit reads)"


def _other_floors(text: str, seed: int) -> tuple[float, float]:
    """BLAKE2b-256 over the text's UTF-8 bytes, and ``==`` with an equal copy, in seconds."""
    started = time.perf_counter()
    hashlib.blake2b(text.encode(), digest_size=32).digest()
    blake2b = time.perf_counter() - started
    copy = _text(seed)
    started = time.perf_counter()
    if copy != text:
        raise RuntimeError("the same seed must give the same text")
    return blake2b, time.perf_counter() - started


async def _hit_row(
    name: str, backend: ServerCache, budget_us: float, size: str, floor_rows: list[dict[str, Any]]
) -> dict[str, Any]:
    """Time the second of each pair of identical requests, next to the SHA-256 floor of its text.

    The other floors of the same texts are appended to ``floor_rows``.
    """
    model = ScriptedModel(["word " * 40], chunk_size=5, repeat_last=True)  # 40 text deltas + finish
    cache = _TimedCache(backend)
    agent = Agent(id="bench", model=model, instructions=INSTRUCTIONS, input_processors=[cache])
    context = RequestContext({"procflow__resource_id": "user-1"})
    floors: list[float] = []
    extra: dict[str, list[float]] = {"blake2b": [], "compare": []}
    hits: list[float] = []
    misses: list[float] = []
    text = ""
    for index in range(SIZES[size] + 5):
        if index % 25 == 0:
            gc.collect()
        text = _text(index)
        started = time.perf_counter()
        hashlib.sha256(text.encode()).digest()
        floor = time.perf_counter() - started
        await agent.generate(text, request_context=context)  # the first request: a miss, stored
        miss, _ = cache.last
        calls = model.calls
        await agent.generate(_text(index), request_context=context)  # the same request again
        hit, answered = cache.last
        if not answered or model.calls != calls:
            raise RuntimeError("expected the second identical request to be a cache hit")
        blake2b, compare = _other_floors(text, index)  # after the hit: the timed sequence is unchanged
        if index >= 5:
            floors.append(floor)
            extra["blake2b"].append(blake2b)
            extra["compare"].append(compare)
            hits.append(hit)
            misses.append(miss)
    hit_stats, base = summarize(hits), summarize(floors)
    value = hit_stats.median * 1e6
    floor_rows.extend(
        {"name": name, "value": summarize(extra[kind]).median * 1e6, "unit": "µs"}
        for kind, name in (("blake2b", FLOOR_BLAKE2B), ("compare", FLOOR_COMPARE))
    )
    return {
        "name": name,
        "value": value,
        "unit": "µs",
        "baseline": base.median * 1e6,
        "baseline_name": "SHA-256 of the prompt's UTF-8 text (µs)",
        "ratio": hit_stats.median / base.median,
        "budget": f"≤ {budget_us:,.0f} µs",
        "passed": value <= budget_us,
        "spread": hit_stats.spread,
        "note": f"{len(text.encode()) // 1000} KB multilingual prompt, 41-chunk entry, median of "
        f"{len(hits)} hits; the first request (a miss) spent {summarize(misses).median * 1e6:,.0f} µs "
        "in the cache",
    }


async def _redis_get_row(cache: RedisCache, size: str) -> dict[str, Any]:
    await cache.client.set("raw", b"x" * 2000)

    async def raw_get() -> None:
        await cache.client.get("raw")

    base = await time_async(raw_get, number=max(1, SIZES[size] // 10), repeat=7)
    return {"name": "floor: raw redis-py GET of a 2 KB value", "value": base.median * 1e6, "unit": "µs"}


def _start_redis(folder: Path) -> Any:
    spec = importlib.util.spec_from_file_location("_procflow_test_services", ROOT / "tests" / "services.py")
    if spec is None or spec.loader is None:
        raise RuntimeError("tests/services.py not found")
    services = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = services  # its dataclasses look their module up while being defined
    spec.loader.exec_module(services)
    return services.start_redis(folder)


HIT = "cache hit on a user's 2nd identical request (100 KB prompt): key + lookup + replay, "


async def _redis_rows(size: str) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="procflow-bench-redis-") as folder:
        server = _start_redis(Path(folder))
        cache = RedisCache(server.url, timeout=5)
        try:
            row = await _hit_row(HIT + "Redis on loopback", cache, 2000, size, [])
            return [row, await _redis_get_row(cache, size)]
        finally:
            await cache.aclose()
            server.stop()


async def run(size: str = "full") -> list[dict[str, Any]]:
    """Cache-hit rows (``size="tiny"`` for the smoke test); the bench runner awaits it."""
    floors: list[dict[str, Any]] = []
    memory = await _hit_row(HIT + "in memory", InMemoryServerCache(), 200, size, floors)
    return [memory, *floors, *await _redis_rows(size)]

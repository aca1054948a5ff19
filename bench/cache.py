"""Response-cache hits: key derivation for a 100 KB prompt plus the lookup, in memory and on Redis.

Each row times ``ResponseCache.process_llm_request`` answering from the cache — deriving the key over
the whole resolved prompt, reading the entry and rebuilding its chunks — for a freshly built prompt
of about 100 KB per call (as on each agent step; building it is not timed). Budgets (DESIGN §7): a hit
≤ 200 µs in memory, ≤ 2 ms on Redis over loopback. Baselines, in the same run: SHA-256 over the
prompt's UTF-8 text (the floor of any key by value), and a raw redis-py ``GET`` of the same entry.
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
from procflow import MessageList, RequestContext
from procflow._messages import Prompt
from procflow._runner.context import RunContext
from procflow.cache import InMemoryServerCache, RedisCache, ServerCache
from procflow.models import PromptMessage, PromptText
from procflow.processors import ProcessLLMRequestArgs, ResponseCache
from procflow.processors._base import make_abort
from procflow.testing import ScriptedModel

ROOT = Path(__file__).resolve().parent.parent
SIZES = {"full": 300, "tiny": 5}
"""Timed calls per row (after 5 warm-up calls)."""
WORDS = [
    *("the", "order", "shipped", "from", "Oslo", "yesterday", "Lieferung", "Rechnung"),
    *("注文", "配達", "заказ", "订单", "📦", "#4711", "OK?"),
]


def _prompt(seed: int, size: int = 100_000) -> Prompt:
    """A system message and a ~100 KB multilingual user message (new objects on every call)."""
    rng = random.Random(seed)
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(WORDS)
        words.append(word)
        length += len(word.encode()) + 1
    return [
        PromptMessage(role="system", content=[PromptText(text="You are a helpful support agent.")]),
        PromptMessage(role="user", content=[PromptText(text=" ".join(words))]),
    ]


def _args(cache: ResponseCache, prompt: Prompt, model: ScriptedModel) -> ProcessLLMRequestArgs:
    ctx = RunContext(message_list=MessageList(), request_context=RequestContext())
    return ProcessLLMRequestArgs(
        prompt=prompt,
        model=model,
        step_number=0,
        steps=[],
        tools={},
        abort=make_abort(cache.id),
        state={},
        retry_count=0,
        request_context=ctx.request_context,
        message_list=ctx.message_list,
        writer=None,
        send_signal=ctx.signal_sender(cache.id),
        processor_id=cache.id,
    )


async def _hit_row(name: str, backend: ServerCache, budget_us: float, size: str) -> dict[str, Any]:
    """Time hits one by one, each on a freshly built prompt, interleaved with the SHA-256 floor."""
    model = ScriptedModel()
    processor = ResponseCache(cache=backend, timeout=5)
    args = _args(processor, _prompt(1), model)
    await processor.process_llm_request(args)  # derive the key once to store an entry under it
    chunks = [{"type": "text-delta", "payload": {"id": "0", "text": f"word {i} "}} for i in range(40)]
    chunks.append({"type": "finish", "payload": {"finish_reason": "stop", "usage": {"input_tokens": 25_000}}})
    await backend.set(args.state["attempt"], {"v": 1, "chunks": chunks})
    floors: list[float] = []
    hits: list[float] = []
    text = ""
    for index in range(SIZES[size] + 5):
        if index % 25 == 0:
            gc.collect()
        fresh = _args(processor, _prompt(1), model)  # a new prompt per call, as on each agent step
        text = fresh.prompt[1].text
        started = time.perf_counter()
        hashlib.sha256(text.encode()).digest()
        floor = time.perf_counter() - started
        started = time.perf_counter()
        answer = await processor.process_llm_request(fresh)
        elapsed = time.perf_counter() - started
        if answer is None:
            raise RuntimeError("expected a cache hit")
        if index >= 5:
            floors.append(floor)
            hits.append(elapsed)
    hit, base = summarize(hits), summarize(floors)
    value = hit.median * 1e6
    return {
        "name": name,
        "value": value,
        "unit": "µs",
        "baseline": base.median * 1e6,
        "baseline_name": "SHA-256 of the prompt's UTF-8 text (µs)",
        "ratio": hit.median / base.median,
        "budget": f"≤ {budget_us:,.0f} µs",
        "passed": value <= budget_us,
        "spread": hit.spread,
        "note": f"{len(text.encode()) // 1000} KB multilingual prompt, 41-chunk entry, "
        f"median of {len(hits)} calls",
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


async def _redis_rows(size: str) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="procflow-bench-redis-") as folder:
        server = _start_redis(Path(folder))
        cache = RedisCache(server.url, timeout=5)
        try:
            row = await _hit_row("cache hit, Redis on loopback, 100 KB prompt", cache, 2000, size)
            return [row, await _redis_get_row(cache, size)]
        finally:
            await cache.aclose()
            server.stop()


async def run(size: str = "full") -> list[dict[str, Any]]:
    """Cache-hit rows (``size="tiny"`` for the smoke test); the bench runner awaits it."""
    memory = await _hit_row("cache hit, in memory, 100 KB prompt", InMemoryServerCache(), 200, size)
    return [memory, *await _redis_rows(size)]

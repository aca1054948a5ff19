"""TokenLimiter benchmarks: trimming a 5,000-message history, and counting throughput.

Baselines, measured in the same process:
- trimming (first call of a request) vs *counting every text of the same prompt once with tiktoken*
  directly — the floor any exact limiter pays;
- trimming again on the next step of the same request (counts cached) vs that first call;
- counting tokens/s through ``TiktokenCounter`` vs calling ``encode_ordinary`` directly;
- the output stream, counted exactly (the accumulated text, incrementally): the cost per chunk over
  10,000 chunks vs over 1,000 chunks of the same text (flat: it must not grow with the length), and vs
  counting each chunk alone with tiktoken (the old, inexact way).
"""

from __future__ import annotations

import gc
import json
import random
import time
from typing import Any

from bench._harness import summarize, time_async, time_sync
from procflow import Chunk, Message, MessageContent, MessageList, RequestContext, TextPart, ToolInvocationPart
from procflow._messages import Prompt
from procflow._runner.context import RunContext
from procflow.models import PromptReasoning, PromptText, PromptToolCall, PromptToolResult
from procflow.processors import ProcessLLMRequestArgs, ProcessOutputStreamArgs, TiktokenCounter, TokenLimiter
from procflow.processors._base import make_abort

SIZES = {"full": (5000, 5), "tiny": (50, 2)}
WORDS = [
    "the",
    "order",
    "shipped",
    "yesterday",
    "from",
    "our",
    "warehouse",
    "in",
    "Oslo",
    "and",
    "should",
    "arrive",
    "within",
    "three",
    "business",
    "days",
    "Lieferung",
    "Bestellung",
    "Rechnung",
    "注文",
    "発送",
    "配達",
    "заказ",
    "доставка",
    "订单",
    "已发货",
    "🚚",
    "📦",
    "#4711",
    "2024-05-01",
    "OK?",
]


def _history(size: int) -> MessageList:
    rng = random.Random(7)
    ml = MessageList()
    for index in range(size):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 80)))
        if index % 10 == 9:
            call = ToolInvocationPart(
                tool_call_id=f"call_{index}",
                tool_name="lookup_order",
                args={"order": index},
                state="result",
                result={"status": "shipped", "note": text},
            )
            parts: list[Any] = [TextPart(text="Let me check."), call]
            ml.add(Message(role="assistant", content=MessageContent(parts=parts)), source="memory")
        else:
            ml.add(Message.user(text) if index % 2 == 0 else Message.assistant(text), source="memory")
    ml.add(Message.user("Where is my latest order?"))
    ml.add_system("You are a helpful support agent.")
    return ml


def _texts(prompt: Prompt) -> list[str]:
    out: list[str] = []
    for message in prompt:
        for part in message.content:
            if isinstance(part, PromptText | PromptReasoning):
                out.append(part.text)
            elif isinstance(part, PromptToolCall):
                out.append(json.dumps(part.args))
            elif isinstance(part, PromptToolResult):
                out.append(json.dumps(part.result))
    return out


def _args(
    limiter: TokenLimiter, ml: MessageList, prompt: Prompt, state: dict[str, Any]
) -> ProcessLLMRequestArgs:
    ctx = RunContext(message_list=ml, request_context=RequestContext())
    return ProcessLLMRequestArgs(
        prompt=prompt,
        model=None,
        step_number=0,
        steps=[],
        tools={},
        abort=make_abort(limiter.id),
        state=state,
        retry_count=0,
        request_context=ctx.request_context,
        message_list=ml,
        writer=None,
        send_signal=ctx.signal_sender(limiter.id),
        processor_id=limiter.id,
    )


async def bench_trim(size: str) -> list[dict[str, Any]]:
    """Trim an N-message history to a quarter of its tokens: first call, next step, counting floor."""
    messages, repeat = SIZES[size]
    ml = _history(messages)
    prompt = ml.to_prompt()
    counter = TiktokenCounter()
    encoding = counter.encoding
    texts = _texts(prompt)
    total = sum(len(encoding.encode_ordinary(t)) for t in texts)
    limiter = TokenLimiter(max(total // 4, 200), counter=counter)

    def floor() -> None:
        for text in texts:
            encoding.encode_ordinary(text)

    async def first_call() -> None:
        await limiter.process_llm_request(_args(limiter, ml, prompt, {}))

    warm_state: dict[str, Any] = {}
    await limiter.process_llm_request(_args(limiter, ml, prompt, warm_state))
    # Each step the agent rebuilds the prompt from the message list (new objects): do that outside the
    # timing, one fresh prompt per call, so only the limiter's own work is measured.
    fresh = [ml.to_prompt() for _ in range(repeat + 1)]

    async def next_step() -> None:
        await limiter.process_llm_request(_args(limiter, ml, fresh.pop(), warm_state))

    # Floor and first call alternate, so a load change on the machine hits both alike; a collection
    # before each pair keeps the garbage of the previous call from landing in the next measurement.
    floors: list[float] = []
    colds: list[float] = []
    for _ in range(repeat):
        gc.collect()
        started = time.perf_counter()
        floor()
        floors.append(time.perf_counter() - started)
        started = time.perf_counter()
        await first_call()
        colds.append(time.perf_counter() - started)
    base, cold = summarize(floors), summarize(colds)
    warm = await time_async(next_step, number=1, repeat=repeat)
    dropped = warm_state["last_trim"]["dropped_messages"]
    note = f"{len(prompt)} prompt messages, {total:,} tokens, {dropped} dropped"
    return [
        {
            "name": f"trim a {messages:,}-message history (first call of a request)",
            "value": cold.median * 1000,
            "unit": "ms",
            "baseline": base.median * 1000,
            "baseline_name": "tiktoken over the same texts (ms)",
            "ratio": cold.median / base.median,
            "budget": "≤ 1.5× counting the texts once",
            "passed": cold.median <= 1.5 * base.median,
            "spread": cold.spread,
            "note": note,
        },
        {
            "name": f"trim the same {messages:,}-message history on the next step (cached counts)",
            "value": warm.median * 1000,
            "unit": "ms",
            "baseline": cold.median * 1000,
            "baseline_name": "first call (ms)",
            "ratio": warm.median / cold.median,
            "budget": "≤ 0.3× the first call",
            "passed": warm.median <= 0.3 * cold.median,
            "spread": warm.spread,
            "note": "a freshly built prompt per call, as on each agent step (building it is not timed)",
        },
    ]


def bench_counting(size: str) -> list[dict[str, Any]]:
    """Tokens per second through TiktokenCounter vs encode_ordinary directly, on multilingual text."""
    messages, repeat = SIZES[size]
    rng = random.Random(11)
    texts = [" ".join(rng.choice(WORDS) for _ in range(200)) for _ in range(max(messages // 25, 4))]
    counter = TiktokenCounter()
    encoding = counter.encoding
    tokens = sum(counter.count(t) for t in texts)

    def ours() -> None:
        for text in texts:
            counter.count(text)

    def raw() -> None:
        for text in texts:
            encoding.encode_ordinary(text)

    base = time_sync(raw, number=1, repeat=repeat)
    mine = time_sync(ours, number=1, repeat=repeat)
    return [
        {
            "name": "count tokens (o200k_base, multilingual text)",
            "value": tokens / mine.median,
            "unit": "tokens/s",
            "baseline": tokens / base.median,
            "baseline_name": "tiktoken encode_ordinary (tokens/s)",
            "ratio": base.median / mine.median,
            "budget": "≥ 0.9× tiktoken directly",
            "passed": base.median / mine.median >= 0.9,
            "spread": mine.spread,
            "note": f"{tokens:,} tokens per repetition",
        }
    ]


def bench_load() -> list[dict[str, Any]]:
    """How long the offline encoding takes to build (once per process); informational."""
    from procflow.processors import _tokens

    _tokens._cache.clear()
    started = time.perf_counter()
    _tokens.load_o200k_base()
    seconds = time.perf_counter() - started
    return [
        {
            "name": "load o200k_base offline (once per process)",
            "value": seconds * 1000,
            "unit": "ms",
            "note": "rank file from bpe-openai, SHA-256 checked, tiktoken.Encoding built",
        }
    ]


async def bench_memory_only(size: str) -> list[dict[str, Any]]:
    """trim_mode="memory-only" on the next step of a request vs best-fit on the same history."""
    messages, repeat = SIZES[size]
    ml = _history(messages)
    prompt = ml.to_prompt()
    total = sum(len(TiktokenCounter().encoding.encode_ordinary(t)) for t in _texts(prompt))
    limit = max(total // 4, 200)
    timings: dict[str, list[float]] = {"best-fit": [], "memory-only": []}
    limiters = {mode: TokenLimiter(limit, trim_mode=mode) for mode in timings}  # type: ignore[arg-type]
    states: dict[str, dict[str, Any]] = {mode: {} for mode in timings}
    for mode, limiter in limiters.items():
        await limiter.process_llm_request(_args(limiter, ml, prompt, states[mode]))
    for _ in range(repeat):
        for mode, limiter in limiters.items():
            fresh = ml.to_prompt()
            gc.collect()
            started = time.perf_counter()
            await limiter.process_llm_request(_args(limiter, ml, fresh, states[mode]))
            timings[mode].append(time.perf_counter() - started)
    base, mine = summarize(timings["best-fit"]), summarize(timings["memory-only"])
    return [
        {
            "name": f"memory-only trim of a {messages:,}-message recalled history (next step)",
            "value": mine.median * 1000,
            "unit": "ms",
            "baseline": base.median * 1000,
            "baseline_name": "best-fit on the same prompt (ms)",
            "ratio": mine.median / base.median,
            "spread": mine.spread,
            "note": "informational: recalled messages are found by matching the prompt to the message list",
        }
    ]


STREAM_SIZES = {"full": (1_000, 10_000, 7), "tiny": (50, 200, 1)}


def _stream_chunks(count: int) -> list[Chunk]:
    rng = random.Random(13)
    text = " ".join(rng.choice(WORDS) for _ in range(count * 6))
    return [Chunk.text_delta(text[i : i + 20]) for i in range(0, 20 * count, 20)]


def _stream_args(limiter: TokenLimiter) -> ProcessOutputStreamArgs:
    ctx = RunContext(message_list=MessageList(), request_context=RequestContext())
    return ProcessOutputStreamArgs(
        part=Chunk("start"),
        stream_parts=[],
        abort=make_abort(limiter.id),
        state={},
        retry_count=0,
        request_context=ctx.request_context,
        message_list=ctx.message_list,
        writer=None,
        send_signal=ctx.signal_sender(limiter.id),
        processor_id=limiter.id,
    )


async def _stream_through(chunks: list[Chunk]) -> float:
    """Seconds per chunk through ``TokenLimiter.process_output_stream`` (far from its limit)."""
    limiter = TokenLimiter(10_000_000)
    args = _stream_args(limiter)
    hook = limiter.process_output_stream
    gc.collect()
    started = time.perf_counter()
    for chunk in chunks:
        args.part = chunk
        if await hook(args) is not chunk:
            raise AssertionError("far from the limit every chunk passes unchanged")
    return (time.perf_counter() - started) / len(chunks)


async def bench_stream(size: str) -> list[dict[str, Any]]:
    """Per-chunk cost of the exact stream count: long stream vs short stream vs per-chunk counting."""
    short_n, long_n, repeat = STREAM_SIZES[size]
    short, long = _stream_chunks(short_n), _stream_chunks(long_n)
    encoding = TiktokenCounter().encoding
    texts = [chunk.text or "" for chunk in long]

    def per_chunk() -> None:
        for text in texts:
            encoding.encode_ordinary(text)

    await _stream_through(short)
    shorts: list[float] = []
    longs: list[float] = []
    for _ in range(repeat):  # interleaved, so a load change on the machine hits both alike
        shorts.append(await _stream_through(short))
        longs.append(await _stream_through(long))
    low, high = summarize(shorts), summarize(longs)
    naive_us = time_sync(per_chunk, number=1, repeat=repeat).median / long_n * 1e6
    return [
        {
            "name": f"exact stream count, {long_n:,} × 20-char chunks (per chunk)",
            "value": high.median * 1e6,
            "unit": "µs",
            "baseline": low.median * 1e6,
            "baseline_name": f"same, {short_n:,} chunks (µs per chunk)",
            "ratio": high.median / low.median,
            "budget": "≤ 1.2×: per-chunk cost flat in the stream's length",
            "passed": high.median <= 1.2 * low.median,
            "spread": high.spread,
            "note": "TokenLimiter.process_output_stream far from its limit, called directly",
        },
        {
            "name": "exact stream count vs counting each chunk alone (per chunk)",
            "value": high.median * 1e6,
            "unit": "µs",
            "baseline": naive_us,
            "baseline_name": "tiktoken encode_ordinary per chunk (µs)",
            "ratio": high.median * 1e6 / naive_us,
            "note": "informational: what exactness costs over the old, inexact per-chunk sum",
        },
    ]


async def run(size: str = "full") -> list[dict[str, Any]]:
    """All TokenLimiter rows (``size="tiny"`` for the smoke test); the bench runner awaits it."""
    return [
        *bench_load(),
        *await bench_trim(size),
        *await bench_memory_only(size),
        *bench_counting(size),
        *await bench_stream(size),
    ]

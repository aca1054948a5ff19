"""Core benchmarks: the input-phase chain and the output-stream chain against direct calls."""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

from bench._harness import Row, summarize, time_async
from procflow import Agent, Chunk, MessageList
from procflow._runner.context import RunContext
from procflow._runner.pipeline import ProcessorPipeline
from procflow._runner.runner import PhaseRunner
from procflow._runner.stream import StreamRunner
from procflow.processors import ProcessInputArgs, ProcessOutputStreamArgs
from procflow.testing import ScriptedModel

SIZES = {"full": (2000, 7, 10_000), "tiny": (20, 2, 50)}
AGENT_SIZES = {"full": (20, 201), "tiny": (3, 2)}
"""``agent.generate`` calls per batch, and interleaved batches."""


class TrivialInput:
    def __init__(self, index: int) -> None:
        self.id = f"trivial-{index}"

    async def process_input(self, args: ProcessInputArgs) -> None:
        return None


class TrivialStream:
    def __init__(self, index: int) -> None:
        self.id = f"stream-{index}"

    async def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        return args.part


async def input_chain_row(
    group: str,
    name: str,
    runner: PhaseRunner,
    processors: list[TrivialInput],
    *,
    number: int,
    repeat: int,
    budget_us: float | None,
) -> Row:
    """Per processor: ``runner.run_input()`` vs awaiting the processors' functions directly (shared with the
    workflow benchmark), interleaved, the fastest batch of each. ``budget_us`` is the allowed added cost per
    processor, ``None`` for an info row."""
    fns = [p.process_input for p in processors]

    async def direct() -> None:
        for fn in fns:
            await fn(None)  # type: ignore[arg-type]

    base, run = await _interleaved([direct, runner.run_input], number=number, repeat=repeat)
    floor, chained = min(base), min(run)
    extra_us = (chained - floor) / len(processors) * 1e6
    return Row(
        group,
        name,
        extra_us,
        "µs",
        baseline=floor * 1e6,
        baseline_name=f"{len(processors)} direct awaits (µs)",
        ratio=chained / floor,
        budget=(
            f"≤ {budget_us:g} µs per processor above the direct-call floor"
            if budget_us is not None
            else "info (plain-chain budget: ≤ 3 µs per processor)"
        ),
        passed=extra_us <= budget_us if budget_us is not None else None,
        spread=summarize(run).spread,
    )


async def bench_input_chain(size: str) -> list[Row]:
    """10 trivial process_input processors through one reused runner vs awaiting the 10 functions directly.

    An info row: the runner and its context are made once, so each processor's state and
    ``send_signal`` are made once too — less than a request pays (see :func:`bench_agent_input_chain`).
    """
    number, repeat, _ = SIZES[size]
    processors = [TrivialInput(i) for i in range(10)]
    runner = PhaseRunner(ProcessorPipeline.build(processors), RunContext(message_list=MessageList(["hello"])))
    name = "input chain, 10 trivial processors, one reused runner: added cost per processor"
    return [
        await input_chain_row("core", name, runner, processors, number=number, repeat=repeat, budget_us=None)
    ]


async def _interleaved(
    fns: list[Callable[[], Awaitable[Any]]], *, number: int, repeat: int
) -> list[list[float]]:
    """Per function, the seconds per call of each batch, the functions' batches taking turns (fair to each).

    Timed in CPU time of this thread (the event loop runs here), so other processes sharing the
    machine's cores slow neither side.
    """
    for fn in fns:
        for _ in range(number):
            await fn()
    samples: list[list[float]] = [[] for _ in fns]
    clock = time.thread_time
    for _ in range(repeat):
        for index, fn in enumerate(fns):
            start = clock()
            for _ in range(number):
                await fn()
            samples[index].append((clock() - start) / number)
    return samples


async def bench_agent_input_chain(size: str) -> list[Row]:
    """What a user pays per input processor: ``agent.generate`` with 10 trivial input processors vs the same
    agent without them, less awaiting the 10 hooks directly, per processor.

    Every request makes a fresh context (each processor's state dict and ``send_signal``) and assembles
    its pipelines; a reused runner (the info row) pays neither.
    """
    number, repeat = AGENT_SIZES[size]
    processors = [TrivialInput(i) for i in range(10)]
    model = ScriptedModel(["ok"], repeat_last=True)
    bare = Agent(id="bare", model=model)
    guarded = Agent(id="guarded", model=model, input_processors=processors)
    fns = [p.process_input for p in processors]

    async def direct() -> None:
        for fn in fns:
            await fn(None)  # type: ignore[arg-type]

    async def without() -> None:
        await bare.generate("hello")

    async def with_chain() -> None:
        await guarded.generate("hello")

    base, plain, chained = await _interleaved([direct, without, with_chain], number=number, repeat=repeat)
    # The fastest batch of each: the least disturbed by whatever else the shared cores run.
    floor, bare_s, chained_s = min(base), min(plain), min(chained)
    added = chained_s - bare_s - floor
    extra_us = added / len(processors) * 1e6
    return [
        Row(
            "core",
            "agent.generate, 10 trivial input processors: added cost per processor",
            extra_us,
            "µs",
            baseline=floor * 1e6,
            baseline_name="10 direct awaits (µs)",
            ratio=(floor + added) / floor,
            budget="≤ 3 µs per processor above the direct-call floor",
            passed=extra_us <= 3.0,
            spread=summarize(chained).spread,
            note=f"generate: {bare_s * 1e6:,.0f} µs bare, {chained_s * 1e6:,.0f} µs with the processors",
        )
    ]


async def stream_chain_row(
    group: str,
    name: str,
    pipeline: ProcessorPipeline,
    processors: list[TrivialStream],
    *,
    chunks: int,
    repeat: int,
) -> Row:
    """Per chunk and processor: ``pipeline`` through the stream runner vs the processors' functions called
    directly on the same chunks (the budget row of a stream chain, shared with the workflow benchmark)."""
    items = [Chunk.text_delta("token ") for _ in range(chunks)]
    fns = [p.process_output_stream for p in processors]
    args: Any = ProcessOutputStreamArgs(
        part=items[0],
        stream_parts=[],
        abort=None,  # type: ignore[arg-type]
        state={},
        retry_count=0,
        request_context=None,  # type: ignore[arg-type]
        message_list=None,  # type: ignore[arg-type]
        writer=None,
        send_signal=None,  # type: ignore[arg-type]
        processor_id="x",
    )

    async def direct() -> None:
        for chunk in items:
            part = chunk
            for fn in fns:
                args.part = part
                part = await fn(args)

    async def through_runner() -> None:
        stream = StreamRunner(pipeline, RunContext(message_list=MessageList()))
        for chunk in items:
            await stream.push(chunk)

    base = await time_async(direct, number=1, repeat=repeat)
    run = await time_async(through_runner, number=1, repeat=repeat)
    per_chunk_per_proc = (run.median - base.median) / chunks / len(processors) * 1e6
    return Row(
        group,
        name,
        per_chunk_per_proc,
        "µs",
        baseline=base.median / chunks * 1e6,
        baseline_name="direct calls per chunk (µs)",
        ratio=run.median / base.median,
        budget="≤ 2 µs per processor per chunk",
        passed=per_chunk_per_proc <= 2.0,
        spread=run.spread,
    )


async def bench_stream_chain(size: str) -> list[Row]:
    """5 trivial stream processors over N chunks vs calling the 5 functions directly per chunk."""
    _, repeat, chunks = SIZES[size]
    processors = [TrivialStream(i) for i in range(5)]
    name = f"stream chain, 5 trivial processors × {chunks:,} chunks: added cost per processor per chunk"
    row = await stream_chain_row(
        "core", name, ProcessorPipeline.build(processors), processors, chunks=chunks, repeat=repeat
    )
    return [row]


async def run(size: str = "full") -> list[Row]:
    """All core rows."""
    return [
        *(await bench_agent_input_chain(size)),
        *(await bench_input_chain(size)),
        *(await bench_stream_chain(size)),
        *(await bench_stream_memory(size)),
    ]


class PassThrough:
    """A trivial stream processor (so the stream phase runs and keeps ``stream_parts``)."""

    id = "pass-through"

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        return args.part


STREAM_CHUNKS = {"full": 100_000, "tiny": 2_000}
STREAM_HISTORY = 256


async def _retained_bytes(chunks: int, history: int | None) -> float:
    """Bytes still allocated per chunk once a stream of ``chunks`` 20-character chunks has finished,
    while its output (and so its result) is kept."""
    model = ScriptedModel([("x" * 19 + " ") * chunks], chunk_size=20)
    agent = Agent(id="memory", model=model, output_processors=[PassThrough()])
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        output = agent.stream("hello", stream_history=history)
        await output.consume()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(output.text) == 20 * chunks
    return (after - before) / chunks


async def bench_stream_memory(size: str) -> list[Row]:
    """Retained bytes per chunk of a finished stream: every chunk kept (default) vs ``stream_history``."""
    chunks = STREAM_CHUNKS[size]
    full = await _retained_bytes(chunks, None)
    bounded = await _retained_bytes(chunks, STREAM_HISTORY)
    return [
        Row("core", f"finished stream, {chunks:,} chunks, every chunk kept: retained bytes/chunk", full, "B"),
        Row(
            "core",
            f"finished stream, {chunks:,} chunks, stream_history={STREAM_HISTORY}: retained bytes/chunk",
            bounded,
            "B",
            baseline=full,
            baseline_name="every chunk kept (B)",
            ratio=bounded / full if full else None,
            note="what remains is the text itself (20 characters per chunk)",
        ),
    ]

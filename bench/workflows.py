"""Workflow engine: a 10-step chain and a 4-way parallel block against direct awaits and a bare task group."""

from __future__ import annotations

import time
from typing import Any

import anyio

from bench._harness import Row, time_async
from bench.core import TrivialInput, TrivialStream, input_chain_row, stream_chain_row
from procflow import MessageList
from procflow._runner.context import RunContext
from procflow._runner.pipeline import ProcessorPipeline
from procflow._runner.runner import PhaseRunner
from procflow.processors import ProcessInputArgs
from procflow.workflows import ProcessorStepSchema, create_step, create_workflow, select

SIZES = {"full": (1000, 7), "tiny": (10, 2)}
STREAM_CHUNKS = {"full": 10_000, "tiny": 50}


class SyncTrivial:
    def __init__(self, index: int) -> None:
        self.id = f"sync-trivial-{index}"

    def process_input(self, args: ProcessInputArgs) -> None:
        return None


def _processor_workflow(wid: str, processors: list[Any], *, parallel: bool) -> Any:
    builder = create_workflow(id=wid, input_schema=ProcessorStepSchema, output_schema=ProcessorStepSchema)
    if parallel:
        return (
            builder.parallel([create_step(p) for p in processors])
            .map(select(f"processor:{processors[0].id}"))
            .commit()
        )
    for processor in processors:
        builder = builder.then(create_step(processor))
    return builder.commit()


def _runner(processor: Any) -> PhaseRunner:
    return PhaseRunner(ProcessorPipeline.build([processor]), RunContext(message_list=MessageList(["hello"])))


async def bench_chain(size: str) -> list[Row]:
    """10 trivial processor steps in sequence, run as an input processor, vs 10 direct awaits."""
    number, repeat = SIZES[size]
    processors = [TrivialInput(i) for i in range(10)]
    runner = _runner(_processor_workflow("chain", processors, parallel=False))
    name = "10-step sequential workflow as an input processor: added cost per step"
    return [
        await input_chain_row(
            "workflows", name, runner, processors, number=number, repeat=repeat, budget_us=None
        )
    ]


async def bench_parallel(size: str) -> list[Row]:
    """A 4-way parallel block of trivial processor steps vs a bare anyio task group of 4 trivial tasks."""
    number, repeat = SIZES[size]

    async def trivial() -> None:
        return None

    async def bare_group() -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(trivial)

    base = await time_async(bare_group, number=number, repeat=repeat)
    rows = []
    for label, kind in (("async", TrivialInput), ("def", SyncTrivial)):
        processors = [kind(i) for i in range(4)]
        runner = _runner(_processor_workflow(f"fan-{label}", processors, parallel=True))
        run = await time_async(runner.run_input, number=number, repeat=repeat)
        ratio = run.median / base.median
        rows.append(
            Row(
                "workflows",
                f"4-way parallel block of trivial processor steps ({label} hooks) + select",
                run.median * 1e6,
                "µs",
                baseline=base.median * 1e6,
                baseline_name="bare anyio task group, 4 tasks (µs)",
                ratio=ratio,
                budget="≤ 1.5× the task-group floor",
                passed=ratio <= 1.5,
                spread=run.spread,
            )
        )
    return rows


async def bench_sleeping_branches(size: str) -> list[Row]:
    """4 parallel branches that each wait 50 ms: wall time of the whole run."""
    _, repeat = SIZES[size]

    def sleeper(index: int) -> Any:
        async def execute(ctx: Any) -> int:
            await anyio.sleep(0.05)
            return index

        return create_step(id=f"sleep-{index}", execute=execute)

    workflow = create_workflow(id="sleepers").parallel([sleeper(i) for i in range(4)]).commit()
    walls = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = await workflow.run(None)
        walls.append(time.perf_counter() - start)
        assert result.status == "success"
    wall_ms = sorted(walls)[len(walls) // 2] * 1000
    return [
        Row(
            "workflows",
            "4 parallel branches each waiting 50 ms: wall time",
            wall_ms,
            "ms",
            baseline=50.0,
            baseline_name="one 50 ms wait (ms)",
            ratio=wall_ms / 50.0,
            budget="≤ 60 ms wall",
            passed=wall_ms <= 60.0,
        )
    ]


async def bench_stream_workflow(size: str) -> list[Row]:
    """A workflow of 5 trivial stream processor steps as an output processor, per chunk, vs direct calls."""
    _, repeat = SIZES[size]
    chunks = STREAM_CHUNKS[size]
    processors = [TrivialStream(i) for i in range(5)]
    pipeline = ProcessorPipeline.build([_processor_workflow("stream-chain", processors, parallel=False)])
    name = (
        f"workflow of 5 trivial stream steps as an output processor, {chunks:,} chunks: "
        "added cost per processor per chunk"
    )
    return [await stream_chain_row("workflows", name, pipeline, processors, chunks=chunks, repeat=repeat)]


async def run(size: str = "full") -> list[Row]:
    """All workflow rows."""
    return [
        *(await bench_chain(size)),
        *(await bench_parallel(size)),
        *(await bench_sleeping_branches(size)),
        *(await bench_stream_workflow(size)),
    ]

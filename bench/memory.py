"""Peak RSS of 1,000 concurrent agent ``stream()`` calls with the default guard, and no leaked tasks.

Each measurement runs in a fresh child process (peak RSS is per process): the baseline child imports the
same modules and builds the same agent but runs no stream.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench._harness import Row

SIZES = {"full": (1000, 40), "tiny": (20, 5)}
ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import asyncio, json, resource, sys
import anyio
from bench.agent_stream import output_guard
from procflow import Agent
from procflow._cli.defaults import default_pipeline
from procflow.testing import ScriptedModel

streams, chunks = int(sys.argv[1]), int(sys.argv[2])
text = ("Your order ships Monday; write to help@example.com with questions. " * 40)[: chunks * 20]

async def one(agent, counts):
    output = agent.stream("Where is my order? My email is jane@example.com")
    n = 0
    async for _ in output.full_stream:
        n += 1
    counts.append(n)

async def main():
    model = ScriptedModel([text], chunk_size=20, repeat_last=True)
    agent = Agent(
        id="mem", model=model, input_processors=default_pipeline(), output_processors=output_guard()
    )
    counts = []
    if streams:
        await one(agent, [])  # compile patterns and load the tokenizer before the concurrent burst
        async with anyio.create_task_group() as tg:
            for _ in range(streams):
                tg.start_soon(one, agent, counts)
    leaked = len([t for t in asyncio.all_tasks() if t is not asyncio.current_task()])
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"peak_kib": peak_kib, "leaked": leaked, "done": len(counts), "chunks": sum(counts)}))

anyio.run(main)
"""


def _child(streams: int, chunks: int) -> dict[str, int]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(streams), str(chunks)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def run(size: str = "full") -> list[Row]:
    """Peak RSS with N concurrent streams vs the same process with none; leaked tasks afterwards."""
    streams, chunks = SIZES[size]
    base = _child(0, chunks)
    loaded = _child(streams, chunks)
    if loaded["done"] != streams:
        raise RuntimeError(f"only {loaded['done']} of {streams} streams finished")
    extra_mib = (loaded["peak_kib"] - base["peak_kib"]) / 1024
    return [
        Row(
            "memory",
            f"{streams:,} concurrent stream() calls, default guard: peak RSS",
            loaded["peak_kib"] / 1024,
            "MiB",
            baseline=base["peak_kib"] / 1024,
            baseline_name="same process, no streams (MiB)",
            ratio=loaded["peak_kib"] / base["peak_kib"],
            budget="info",
            note=f"{extra_mib / streams * 1024:.0f} KiB per concurrent stream",
        ),
        Row(
            "memory",
            "tasks left running after the concurrent streams",
            float(loaded["leaked"]),
            "tasks",
            budget="0 leaked tasks",
            passed=loaded["leaked"] == 0,
        ),
    ]

"""The stream phase's building blocks: per-chunk parts that stages compile to, opened once per stream.

A stage (:mod:`procflow._engine._stages`) says what it does to a chunk by returning parts; a sequence of
parts is a :class:`StreamChain`. :meth:`StreamChain.open` builds the per-stream runtime, whose
``push(chunks)`` returns what comes out and ``flush()`` what was held back at the end. Consecutive
processor parts are fused into one :class:`~procflow._runner.stream.StreamRunner`, exactly like the same
processors listed in ``output_processors``. No workflow is run per chunk.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

from procflow._engine.plan import BranchOutputs, PlanNode
from procflow._engine.run_state import RunState
from procflow._messages.chunk import Chunk
from procflow._runner.context import RunContext
from procflow._runner.pipeline import ProcessorPipeline
from procflow._runner.stream import StreamRunner

__all__ = [
    "BranchPart",
    "ForkPart",
    "NodePart",
    "ProcessorsPart",
    "StreamChain",
    "StreamEnv",
    "StreamPart",
    "StreamRuntime",
    "fuse",
]


class StreamEnv:
    """What one stream's runtimes share.

    Attributes:
        ctx: The inner run context (live message list, per-processor states, writer, retry count).
        run: The run state plain steps, maps and conditions see (one per stream).
        runners: Every processor chain opened for the stream (to pass on retry-count changes).
        wrap: Turns chunks into the value a plain step or ``.map`` receives.
        unwrap: Turns what a plain step or ``.map`` returned back into chunks (raises on other values).
    """

    __slots__ = ("ctx", "run", "runners", "unwrap", "wrap")

    def __init__(
        self,
        ctx: RunContext,
        run: RunState,
        *,
        wrap: Callable[[list[Chunk]], Any],
        unwrap: Callable[[Any, PlanNode], list[Chunk]],
    ) -> None:
        self.ctx = ctx
        self.run = run
        self.runners: list[StreamRunner] = []
        self.wrap = wrap
        self.unwrap = unwrap

    def set_retry_count(self, retry_count: int) -> None:
        """Pass a retried model step's retry count on to every inner processor."""
        self.ctx.retry_count = retry_count
        for runner in self.runners:
            runner.set_retry_count(retry_count)


class StreamRuntime(Protocol):
    """One part's per-stream state."""

    async def push(self, items: list[Chunk]) -> list[Chunk]:
        """Run chunks through; return what comes out (possibly nothing)."""
        ...

    async def flush(self) -> list[Chunk]:
        """End of stream: return what was held back."""
        ...


class StreamPart(Protocol):
    """A compiled per-chunk handler; opened once per stream."""

    def open(self, env: StreamEnv) -> StreamRuntime:
        """Build this part's per-stream runtime."""
        ...


def _copy(chunk: Chunk) -> Chunk:
    return Chunk(chunk.type, dict(chunk.payload), chunk.transient)


@dataclass(frozen=True, slots=True)
class ProcessorsPart:
    """Plain processors in a row: one stream runner, each processor's state kept for the request."""

    processors: tuple[Any, ...]
    pipeline: ProcessorPipeline

    @classmethod
    def of(cls, processors: tuple[Any, ...]) -> ProcessorsPart:
        """The part for ``processors``, their pipeline built once (at commit)."""
        return cls(processors, ProcessorPipeline.build(processors))

    def open(self, env: StreamEnv) -> StreamRuntime:
        """Open one :class:`StreamRunner` over the processors."""
        runner = StreamRunner(self.pipeline, env.ctx)
        env.runners.append(runner)
        return _ProcessorsRuntime(runner)


class _ProcessorsRuntime:
    __slots__ = ("runner",)

    def __init__(self, runner: StreamRunner) -> None:
        self.runner = runner

    async def push(self, items: list[Chunk]) -> list[Chunk]:
        if len(items) == 1:
            return await self.runner.push(items[0])
        out: list[Chunk] = []
        for chunk in items:
            out.extend(await self.runner.push(chunk))
        return out

    async def flush(self) -> list[Chunk]:
        return await self.runner.flush()


@dataclass(frozen=True, slots=True)
class StreamChain:
    """Parts in sequence: what one outputs, the next receives."""

    parts: tuple[StreamPart, ...]

    def open(self, env: StreamEnv) -> _ChainRuntime:
        """Build the chain's per-stream runtime."""
        return _ChainRuntime([part.open(env) for part in self.parts])


class _ChainRuntime:
    __slots__ = ("parts",)

    def __init__(self, parts: list[StreamRuntime]) -> None:
        self.parts = parts

    async def push(self, items: list[Chunk], start: int = 0) -> list[Chunk]:
        for part in self.parts[start:] if start else self.parts:
            items = await part.push(items)
            if not items:
                break
        return items

    async def flush(self) -> list[Chunk]:
        out: list[Chunk] = []
        for index, part in enumerate(self.parts):
            emitted = await part.flush()
            if emitted:
                out.extend(await self.push(emitted, index + 1))
        return out


@dataclass(frozen=True, slots=True)
class NodePart:
    """A plain step or ``.map`` function, called per chunk with stream-phase data."""

    node: PlanNode

    def open(self, env: StreamEnv) -> StreamRuntime:
        """Bind the node to the stream."""
        return _NodeRuntime(self.node, env)


class _NodeRuntime:
    __slots__ = ("env", "node")

    def __init__(self, node: PlanNode, env: StreamEnv) -> None:
        self.node = node
        self.env = env

    async def push(self, items: list[Chunk]) -> list[Chunk]:
        env, node = self.env, self.node
        return env.unwrap(await node.call(env.wrap(items), env.run, node), node)

    async def flush(self) -> list[Chunk]:
        return []


@dataclass(frozen=True, slots=True)
class ForkPart:
    """Parallel branches per chunk: each on its own copy but the ``keep`` one, then a join.

    With ``join`` ``None`` the kept branch's output goes on; otherwise the join node receives
    ``{step_id: data}`` for the chunk and returns the data to pass on.
    """

    ids: tuple[str, ...]
    branches: tuple[StreamChain, ...]
    keep: int
    join: PlanNode | None

    def open(self, env: StreamEnv) -> StreamRuntime:
        """Open every branch for the stream."""
        return _ForkRuntime(self, [branch.open(env) for branch in self.branches], env)


class _ForkRuntime:
    __slots__ = ("branches", "env", "spec")

    def __init__(self, spec: ForkPart, branches: list[_ChainRuntime], env: StreamEnv) -> None:
        self.spec = spec
        self.branches = branches
        self.env = env

    async def push(self, items: list[Chunk]) -> list[Chunk]:
        keep = self.spec.keep
        outs = [
            await branch.push(items if index == keep else [_copy(c) for c in items])
            for index, branch in enumerate(self.branches)
        ]
        return await self._join(items, outs)

    async def flush(self) -> list[Chunk]:
        return await self._join([], [await branch.flush() for branch in self.branches])

    async def _join(self, items: list[Chunk], outs: list[list[Chunk]]) -> list[Chunk]:
        node = self.spec.join
        if node is None:
            return outs[self.spec.keep]
        env = self.env
        outputs = BranchOutputs(
            {sid: env.wrap(out) for sid, out in zip(self.spec.ids, outs, strict=True)}, base=env.wrap(items)
        )
        return env.unwrap(await node.call(outputs, env.run, node), node)


@dataclass(frozen=True, slots=True)
class BranchPart:
    """``.branch`` per chunk: the decision node picks the chain the chunk goes through (or none)."""

    decision: PlanNode
    chains: tuple[tuple[str, StreamChain], ...]

    def open(self, env: StreamEnv) -> StreamRuntime:
        """Open every case's chain for the stream."""
        return _BranchRuntime(self.decision, {sid: chain.open(env) for sid, chain in self.chains}, env)


class _BranchRuntime:
    __slots__ = ("chains", "decision", "env")

    def __init__(self, decision: PlanNode, chains: dict[str, _ChainRuntime], env: StreamEnv) -> None:
        self.decision = decision
        self.chains = chains
        self.env = env

    async def push(self, items: list[Chunk]) -> list[Chunk]:
        env = self.env
        chosen = await self.decision.call(env.wrap(items), env.run, self.decision)
        return items if chosen is None else await self.chains[chosen].push(items)

    async def flush(self) -> list[Chunk]:
        out: list[Chunk] = []
        for chain in self.chains.values():
            out.extend(await chain.flush())
        return out


Parts: TypeAlias = list[StreamPart]


def fuse(parts: Parts) -> StreamChain:
    """A chain of ``parts`` with consecutive processor parts merged into one runner."""
    fused: list[StreamPart] = []
    for part in parts:
        previous = fused[-1] if fused else None
        if isinstance(part, ProcessorsPart) and isinstance(previous, ProcessorsPart):
            fused[-1] = ProcessorsPart.of(previous.processors + part.processors)
        else:
            fused.append(part)
    return StreamChain(tuple(fused))

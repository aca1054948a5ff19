"""The stream phase of a processor workflow: a per-chunk dispatch compiled once, never a run per chunk.

What each construct does to a chunk:

- consecutive processor steps (nested processor workflows inlined) form one plain chain, exactly like
  the same processors listed in ``output_processors`` (one ``StreamRunner``, state kept per stream);
- ``.parallel([...])`` + ``.map(select(id))``: every branch's hook sees the chunk (branches other than
  the selected one get copies), the selected branch's output goes on; a tripwire in any branch stops
  the stream. Branches run one after another per chunk — a task group per chunk would cost more than
  the hooks;
- ``.parallel([...])`` + ``.map(merge_branches())``: the branches run as a chain, in declaration order,
  so every branch's edits apply (chunks held back by one branch cannot be merged position by position);
- ``.parallel([...])`` + any other function (or plain step): each branch on its own copy, then the
  function receives ``{step_id: ProcessorStepData}`` for the chunk and returns the one to pass on;
- ``.branch([...])``: conditions are evaluated per chunk;
- plain steps and ``.map`` functions are called per chunk with stream-phase ``ProcessorStepData``.

Step retries do not apply per chunk. ``.foreach`` cannot appear in a processor workflow (rejected at
commit).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

from procflow.engine.context import RunContext
from procflow.engine.graph import is_processor_schema
from procflow.engine.pipeline import ProcessorPipeline
from procflow.engine.plan import (
    BranchOutputs,
    BranchStage,
    ForeachStage,
    ParallelStage,
    PlanNode,
    SingleStage,
    WorkflowPlan,
)
from procflow.engine.run_state import RunState
from procflow.engine.stream import StreamRunner
from procflow.errors import ProcessorResultError, WorkflowDefinitionError
from procflow.messages.chunk import Chunk
from procflow.processors.args import ProcessOutputStreamArgs, StreamResult
from procflow.workflows.processor_data import ProcessorStepData, inner_context

__all__ = ["ChainSpec", "compile_stream", "stream_hooks"]

_SESSION = "__procflow_stream_session__"
StreamHook: TypeAlias = Callable[[ProcessOutputStreamArgs], Awaitable[StreamResult]]


class _Env:
    """What one stream's dispatch shares: the inner run context and the runners to update."""

    __slots__ = ("ctx", "run", "runners")

    def __init__(self, ctx: RunContext, workflow_id: str) -> None:
        self.ctx = ctx
        self.run = RunState(workflow_id, request_context=ctx.request_context)
        self.runners: list[StreamRunner] = []


class _Runtime(Protocol):
    async def push(self, items: list[Chunk]) -> list[Chunk]: ...

    async def flush(self) -> list[Chunk]: ...


class _Spec(Protocol):
    def open(self, env: _Env) -> _Runtime: ...


def _copy(chunk: Chunk) -> Chunk:
    return Chunk(chunk.type, dict(chunk.payload), chunk.transient)


def _data(env: _Env, items: list[Chunk]) -> ProcessorStepData:
    return ProcessorStepData(phase="output_stream", context=env.ctx, chunks=items)


def _chunks_of(value: Any, node: PlanNode) -> list[Chunk]:
    if not isinstance(value, ProcessorStepData):
        raise ProcessorResultError(
            node.id, "process_output_stream", f"returned a {type(value).__name__}; return ProcessorStepData"
        )
    return value.chunks


@dataclass(frozen=True, slots=True)
class _ProcessorsSpec:
    processors: tuple[Any, ...]

    def open(self, env: _Env) -> _Runtime:
        runner = StreamRunner(ProcessorPipeline.build(self.processors), env.ctx)
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
class ChainSpec:
    """A sequence of per-chunk handlers; what one outputs, the next receives."""

    parts: tuple[_Spec, ...]

    def open(self, env: _Env) -> _ChainRuntime:
        """Build this chain's per-stream runtime."""
        return _ChainRuntime([part.open(env) for part in self.parts])


class _ChainRuntime:
    __slots__ = ("parts",)

    def __init__(self, parts: list[_Runtime]) -> None:
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
class _NodeSpec:
    node: PlanNode

    def open(self, env: _Env) -> _Runtime:
        return _NodeRuntime(self.node, env)


class _NodeRuntime:
    __slots__ = ("env", "node")

    def __init__(self, node: PlanNode, env: _Env) -> None:
        self.node = node
        self.env = env

    async def push(self, items: list[Chunk]) -> list[Chunk]:
        return _chunks_of(await self.node.call(_data(self.env, items), self.env.run, self.node), self.node)

    async def flush(self) -> list[Chunk]:
        return []


@dataclass(frozen=True, slots=True)
class _ForkSpec:
    ids: tuple[str, ...]
    branches: tuple[ChainSpec, ...]
    keep: int
    join: PlanNode | None

    def open(self, env: _Env) -> _Runtime:
        return _ForkRuntime(self, [branch.open(env) for branch in self.branches], env)


class _ForkRuntime:
    __slots__ = ("branches", "env", "spec")

    def __init__(self, spec: _ForkSpec, branches: list[_ChainRuntime], env: _Env) -> None:
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
            {sid: _data(env, out) for sid, out in zip(self.spec.ids, outs, strict=True)},
            base=_data(env, items),
        )
        return _chunks_of(await node.call(outputs, env.run, node), node)


@dataclass(frozen=True, slots=True)
class _BranchSpec:
    decision: PlanNode
    chains: tuple[tuple[str, ChainSpec], ...]

    def open(self, env: _Env) -> _Runtime:
        return _BranchRuntime(self.decision, {sid: chain.open(env) for sid, chain in self.chains}, env)


class _BranchRuntime:
    __slots__ = ("chains", "decision", "env")

    def __init__(self, decision: PlanNode, chains: dict[str, _ChainRuntime], env: _Env) -> None:
        self.decision = decision
        self.chains = chains
        self.env = env

    async def push(self, items: list[Chunk]) -> list[Chunk]:
        chosen = await self.decision.call(_data(self.env, items), self.env.run, self.decision)
        return items if chosen is None else await self.chains[chosen].push(items)

    async def flush(self) -> list[Chunk]:
        out: list[Chunk] = []
        for chain in self.chains.values():
            out.extend(await chain.flush())
        return out


def compile_stream(plan: WorkflowPlan) -> ChainSpec:
    """Compile a processor workflow's plan into its per-chunk dispatch.

    Raises:
        WorkflowDefinitionError: the plan holds a construct with no per-chunk meaning.
    """
    parts: list[_Spec] = []
    stages = plan.stages
    index = 0
    while index < len(stages):
        stage = stages[index]
        if isinstance(stage, SingleStage):
            parts.extend(_node_parts(stage.node))
        elif isinstance(stage, ParallelStage):
            after = stages[index + 1] if index + 1 < len(stages) else None
            join = (
                after.node if isinstance(after, SingleStage) and after.node.kind in ("map", "step") else None
            )
            if join is None:
                raise WorkflowDefinitionError(
                    "a parallel block needs a step after it to choose what goes on",
                    step_id=stage.group_id,
                    fix="add .map(select(...)) or .map(merge_branches()) after it",
                )
            parts.extend(_fork_parts(stage, join))
            index += 1
        elif isinstance(stage, BranchStage):
            chains = tuple((node.id, _chain([node])) for node in stage.candidates)
            parts.append(_BranchSpec(stage.node, chains))
        elif isinstance(stage, ForeachStage):
            raise WorkflowDefinitionError(
                ".foreach has no meaning for stream chunks", step_id=stage.node.id, fix="remove it"
            )
        index += 1
    return ChainSpec(_fuse(parts))


def _node_parts(node: PlanNode) -> list[_Spec]:
    if node.kind == "processor":
        wants = callable(getattr(node.processor, "process_output_stream", None))
        return [_ProcessorsSpec((node.processor,))] if wants else []
    if node.subplan is not None and is_processor_schema(node.subplan.output_schema):
        return list(compile_stream(node.subplan).parts)
    return [_NodeSpec(node)]


def _chain(nodes: Sequence[PlanNode]) -> ChainSpec:
    parts: list[_Spec] = []
    for node in nodes:
        parts.extend(_node_parts(node))
    return ChainSpec(_fuse(parts))


def _fork_parts(stage: ParallelStage, join: PlanNode) -> list[_Spec]:
    chains = [_chain([node]) for node in stage.nodes]
    ids = tuple(node.id for node in stage.nodes)
    if join.selection == "merge":
        return [part for chain in chains for part in chain.parts]
    if join.selection == "select" and join.references and join.references[0] in ids:
        keep = ids.index(join.references[0])
        others = [chain for i, chain in enumerate(chains) if i != keep and chain.parts]
        if not others:
            return list(chains[keep].parts)
        return [_ForkSpec(ids, tuple(chains), keep, None)]
    return [_ForkSpec(ids, tuple(chains), 0, join)]


def _fuse(parts: list[_Spec]) -> tuple[_Spec, ...]:
    fused: list[_Spec] = []
    for part in parts:
        previous = fused[-1] if fused else None
        if isinstance(part, _ProcessorsSpec) and isinstance(previous, _ProcessorsSpec):
            fused[-1] = _ProcessorsSpec(previous.processors + part.processors)
        else:
            fused.append(part)
    return tuple(fused)


class _Session:
    __slots__ = ("env", "retry_count", "root", "stream_parts")

    def __init__(
        self, spec: ChainSpec, args: ProcessOutputStreamArgs, ctx: RunContext, workflow_id: str
    ) -> None:
        self.env = _Env(ctx, workflow_id)
        self.root = spec.open(self.env)
        self.stream_parts = args.stream_parts
        self.retry_count = args.retry_count

    def set_retry_count(self, retry_count: int) -> None:
        self.retry_count = retry_count
        self.env.ctx.retry_count = retry_count
        for runner in self.env.runners:
            runner.set_retry_count(retry_count)


def stream_hooks(workflow_id: str, spec: ChainSpec) -> tuple[StreamHook, StreamHook]:
    """The workflow's ``process_output_stream`` and ``flush_output_stream`` hooks over ``spec``.

    One dispatch is opened per stream (a new stream is recognised by its new ``stream_parts`` list);
    inner processors' state dicts live for the whole request.
    """

    async def process_output_stream(args: ProcessOutputStreamArgs) -> StreamResult:
        session: _Session | None = args.state.get(_SESSION)
        if session is None or session.stream_parts is not args.stream_parts:
            session = args.state[_SESSION] = _Session(spec, args, inner_context(args), workflow_id)
        elif session.retry_count != args.retry_count:
            session.set_retry_count(args.retry_count)
        out = await session.root.push([args.part])
        return out[0] if len(out) == 1 else (out or None)

    async def flush_output_stream(args: ProcessOutputStreamArgs) -> StreamResult:
        session: _Session | None = args.state.get(_SESSION)
        if session is None or session.stream_parts is not args.stream_parts:
            return None
        return await session.root.flush() or None

    return process_output_stream, flush_output_stream

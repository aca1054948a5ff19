"""The stage kinds of a plan: each one class serving the message phases and the stream phase.

A plan is a series-parallel list of stages run one after another; each stage holds its nodes. Every
stage kind implements both ``run(value, run_state)`` (a whole value: any workflow run, and a processor
workflow's message phases) and ``stream_parts(join)`` (what it does to each chunk of a processor
workflow's stream, compiled once and opened per stream), so a stage kind cannot exist in one phase and
not the other.

===================  ===========================================  ============================================
stage                ``run`` (message phases, any workflow)       ``stream_parts`` (stream phase)
===================  ===========================================  ============================================
Single: processor    the processor's hook for the phase, through  joins the neighbouring processors: a stream
                     the phase runner (or passes the value on)    runner; each processor's state per request
Single: workflow     runs the nested plan as a child run          a nested processor workflow is inlined
Single: step / map   called once with the value                   called per chunk with stream-phase data
Parallel + select    branches concurrently, each on its own       every branch sees the chunk (others on
                     (lazily forked) copy; select keeps one       copies); the selected one's output goes on
Parallel + merge     as above; ``merge_branches`` applies every   branches run as a chain, in declaration
                     branch's edits or raises a conflict          order (held-back chunks cannot be merged)
Parallel + function  the function gets ``{step_id: output}``      the function gets ``{step_id: data}``
Branch               first case whose condition holds runs, the   conditions are evaluated per chunk
                     others are ``skipped``; else default/input
Foreach              the node per list item, n at a time          no per-chunk meaning: rejected at commit
===================  ===========================================  ============================================

Common to both: a :class:`TripWire` anywhere stops the run (by default cancelling running siblings) and
keeps the inner processor's id; failures always cancel siblings. Step retries apply in ``run`` only.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from procflow._engine._branches import run_eagerly, run_inline
from procflow._engine._stream_parts import (
    BranchPart,
    ForkPart,
    NodePart,
    ProcessorsPart,
    StreamChain,
    StreamPart,
    fuse,
)
from procflow._engine.foreach import run_foreach
from procflow._engine.nodes import run_node, skip_node
from procflow._engine.plan import BranchOutputs, NodeCall, PlanNode, is_processor_schema
from procflow._engine.run_state import RunState, StepContext
from procflow.errors import WorkflowDefinitionError

__all__ = [
    "BranchCase",
    "BranchStage",
    "ForeachStage",
    "LeanStage",
    "ParallelStage",
    "SequenceStage",
    "SingleStage",
    "Stage",
    "branch_decision",
    "lean_stages",
    "stage_contains",
    "stage_nodes",
    "stream_chain",
]


@dataclass(frozen=True, slots=True)
class SingleStage:
    """One node run on the previous stage's output (``.then``, ``.map``)."""

    node: PlanNode

    @property
    def nodes(self) -> tuple[PlanNode, ...]:
        """The stage's nodes."""
        return (self.node,)

    async def run(self, value: Any, run: RunState) -> Any:
        """Run the node on ``value``."""
        return await run_node(self.node, value, run)

    def stream_parts(self, join: PlanNode | None = None) -> list[StreamPart]:
        """A processor joins the processor chain; a nested processor workflow is inlined; else per chunk."""
        node = self.node
        if node.kind == "processor":
            wants = callable(getattr(node.processor, "process_output_stream", None))
            return [ProcessorsPart.of((node.processor,))] if wants else []
        if node.subplan is not None and is_processor_schema(node.subplan.output_schema):
            return list(stream_chain(node.subplan.stages).parts)
        return [NodePart(node)]


@dataclass(frozen=True, slots=True)
class SequenceStage:
    """Consecutive processor steps (``.then(a).then(b)``), as the executor runs them.

    In a lean run (nobody can see step records) the fused ``call`` runs one phase runner over all their
    processors — exactly the processors listed in a row, with none of the per-node bookkeeping;
    otherwise each node runs and is recorded as its own step. In the stream phase the processors join
    one stream runner either way. The plan's own ``stages`` keep one stage per step (for records,
    ``run_from`` and pictures); ``compile_plan`` derives the lean stages.
    """

    stages: tuple[SingleStage, ...]
    call: NodeCall

    @property
    def nodes(self) -> tuple[PlanNode, ...]:
        """The processor steps, in order."""
        return tuple(stage.node for stage in self.stages)

    async def run(self, value: Any, run: RunState) -> Any:
        """Run the processors on ``value`` in order."""
        if run.lean:
            return await self.call(value, run, self.stages[0].node)
        for stage in self.stages:
            value = await run_node(stage.node, value, run)
        return value

    def stream_parts(self, join: PlanNode | None = None) -> list[StreamPart]:
        """Each processor's part (consecutive ones are fused into one runner)."""
        return [part for stage in self.stages for part in stage.stream_parts()]


@dataclass(frozen=True, slots=True)
class ParallelStage:
    """Nodes run concurrently, each on its own copy of the input; the output maps step id to output."""

    group_id: str
    nodes: tuple[PlanNode, ...]
    keep_original: int | None = None
    """Index of the branch that may work on the input itself rather than a copy (the one a following
    ``select`` keeps), or ``None``. Used only when no branch can be interrupted (see ``PlanNode.inline``)."""

    async def run(self, value: Any, run: RunState) -> BranchOutputs:
        """Run every branch on its own copy of ``value``; return their outputs by step id."""
        nodes = self.nodes
        inline = all(node.inline is not None and node.inline(value) for node in nodes)
        # Only branches that cannot be interrupted may edit the input itself (the one a select keeps):
        # a cancelled branch must never leave half its edits behind.
        keep = self.keep_original if inline else None
        fork = getattr(value, "fork_branch", None)
        inputs = [value if fork is None or i == keep else fork(n) for i, n in enumerate(nodes)]
        outputs: dict[str, Any] = {}
        errors: list[BaseException] = []
        if inline:
            await run_inline(nodes, inputs, run, outputs, errors)
        else:
            await run_eagerly(nodes, inputs, run, outputs, errors)
        for node in nodes:
            if node.id not in outputs and node.id not in run.records:
                skip_node(node, run, "canceled")
        if errors:
            raise errors[0]
        return BranchOutputs({node.id: outputs[node.id] for node in nodes}, base=value)

    def stream_parts(self, join: PlanNode | None = None) -> list[StreamPart]:
        """Branches per chunk, joined by the stage after the block (``join``, required here)."""
        if join is None:
            raise WorkflowDefinitionError(
                "a parallel block needs a step after it to choose what goes on",
                step_id=self.group_id,
                fix="add .map(select(...)) or .map(merge_branches()) after it",
            )
        chains = [stream_chain([SingleStage(node)]) for node in self.nodes]
        ids = tuple(node.id for node in self.nodes)
        if join.selection == "merge":
            return [part for chain in chains for part in chain.parts]
        if join.selection == "select" and join.references and join.references[0] in ids:
            keep = ids.index(join.references[0])
            if not any(chain.parts for i, chain in enumerate(chains) if i != keep):
                return list(chains[keep].parts)
            return [ForkPart(ids, tuple(chains), keep, None)]
        return [ForkPart(ids, tuple(chains), 0, join)]


@dataclass(frozen=True, slots=True)
class BranchCase:
    """One ``(condition, step)`` pair of a ``.branch``."""

    condition: Callable[[StepContext[Any]], bool | Awaitable[bool]]
    is_async: bool
    name: str
    node: PlanNode


@dataclass(frozen=True, slots=True)
class BranchStage:
    """A decision node and its cases: the first case whose condition holds runs, the others are skipped.

    With no match, ``default`` runs if given; otherwise the input passes through unchanged.
    """

    node: PlanNode
    cases: tuple[BranchCase, ...]
    default: PlanNode | None = None

    @property
    def candidates(self) -> tuple[PlanNode, ...]:
        """Every node that may run, cases first, then the default."""
        nodes = tuple(case.node for case in self.cases)
        return (*nodes, self.default) if self.default is not None else nodes

    @property
    def nodes(self) -> tuple[PlanNode, ...]:
        """The decision node, then every candidate."""
        return (self.node, *self.candidates)

    async def run(self, value: Any, run: RunState) -> Any:
        """Decide, record the others as skipped, run the chosen node (or pass ``value`` through)."""
        chosen_id = await run_node(self.node, value, run)
        chosen: PlanNode | None = None
        for node in self.candidates:
            if node.id == chosen_id:
                chosen = node
            else:
                skip_node(node, run, "skipped")
        return value if chosen is None else await run_node(chosen, value, run)

    def stream_parts(self, join: PlanNode | None = None) -> list[StreamPart]:
        """The decision per chunk, then the chosen case's chain."""
        chains = tuple((node.id, stream_chain([SingleStage(node)])) for node in self.candidates)
        return [BranchPart(self.node, chains)]


def branch_decision(cases: Sequence[BranchCase], default: PlanNode | None) -> Callable[..., Awaitable[Any]]:
    """The call of a branch's decision node: the id of the first case whose condition holds.

    Falls back to ``default``'s id, or ``None`` (the input then passes through unchanged).
    """

    async def decide(value: Any, run: RunState, node: PlanNode) -> str | None:
        ctx: StepContext[Any] = StepContext(value, step_id=node.id, run=run)
        for case in cases:
            holds = case.condition(ctx)
            if case.is_async or inspect.isawaitable(holds):
                holds = await holds  # type: ignore[misc]
            if holds:
                return case.node.id
        return default.id if default is not None else None

    return decide


@dataclass(frozen=True, slots=True)
class ForeachStage:
    """One node run once per item of a list input, at most ``concurrency`` at a time, outputs in order."""

    node: PlanNode
    concurrency: int = 1

    @property
    def nodes(self) -> tuple[PlanNode, ...]:
        """The stage's node."""
        return (self.node,)

    async def run(self, value: Any, run: RunState) -> list[Any]:
        """Run the node on every item of ``value``."""
        return await run_foreach(self.node, self.concurrency, value, run)

    def stream_parts(self, join: PlanNode | None = None) -> list[StreamPart]:
        """No per-chunk meaning (a processor workflow with ``.foreach`` is rejected at commit)."""
        raise WorkflowDefinitionError(
            ".foreach has no meaning for stream chunks", step_id=self.node.id, fix="remove it"
        )


Stage: TypeAlias = SingleStage | ParallelStage | BranchStage | ForeachStage
"""Any stage of a plan."""

LeanStage: TypeAlias = Stage | SequenceStage
"""A stage as a lean run executes it: a plan's stage, or a :class:`SequenceStage` of fused ones."""


def lean_stages(
    stages: Sequence[Stage], fuse: Callable[[tuple[PlanNode, ...]], NodeCall]
) -> tuple[LeanStage, ...]:
    """``stages`` with each sequence of two or more plain processor steps (no retry policy) fused."""
    out: list[LeanStage] = []
    pending: list[SingleStage] = []

    def close() -> None:
        if len(pending) > 1:
            out.append(SequenceStage(tuple(pending), fuse(tuple(stage.node for stage in pending))))
        else:
            out.extend(pending)
        pending.clear()

    for stage in stages:
        if isinstance(stage, SingleStage) and stage.node.kind == "processor" and stage.node.retry is None:
            pending.append(stage)
            continue
        close()
        out.append(stage)
    close()
    return tuple(out)


def stage_nodes(stage: Stage) -> tuple[PlanNode, ...]:
    """Every node of a stage, in definition order."""
    return stage.nodes


def stage_contains(stage: Stage, step_id: str) -> bool:
    """Whether ``step_id`` names the stage (its group id) or one of its nodes."""
    if isinstance(stage, ParallelStage) and stage.group_id == step_id:
        return True
    return any(node.id == step_id for node in stage.nodes)


def stream_chain(stages: Sequence[Stage]) -> StreamChain:
    """Compile stages for the stream phase: a parallel block takes the single stage after it as its join.

    Raises:
        WorkflowDefinitionError: a stage has no per-chunk meaning.
    """
    parts: list[StreamPart] = []
    index = 0
    while index < len(stages):
        stage = stages[index]
        join: PlanNode | None = None
        if isinstance(stage, ParallelStage):
            after = stages[index + 1] if index + 1 < len(stages) else None
            if isinstance(after, SingleStage) and after.node.kind in ("map", "step"):
                join = after.node
                index += 1
        parts.extend(stage.stream_parts(join))
        index += 1
    return fuse(parts)

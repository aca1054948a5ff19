"""Compiling a workflow's stages into a validated, immutable plan; deriving its networkx graph on demand.

Every rule below raises :class:`WorkflowDefinitionError` naming the step and saying how to fix it:
an empty workflow, duplicate step ids (the same processor used twice included, at any nesting depth),
a workflow nested inside itself, a reference to an unknown or not-yet-run step, a parallel block of
processor steps with no selection after it, ``.foreach`` in a processor workflow, and a step whose input
schema cannot accept what the step before it returns. The DSL cannot express other cycles.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from procflow._engine._stages import (
    BranchStage,
    ForeachStage,
    ParallelStage,
    SingleStage,
    Stage,
    lean_stages,
    stage_nodes,
)
from procflow._engine.plan import NodeCall, PlanNode, WorkflowPlan, is_processor_schema
from procflow._engine.retry import RetryPolicy
from procflow._engine.schemas import ParallelSchema, accepts, element_schema, schema_name, union_of
from procflow.errors import ConfigurationError, WorkflowDefinitionError

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "START",
    "STOP",
    "Edge",
    "StageEdges",
    "build_graph",
    "compile_plan",
    "is_processor_schema",
    "iter_processor_steps",
    "iter_processors",
    "stage_edges",
]

START = "__start__"
"""The pseudo node edges leave from to reach a workflow's first stage (pictures only)."""

STOP = "__end__"
"""The pseudo node the last stage's edges reach (pictures only)."""


def _processor_like(node: PlanNode) -> bool:
    return node.kind == "processor" or (node.kind == "workflow" and is_processor_schema(node.output_schema))


def iter_processors(plan: WorkflowPlan) -> Iterator[tuple[str, Any]]:
    """Yield ``(workflow_id, processor)`` for every processor in the plan, nested workflows included."""
    for stage in plan.stages:
        for node in stage_nodes(stage):
            if node.kind == "processor" or (node.kind == "foreach" and node.processor is not None):
                yield plan.id, node.processor
            if node.subplan is not None:
                yield from iter_processors(node.subplan)


def iter_processor_steps(
    plan: WorkflowPlan, within: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Yield ``(path, processor)`` for every processor step of the plan, nested workflows included.

    ``path`` leads from the plan's id to the step's id through the nested workflows, parallel blocks
    and branches the step sits in, e.g. ``("outer", "inner", "parallel:0", "processor:pii-detector")``;
    ``within`` is prepended (the path to ``plan`` itself, for a nested plan).
    """
    path = (*within, plan.id)
    for stage in plan.stages:
        where = path
        if isinstance(stage, ParallelStage):
            where = (*path, stage.group_id)
        elif isinstance(stage, BranchStage):
            where = (*path, stage.node.id)
        for node in stage_nodes(stage):
            if node.processor is not None:
                yield (*where, node.id), node.processor
            if node.subplan is not None:
                yield from iter_processor_steps(node.subplan, where)


def compile_plan(
    workflow_id: str,
    stages: Sequence[Stage],
    *,
    input_schema: Any = Any,
    output_schema: Any = Any,
    validate_input: Callable[[Any], Any] | None = None,
    retry: RetryPolicy | None = None,
    cancel_on_tripwire: bool = True,
    description: str | None = None,
    fuse: Callable[[tuple[PlanNode, ...]], NodeCall] | None = None,
) -> WorkflowPlan:
    """Validate ``stages`` and return the immutable plan.

    ``fuse`` builds one call running several processor nodes in a row; with it, the plan's lean stages
    fuse sequences of processor steps (see :class:`~procflow._engine._stages.SequenceStage`).

    Raises:
        WorkflowDefinitionError: the workflow breaks one of the rules in this module's docstring.
    """
    if not stages:
        raise WorkflowDefinitionError(
            f"workflow {workflow_id!r} has no steps",
            fix="add at least one step with .then(step) before .commit()",
        )
    processor_workflow = is_processor_schema(input_schema) and is_processor_schema(output_schema)
    nodes = _check_unique_ids(stages)
    _check_nesting(workflow_id, stages)
    _check_processor_ids(workflow_id, stages)
    _check_references(stages, processor_workflow=processor_workflow)
    _check_parallel_selection(stages)
    if processor_workflow:
        _check_no_foreach(stages)
    _check_schemas(stages, input_schema, output_schema)
    return WorkflowPlan(
        id=workflow_id,
        stages=tuple(stages),
        input_schema=input_schema,
        output_schema=output_schema,
        validate_input=validate_input,
        retry=retry,
        cancel_on_tripwire=cancel_on_tripwire,
        description=description,
        nodes=nodes,
        lean_stages=lean_stages(stages, fuse) if fuse is not None else tuple(stages),
        lean=all(_lean(node) for stage in stages for node in stage.nodes),
    )


def _lean(node: PlanNode) -> bool:
    if node.kind == "processor":
        return True
    if node.kind == "map":
        return node.selection in ("select", "merge")
    return node.kind == "workflow" and node.subplan is not None and node.subplan.lean


def _check_unique_ids(stages: Sequence[Stage]) -> dict[str, PlanNode]:
    seen: dict[str, int] = {}
    nodes: dict[str, PlanNode] = {}
    for index, stage in enumerate(stages):
        ids = [node.id for node in stage_nodes(stage)]
        if isinstance(stage, ParallelStage):
            ids.append(stage.group_id)
        for node in stage_nodes(stage):
            nodes.setdefault(node.id, node)
        for step_id in ids:
            if step_id in seen:
                node = nodes[step_id]
                fix = (
                    "give one of the two processors its own id (built-ins take id=..., e.g. "
                    f"id='{step_id.removeprefix('processor:')}-2'); each processor instance is one step"
                    if node.kind == "processor"
                    else "give each step a unique id (implicit .map/.branch steps take id=...)"
                )
                raise WorkflowDefinitionError(
                    f"the id is used twice (stages #{seen[step_id]} and #{index})", step_id=step_id, fix=fix
                )
            seen[step_id] = index
    return nodes


def _check_nesting(workflow_id: str, stages: Sequence[Stage], path: tuple[str, ...] = ()) -> None:
    for stage in stages:
        for node in stage_nodes(stage):
            if node.subplan is None:
                continue
            if node.subplan.id == workflow_id:
                chain = " -> ".join((workflow_id, *path, node.subplan.id))
                raise WorkflowDefinitionError(
                    f"workflow {workflow_id!r} contains itself ({chain})",
                    step_id=node.id,
                    fix="nest a different workflow, or give the inner workflow its own id",
                )
            _check_nesting(workflow_id, node.subplan.stages, (*path, node.subplan.id))


def _check_processor_ids(workflow_id: str, stages: Sequence[Stage]) -> None:
    owners: dict[str, str] = {}
    for stage in stages:
        for node in stage_nodes(stage):
            if node.subplan is not None:
                found = list(iter_processors(node.subplan))
            else:
                found = [(workflow_id, node.processor)] if node.processor is not None else []
            for owner, processor in found:
                pid = str(getattr(processor, "id", ""))
                if pid in owners:
                    raise WorkflowDefinitionError(
                        f"processor {pid!r} appears in both {owners[pid]!r} and {owner!r}; its state and "
                        "tripwires would be mixed up",
                        step_id=f"processor:{pid}",
                        fix=f"give one of them its own id (built-ins take id=..., e.g. id='{pid}-2')",
                    )
                owners[pid] = owner


def _check_references(stages: Sequence[Stage], *, processor_workflow: bool) -> None:
    known = {node.id for stage in stages for node in stage_nodes(stage)}
    earlier: set[str] = set()
    for index, stage in enumerate(stages):
        for node in stage_nodes(stage):
            for ref in node.references:
                if ref not in known:
                    raise WorkflowDefinitionError(
                        f"refers to the unknown step {ref!r}",
                        step_id=node.id,
                        fix=f"name one of this workflow's steps: {', '.join(sorted(known - {node.id}))}",
                    )
                if ref not in earlier:
                    raise WorkflowDefinitionError(
                        f"refers to step {ref!r}, which has not run yet at this point",
                        step_id=node.id,
                        fix="refer only to steps that run before this one",
                    )
                before = stages[index - 1] if index else None
                if processor_workflow and not (
                    isinstance(before, ParallelStage) and ref in {n.id for n in before.nodes}
                ):
                    raise WorkflowDefinitionError(
                        f"selects {ref!r}, which is not a branch of the parallel block right before it; in "
                        "a processor workflow that would drop the edits of the steps in between",
                        step_id=node.id,
                        fix="put .map(select(...)) right after a .parallel([...]) and name one of its steps",
                    )
        earlier.update(node.id for node in stage_nodes(stage))


def _check_parallel_selection(stages: Sequence[Stage]) -> None:
    for index, stage in enumerate(stages):
        if not isinstance(stage, ParallelStage):
            continue
        processors = [node.id for node in stage.nodes if _processor_like(node)]
        if not processors:
            continue
        after = stages[index + 1] if index + 1 < len(stages) else None
        if isinstance(after, SingleStage) and after.node.kind == "map":
            continue
        where = "the end of the workflow" if after is None else f"step {stage_nodes(after)[0].id!r}"
        raise WorkflowDefinitionError(
            f"the parallel block ({', '.join(n.id for n in stage.nodes)}) is followed by {where}, but each "
            "branch edited its own copy of the messages, so one of them must be chosen",
            step_id=stage.group_id,
            fix=(
                f"add .map(select({processors[0]!r})) after this parallel block to keep that branch's "
                "edits, or .map(merge_branches()) to apply every branch's edits"
            ),
        )


def _check_no_foreach(stages: Sequence[Stage]) -> None:
    for stage in stages:
        if isinstance(stage, ForeachStage):
            raise WorkflowDefinitionError(
                "a processor workflow passes the phase's messages from step to step, not a list, so "
                ".foreach has nothing to iterate over",
                step_id=stage.node.id,
                fix="use .then(step) for processor steps, or run .foreach in a workflow with other schemas",
            )


def _mismatch(node: PlanNode, expected: Any, got: Any, source: str) -> WorkflowDefinitionError:
    return WorkflowDefinitionError(
        f"its input schema {schema_name(expected)} cannot accept {schema_name(got)}, which {source} returns",
        step_id=node.id,
        fix="add a .map(...) before it that converts the value, or change one of the two schemas",
    )


def _check_schemas(stages: Sequence[Stage], input_schema: Any, output_schema: Any) -> None:
    current, source = input_schema, "the workflow input"
    for stage in stages:
        current, source = _stage_schema(stage, current, source)
    if not accepts(output_schema, current):
        raise WorkflowDefinitionError(
            f"the workflow's output schema {schema_name(output_schema)} cannot accept "
            f"{schema_name(current)}, which {source} returns",
            step_id=stage_nodes(stages[-1])[0].id,
            fix="end with a step returning the output schema (after a parallel block, add .map(select(...)))",
        )


def _stage_schema(stage: Stage, current: Any, source: str) -> tuple[Any, str]:
    if isinstance(stage, SingleStage):
        node = stage.node
        if not accepts(node.input_schema, current):
            raise _mismatch(node, node.input_schema, current, source)
        return node.output_schema, f"step {node.id!r}"
    if isinstance(stage, ParallelStage):
        for node in stage.nodes:
            if not accepts(node.input_schema, current):
                raise _mismatch(node, node.input_schema, current, source)
        fields = tuple((node.id, node.output_schema) for node in stage.nodes)
        return ParallelSchema(fields), f"parallel block {stage.group_id!r}"
    if isinstance(stage, BranchStage):
        for node in stage.candidates:
            if not accepts(node.input_schema, current):
                raise _mismatch(node, node.input_schema, current, source)
        outs = [node.output_schema for node in stage.candidates]
        if stage.default is None:
            outs.append(current)
        return union_of(outs), f"branch {stage.node.id!r}"
    item = element_schema(current)
    if item is None:
        raise WorkflowDefinitionError(
            f".foreach needs a list, but {source} returns {schema_name(current)}",
            step_id=stage.node.id,
            fix="make the step before it return a list, or add a .map(...) that builds one",
        )
    if not accepts(stage.node.input_schema, item):
        raise _mismatch(stage.node, stage.node.input_schema, item, f"each item of what {source}")
    return types.GenericAlias(list, (stage.node.output_schema,)), f"foreach {stage.node.id!r}"


class Edge(NamedTuple):
    """An edge of a workflow's picture, between two node ids."""

    source: str
    target: str
    label: str
    """The branch case it takes (``"default"`` for the default), or ``""``."""


class StageEdges(NamedTuple):
    """How a stage connects: edges from the stage before reach ``entries``, edges on leave ``exits``."""

    entries: tuple[str, ...]
    exits: tuple[str, ...]
    inner: list[Edge]
    """The edges inside the stage: a branch's condition node to each case."""


def stage_edges(stage: Stage) -> StageEdges:
    """A stage's entry node ids, exit node ids and inner edges."""
    if isinstance(stage, SingleStage | ForeachStage):
        return StageEdges((stage.node.id,), (stage.node.id,), [])
    if isinstance(stage, ParallelStage):
        ids = tuple(node.id for node in stage.nodes)
        return StageEdges(ids, ids, [])
    inner = [Edge(stage.node.id, case.node.id, case.name) for case in stage.cases]
    exits = [case.node.id for case in stage.cases]
    if stage.default is not None:
        inner.append(Edge(stage.node.id, stage.default.id, "default"))
        exits.append(stage.default.id)
    else:
        exits.append(stage.node.id)
    return StageEdges((stage.node.id,), tuple(exits), inner)


def build_graph(stages: Sequence[Stage]) -> nx.DiGraph:
    """The stages as a frozen networkx graph (nodes carry ``kind``, ``stage`` and ``group``).

    Only pictures, exports and tests need it: the executor runs the stages and validation reads them.

    Raises:
        ConfigurationError: networkx is not installed.
    """
    try:
        import networkx as nx  # only here: `import procflow` and `.commit()` never pay for it
    except ImportError:  # pragma: no cover - networkx is installed with procflow today
        raise ConfigurationError(
            "workflow.graph needs networkx; install it with `pip install 'procflow[graph]'` (or networkx)"
        ) from None

    graph = nx.DiGraph()
    passthrough = {
        stage.node.id for stage in stages if isinstance(stage, BranchStage) and stage.default is None
    }
    previous: tuple[str, ...] = ()
    for index, stage in enumerate(stages):
        group = stage.group_id if isinstance(stage, ParallelStage) else None
        for node in stage_nodes(stage):
            graph.add_node(node.id, kind=node.kind, stage=index, group=group)
        edges = stage_edges(stage)
        for edge in edges.inner:
            graph.add_edge(edge.source, edge.target, label=edge.label)
        for source in previous:
            for target in edges.entries:
                graph.add_edge(source, target, label="otherwise" if source in passthrough else "")
        previous = edges.exits
    return nx.freeze(graph)

"""The compiled, immutable form of a workflow: nodes grouped into stages, run one stage after another.

The DSL (:mod:`procflow.workflows`) turns each ``.then`` / ``.parallel`` / ``.branch`` / ``.map`` /
``.foreach`` into one stage (the stage kinds live in :mod:`procflow._engine._stages`);
:func:`procflow._engine.graph.compile_plan` validates them. The plan is a series-parallel list: every
node of a stage depends on every node of the stage before it, so running stages in order runs each node
after all its predecessors. The graph is derived from the stages, for validation and pictures.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from procflow._engine.retry import RetryPolicy

if TYPE_CHECKING:
    import networkx as nx

    from procflow._engine._stages import LeanStage, Stage
    from procflow._engine.run_state import RunState

__all__ = [
    "BranchOutputs",
    "NodeCall",
    "NodeKind",
    "PlanNode",
    "SelectionKind",
    "WorkflowPlan",
    "is_processor_schema",
]

NodeKind = Literal["processor", "step", "workflow", "map", "branch", "foreach"]
"""What a node is: a processor step, a plain step, a nested workflow, an implicit ``.map`` or
``.branch`` decision node, or a step run once per item by ``.foreach``."""

SelectionKind = Literal["select", "merge", "function"]
"""How a ``map`` node picks its output: ``select(step_id)``, ``merge_branches()``, or any function."""

NodeCall: TypeAlias = "Callable[[Any, RunState, PlanNode], Awaitable[Any]]"
"""How the executor calls a node: ``await call(input_value, run_state, node)`` returns its output."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanNode:
    """One node of the plan.

    Attributes:
        id: The step id (``processor:<id>`` for processor steps; ``map:<n>`` / ``branch:<n>`` for
            implicit ones, ``n`` being the stage's position).
        kind: What the node is.
        call: Runs the node (a branch decision node's call returns the id of the case to run).
        input_schema: The type or pydantic model the node accepts (``Any`` accepts everything).
        output_schema: The type or model the node returns.
        validate: Checks and converts the input before the call (``None``: nothing to check).
        retry: The node's retry policy, or ``None`` for a single attempt.
        label: A short human-readable label for pictures.
        description: The step's description, if it has one.
        processor: The wrapped processor, for processor nodes.
        selection: For ``map`` nodes, how the output is picked.
        references: Step ids a ``map`` node reads (``select`` names one).
        subplan: A nested workflow's own plan.
        source: The DSL object the node was made from.
        inline: Given the input, whether calling the node can never suspend (plain ``def`` hooks, no
            retry delay). When every branch of a parallel block is inline, the branches cannot
            interleave anyway, so they run one after another without a task group (same results,
            statuses and cancellation, a fraction of the cost).
    """

    id: str
    kind: NodeKind
    call: NodeCall
    input_schema: Any = Any
    output_schema: Any = Any
    validate: Callable[[Any], Any] | None = None
    retry: RetryPolicy | None = None
    label: str = ""
    description: str | None = None
    processor: Any = None
    selection: SelectionKind | None = None
    references: tuple[str, ...] = ()
    subplan: WorkflowPlan | None = None
    source: Any = None
    inline: Callable[[Any], bool] | None = None


def is_processor_schema(schema: Any) -> bool:
    """Whether ``schema`` is the phase-tagged processor schema (``ProcessorStepSchema``)."""
    return bool(getattr(schema, "__processor_schema__", False))


class BranchOutputs(dict[str, Any]):
    """What the step after a ``.parallel`` receives: each branch's output by step id.

    A plain ``dict`` (in branch order) that also remembers ``base``, the value the parallel block
    received, so ``merge_branches()`` can tell what each branch changed.
    """

    __slots__ = ("base",)

    def __init__(self, outputs: Mapping[str, Any] = {}, *, base: Any = None) -> None:
        super().__init__(outputs)
        self.base = base


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowPlan:
    """A validated workflow: its stages in order and its settings.

    Attributes:
        id: The workflow id.
        stages: The stages, run in order (a series-parallel list; :attr:`graph` is derived from it).
        input_schema: What the workflow accepts.
        output_schema: What it returns.
        validate_input: Checks the run's input (``None``: nothing to check).
        retry: The default retry policy the DSL gave steps without their own.
        cancel_on_tripwire: Whether a tripwire in one branch cancels its running siblings.
        description: The workflow's description.
        nodes: Every node by id, in definition order.
        lean_stages: The stages as lean runs execute them (sequences of processor steps fused), or empty.
        lean: Whether every node is a processor step, a ``select``/``merge_branches`` or a lean nested
            workflow: then no user code can read step records, and a processor run may skip them.
    """

    id: str
    stages: tuple[Stage, ...]
    input_schema: Any = Any
    output_schema: Any = Any
    validate_input: Callable[[Any], Any] | None = None
    retry: RetryPolicy | None = None
    cancel_on_tripwire: bool = True
    description: str | None = None
    nodes: Mapping[str, PlanNode] = field(default_factory=dict)
    lean_stages: tuple[LeanStage, ...] = ()
    lean: bool = False

    @property
    def graph(self) -> nx.DiGraph:
        """The frozen networkx ``DiGraph`` of the nodes, derived from the stages (needs networkx)."""
        from procflow._engine.graph import build_graph

        return build_graph(self.stages)

    def stage_index(self, step_id: str) -> int:
        """Position of the stage holding ``step_id`` (a parallel block's group id counts too)."""
        from procflow._engine._stages import stage_contains

        for index, stage in enumerate(self.stages):
            if stage_contains(stage, step_id):
                return index
        raise KeyError(step_id)

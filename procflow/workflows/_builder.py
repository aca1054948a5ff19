"""The workflow DSL: ``create_workflow(...)``, ``.then/.parallel/.branch/.map/.foreach``, ``.commit()``."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar, cast, overload

from typing_extensions import TypeVar as DefaultTypeVar

from procflow._engine._stages import (
    BranchCase,
    BranchStage,
    ForeachStage,
    ParallelStage,
    SingleStage,
    Stage,
    branch_decision,
    stage_nodes,
)
from procflow._engine.graph import compile_plan
from procflow._engine.plan import BranchOutputs, PlanNode, SelectionKind
from procflow._engine.retry import RetryPolicy
from procflow._engine.run_state import RunState, StepContext
from procflow._engine.schemas import make_validator
from procflow.errors import ConfigurationError, WorkflowDefinitionError
from procflow.processors._base import Processor
from procflow.workflows._processor_data import ProcessorStepSchema
from procflow.workflows._selection import BranchMerge, Selection
from procflow.workflows._steps import ProcessorStep, Step, create_step, is_async_callable

if TYPE_CHECKING:
    from procflow.workflows._workflow import Workflow

__all__ = ["Condition", "MapFn", "StepLike", "WorkflowBuilder", "create_workflow"]

WfInT = DefaultTypeVar("WfInT", default=Any)
"""What the workflow being built takes."""
CurT = DefaultTypeVar("CurT", covariant=True, default=Any)
"""What the stages so far return: the input of the next stage."""
_N = TypeVar("_N")
_E = TypeVar("_E")
_I = TypeVar("_I")
_C = DefaultTypeVar("_C", default=Any)

StepLike: TypeAlias = Any
"""A :class:`Step`, a committed :class:`Workflow`, or a processor (wrapped with ``create_step``)."""

Condition: TypeAlias = Callable[[StepContext[_C]], bool | Awaitable[bool]]
"""A ``.branch`` condition: a function of the step context returning whether its step runs
(``Condition[Order]`` for one of a ``StepContext[Order]``)."""

MapFn = Callable[[StepContext[Any]], Any]
"""A ``.map`` function: receives the step context, returns the next step's input (``def`` or ``async``)."""


@dataclass(frozen=True, slots=True)
class _Then:
    step: Step


@dataclass(frozen=True, slots=True)
class _Parallel:
    steps: tuple[Step, ...]


@dataclass(frozen=True, slots=True)
class _Branch:
    cases: tuple[tuple[Condition[Any], Step], ...]
    default: Step | None


@dataclass(frozen=True, slots=True)
class _Map:
    fn: MapFn
    id: str | None
    output_schema: Any


@dataclass(frozen=True, slots=True)
class _Foreach:
    step: Step
    concurrency: int


_Entry: TypeAlias = _Then | _Parallel | _Branch | _Map | _Foreach


@overload
def create_workflow(
    *,
    id: str,
    input_schema: type[_I],
    output_schema: Any = ...,
    retry: RetryPolicy | None = ...,
    cancel_on_tripwire: bool = ...,
    description: str | None = ...,
) -> WorkflowBuilder[_I, _I]: ...


@overload
def create_workflow(
    *,
    id: str,
    input_schema: Any = ...,
    output_schema: Any = ...,
    retry: RetryPolicy | None = ...,
    cancel_on_tripwire: bool = ...,
    description: str | None = ...,
) -> WorkflowBuilder[Any, Any]: ...


def create_workflow(
    *,
    id: str,
    input_schema: Any = Any,
    output_schema: Any = Any,
    retry: RetryPolicy | None = None,
    cancel_on_tripwire: bool = True,
    description: str | None = None,
) -> WorkflowBuilder[Any, Any]:
    """Start a workflow definition; chain steps on it and finish with ``.commit()``.

    Typed: ``create_workflow(id=..., input_schema=Order)`` is a ``WorkflowBuilder[Order, Order]``; each
    ``.then(step)`` changes the second type to the step's output, and ``.commit()`` returns a
    ``Workflow[Order, <last output>]`` whose ``run`` returns a ``WorkflowResult[<last output>]``.

    Args:
        id: The workflow's id (also its processor id when used as a processor).
        input_schema: What the workflow accepts (``ProcessorStepSchema`` for processor workflows).
        output_schema: What it returns.
        retry: The retry policy of every step that has none of its own.
        cancel_on_tripwire: Whether a tripwire in one parallel branch (or foreach item) cancels the
            siblings still running (default) or lets them finish first.
        description: Shown in pictures.
    """
    return WorkflowBuilder(
        id=id,
        input_schema=input_schema,
        output_schema=output_schema,
        retry=retry,
        cancel_on_tripwire=cancel_on_tripwire,
        description=description,
    )


class WorkflowBuilder(Generic[WfInT, CurT]):
    """A workflow being defined. Each method adds one stage and returns the builder.

    ``WorkflowBuilder[In, Cur]``: the workflow takes an ``In``; the stages so far return a ``Cur``, which
    the next stage receives. Every method returns the same builder, typed with its new ``Cur``.
    """

    def __init__(
        self,
        *,
        id: str,
        input_schema: Any = Any,
        output_schema: Any = Any,
        retry: RetryPolicy | None = None,
        cancel_on_tripwire: bool = True,
        description: str | None = None,
    ) -> None:
        if not isinstance(id, str) or not id:
            raise ConfigurationError("create_workflow() needs a non-empty string id, e.g. id='input-guards'")
        self.id = id
        self.input_schema = input_schema
        self.output_schema = output_schema
        self.retry = retry
        self.cancel_on_tripwire = cancel_on_tripwire
        self.description = description
        self._entries: list[_Entry] = []

    def _step(self, obj: StepLike) -> Step:
        if obj is self:
            raise WorkflowDefinitionError(
                f"workflow {self.id!r} cannot contain itself",
                step_id=self.id,
                fix="nest a different, committed workflow",
            )
        if isinstance(obj, WorkflowBuilder):
            raise WorkflowDefinitionError(
                f"workflow {obj.id!r} is not committed yet",
                step_id=obj.id,
                fix="call .commit() on it first and nest the committed workflow",
            )
        return create_step(obj)  # a Step is returned as it is; a processor is wrapped

    # A step also has the Processor protocol's id: the step overload comes first and wins.
    @overload
    def then(self, step: Step[CurT, _N]) -> WorkflowBuilder[WfInT, _N]: ...  # type: ignore[overload-overlap]

    @overload
    def then(
        self: WorkflowBuilder[WfInT, ProcessorStepSchema], step: Processor
    ) -> WorkflowBuilder[WfInT, ProcessorStepSchema]: ...

    def then(self, step: StepLike) -> WorkflowBuilder[WfInT, Any]:
        """Run ``step`` on the previous step's output."""
        self._entries.append(_Then(self._step(step)))
        return cast("WorkflowBuilder[WfInT, Any]", self)

    def parallel(self, steps: Sequence[StepLike]) -> WorkflowBuilder[WfInT, BranchOutputs]:
        """Run ``steps`` concurrently, each on its own copy of the input.

        The next step receives ``{step_id: output}``; after processor steps, add
        ``.map(select("processor:<id>"))`` or ``.map(merge_branches())``.
        """
        items = tuple(self._step(s) for s in steps)
        if not items:
            raise WorkflowDefinitionError(
                f"workflow {self.id!r}: .parallel([]) has no steps", fix="pass at least one step"
            )
        self._entries.append(_Parallel(items))
        return cast("WorkflowBuilder[WfInT, BranchOutputs]", self)

    @overload
    def branch(
        self, cases: Sequence[tuple[Condition[CurT], Step[CurT, _N]]], *, default: Step[CurT, _N]
    ) -> WorkflowBuilder[WfInT, _N]: ...

    @overload
    def branch(
        self, cases: Sequence[tuple[Condition[CurT], Step[CurT, _N]]], *, default: None = None
    ) -> WorkflowBuilder[WfInT, _N | CurT]: ...

    @overload
    def branch(
        self, cases: Sequence[tuple[Condition[CurT], StepLike]], *, default: StepLike | None = None
    ) -> WorkflowBuilder[WfInT, Any]: ...

    def branch(
        self, cases: Sequence[tuple[Condition[CurT], StepLike]], *, default: StepLike | None = None
    ) -> WorkflowBuilder[WfInT, Any]:
        """Run the step of the first case whose condition holds (conditions are tried in order).

        Only that step runs; the others are recorded as ``skipped``. With no match, ``default`` runs
        if given, otherwise the input passes through unchanged. The next step receives the chosen
        step's output directly.
        """
        pairs = tuple((cond, self._step(step)) for cond, step in cases)
        if not pairs:
            raise WorkflowDefinitionError(
                f"workflow {self.id!r}: .branch([]) has no cases", fix="pass (condition, step) pairs"
            )
        for cond, step in pairs:
            if not callable(cond):
                raise ConfigurationError(
                    f"the condition for step {step.id!r} is not callable; pass a function of the step context"
                )
        self._entries.append(_Branch(pairs, self._step(default) if default is not None else None))
        return cast("WorkflowBuilder[WfInT, Any]", self)

    @overload
    def map(
        self,
        fn: Callable[[StepContext[CurT]], Awaitable[_N]],
        *,
        id: str | None = ...,
        output_schema: Any = ...,
    ) -> WorkflowBuilder[WfInT, _N]: ...

    @overload
    def map(
        self, fn: Callable[[StepContext[CurT]], _N], *, id: str | None = ..., output_schema: Any = ...
    ) -> WorkflowBuilder[WfInT, _N]: ...

    def map(
        self, fn: Callable[[StepContext[CurT]], Any], *, id: str | None = None, output_schema: Any = Any
    ) -> WorkflowBuilder[WfInT, Any]:
        """Turn the previous output into the next input with ``fn`` (or ``select``/``merge_branches``).

        ``fn`` receives the step context: ``input_data``, ``init_data``, ``get_step_result(...)`` and
        ``request_context``. Its id is ``map:<position>`` unless ``id`` is given.
        """
        if not callable(fn):
            raise ConfigurationError(
                ".map() takes a function of the step context, select(...) or merge_branches()"
            )
        self._entries.append(_Map(fn, id, output_schema))
        return cast("WorkflowBuilder[WfInT, Any]", self)

    @overload
    def foreach(
        self: WorkflowBuilder[WfInT, Iterable[_E]], step: Step[_E, _N], *, concurrency: int = ...
    ) -> WorkflowBuilder[WfInT, list[_N]]: ...

    @overload
    def foreach(self, step: StepLike, *, concurrency: int = ...) -> WorkflowBuilder[WfInT, list[Any]]: ...

    def foreach(self, step: StepLike, *, concurrency: int = 1) -> WorkflowBuilder[WfInT, list[Any]]:
        """Run ``step`` on every item of the (list) input, ``concurrency`` at a time; outputs keep order."""
        if not isinstance(concurrency, int) or concurrency < 1:
            raise ConfigurationError(
                f".foreach(concurrency={concurrency!r}): concurrency is a whole number ≥ 1"
            )
        self._entries.append(_Foreach(self._step(step), concurrency))
        return cast("WorkflowBuilder[WfInT, list[Any]]", self)

    def commit(self) -> Workflow[WfInT, CurT]:
        """Compile and validate the definition into an immutable, runnable :class:`Workflow`.

        Raises:
            WorkflowDefinitionError: the definition is invalid; the message names the step and the fix.
        """
        from procflow.workflows._workflow import Workflow

        stages: list[Stage] = []
        nodes: dict[str, PlanNode] = {}
        for position, entry in enumerate(self._entries):
            following = self._entries[position + 1] if position + 1 < len(self._entries) else None
            stage = self._stage(position, entry, following, nodes)
            stages.append(stage)
            for node in stage_nodes(stage):
                nodes.setdefault(node.id, node)
        plan = compile_plan(
            self.id,
            stages,
            input_schema=self.input_schema,
            output_schema=self.output_schema,
            validate_input=make_validator(self.input_schema, self.id),
            retry=self.retry,
            cancel_on_tripwire=self.cancel_on_tripwire,
            description=self.description,
            fuse=ProcessorStep.chain,
        )
        workflow: Workflow[WfInT, CurT] = Workflow(plan)
        return workflow

    def _stage(
        self, position: int, entry: _Entry, following: _Entry | None, nodes: dict[str, PlanNode]
    ) -> Stage:
        retry = self.retry
        if isinstance(entry, _Then):
            return SingleStage(entry.step.to_node(default_retry=retry))
        if isinstance(entry, _Parallel):
            branch_nodes = tuple(step.to_node(default_retry=retry) for step in entry.steps)
            keep = None
            if isinstance(following, _Map) and isinstance(following.fn, Selection):
                ids = [node.id for node in branch_nodes]
                keep = ids.index(following.fn.step_id) if following.fn.step_id in ids else None
            return ParallelStage(f"parallel:{position}", branch_nodes, keep)
        if isinstance(entry, _Branch):
            return _branch_stage(position, entry, retry)
        if isinstance(entry, _Map):
            return SingleStage(_map_node(position, entry, nodes))
        node = entry.step.to_node(default_retry=retry)
        return ForeachStage(replace(node, kind="foreach"), entry.concurrency)


def _name_of(fn: Callable[..., Any]) -> str:
    name = getattr(fn, "__name__", None) or type(fn).__name__
    return "lambda" if name == "<lambda>" else str(name)


def _branch_stage(position: int, entry: _Branch, retry: RetryPolicy | None) -> BranchStage:
    cases = tuple(
        BranchCase(cond, is_async_callable(cond), _name_of(cond), step.to_node(default_retry=retry))
        for cond, step in entry.cases
    )
    default = entry.default.to_node(default_retry=retry) if entry.default is not None else None
    decision = PlanNode(
        id=f"branch:{position}",
        kind="branch",
        call=branch_decision(cases, default),
        label="branch",
    )
    return BranchStage(decision, cases, default)


def _map_node(position: int, entry: _Map, nodes: dict[str, PlanNode]) -> PlanNode:
    fn = entry.fn
    selection: SelectionKind = "function"
    references: tuple[str, ...] = ()
    output_schema = entry.output_schema
    label = _name_of(fn)
    if isinstance(fn, Selection):
        selection, references, label = "select", (fn.step_id,), fn.label
        if fn.step_id in nodes and output_schema is Any:
            output_schema = nodes[fn.step_id].output_schema
    elif isinstance(fn, BranchMerge):
        selection, label, output_schema = "merge", fn.label, ProcessorStepSchema
    return PlanNode(
        id=entry.id or f"map:{position}",
        kind="map",
        call=_map_call(fn),
        output_schema=output_schema,
        label=label,
        selection=selection,
        references=references,
        source=fn,
    )


def _map_call(fn: MapFn) -> Callable[[Any, RunState, PlanNode], Awaitable[Any]]:
    is_async = is_async_callable(fn)

    async def call(value: Any, run: RunState, node: PlanNode) -> Any:
        output = fn(StepContext(value, step_id=node.id, run=run))
        if is_async or inspect.isawaitable(output):
            output = await output
        return output

    return call

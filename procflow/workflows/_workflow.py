"""A committed workflow: runnable, watchable, drawable, nestable; with processor schemas, a processor."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, ClassVar, overload

from procflow._engine.describe import describe_plan
from procflow._engine.executor import execute_plan, run_child
from procflow._engine.graph import is_processor_schema
from procflow._engine.plan import NodeKind, PlanNode, WorkflowPlan
from procflow._engine.records import WorkflowResult
from procflow._engine.retry import RetryPolicy
from procflow._engine.run_state import RunState
from procflow._engine.watch import WorkflowWatch, watch_plan
from procflow._messages.request_context import RequestContext
from procflow.errors import ConfigurationError
from procflow.workflows import _render as render
from procflow.workflows._processor import ProcessorAdapter
from procflow.workflows._processor_data import PHASE_HOOKS, ProcessorPhase, ProcessorStepSchema
from procflow.workflows._steps import InT, OutT, ProcessorInput, Step, coerce_processor_input

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["Workflow"]


class Workflow(ProcessorAdapter, Step[InT, OutT]):
    """A committed workflow (``create_workflow(...)....commit()``): an immutable, validated plan.

    ``Workflow[In, Out]`` takes an ``In``; its :meth:`run` returns a ``WorkflowResult[Out]``. Nested in
    another workflow it is a ``Step[In, Out]``.

    It runs (:meth:`run`, :meth:`run_from`, :meth:`watch`), draws itself (:meth:`to_mermaid`,
    :meth:`to_dot`, :meth:`to_json`, :meth:`to_svg`, :meth:`to_png`), nests as a step of another
    workflow, and — when its input and output schemas are ``ProcessorStepSchema`` — is a processor: put
    it in an agent's ``input_processors`` or ``output_processors``. It then has the hooks of the phases
    its processors implement (the message and stream phases too when it holds plain steps; see
    :class:`~procflow.workflows._processor.ProcessorAdapter`).

    Attributes:
        id: The workflow id (its processor id too).
        plan: The compiled plan.
        is_processor: Whether its schemas make it a processor.
    """

    kind: ClassVar[NodeKind] = "workflow"

    def __init__(self, plan: WorkflowPlan) -> None:
        super().__init__(
            id=plan.id,
            input_schema=plan.input_schema,
            output_schema=plan.output_schema,
            description=plan.description,
        )
        self._validate = None
        self.plan = plan
        self.name = plan.id
        self.is_processor = is_processor_schema(plan.input_schema) and is_processor_schema(plan.output_schema)
        self._adapt(plan, is_processor=self.is_processor)

    @property
    def graph(self) -> nx.DiGraph:
        """The frozen networkx graph of the steps (nodes carry ``kind``, ``stage`` and ``group``)."""
        return self.plan.graph

    def handles(self, phase: ProcessorPhase) -> bool:
        """Whether anything inside runs in a processor ``phase``."""
        return not self.is_processor or getattr(self, PHASE_HOOKS[phase], None) is not None

    def to_node(self, *, default_retry: RetryPolicy | None = None) -> PlanNode:
        """The plan node nesting this workflow (its own steps keep their own retry policies)."""
        return PlanNode(
            id=self.id,
            kind="workflow",
            call=self._call,
            input_schema=self.input_schema,
            output_schema=self.output_schema,
            label=self.id,
            description=self.description,
            subplan=self.plan,
            source=self,
        )

    async def _call(self, value: Any, run: RunState, node: PlanNode) -> Any:
        return await run_child(self.plan, value, run, node.id)

    @overload  # type: ignore[override]  # a workflow run returns its result, not just its output
    async def run(
        self: Workflow[ProcessorStepSchema, OutT],
        input_data: ProcessorInput,
        *,
        request_context: RequestContext | None = ...,
        results: Mapping[str, Any] | None = ...,
        init_data: Any = ...,
        run_id: str | None = ...,
    ) -> WorkflowResult[OutT]: ...

    @overload
    async def run(
        self,
        input_data: InT,
        *,
        request_context: RequestContext | None = ...,
        results: Mapping[str, Any] | None = ...,
        init_data: Any = ...,
        run_id: str | None = ...,
    ) -> WorkflowResult[OutT]: ...

    async def run(
        self,
        input_data: Any,
        *,
        request_context: RequestContext | None = None,
        results: Mapping[str, Any] | None = None,
        init_data: Any = None,
        run_id: str | None = None,
    ) -> WorkflowResult[OutT]:
        """Run the workflow and return its result (status, output, error/tripwire, each step's record).

        A processor workflow also takes a list of messages or strings, as input-phase data.
        Step failures and tripwires do not raise: read ``result.status``.
        """
        if self.is_processor:
            input_data = coerce_processor_input(input_data, request_context)
        return await execute_plan(
            self.plan,
            input_data,
            request_context=request_context,
            run_id=run_id,
            results=results,
            init_data=init_data,
        )

    async def run_from(
        self,
        step_id: str,
        input_data: Any,
        *,
        results: Mapping[str, Any] | None = None,
        request_context: RequestContext | None = None,
        init_data: Any = None,
        run_id: str | None = None,
    ) -> WorkflowResult[OutT]:
        """Start mid-graph: run from the stage holding ``step_id`` with ``input_data`` as its input.

        ``step_id`` may name a step, a parallel block (``parallel:<n>``, or any of its steps: the whole
        block runs) or a branch (its decision is taken again). ``results`` gives earlier steps' outputs,
        for ``select(...)`` and ``ctx.get_step_result(...)``.

        Raises:
            ConfigurationError: ``step_id`` is not a top-level step of this workflow.
        """
        try:
            index = self.plan.stage_index(step_id)
        except KeyError:
            raise ConfigurationError(
                f"workflow {self.id!r} has no top-level step {step_id!r}; start from one of: "
                f"{', '.join(self.plan.nodes)}"
            ) from None
        if self.is_processor:
            input_data = coerce_processor_input(input_data, request_context)
        return await execute_plan(
            self.plan,
            input_data,
            request_context=request_context,
            run_id=run_id,
            start_at=index,
            results=results,
            init_data=init_data,
        )

    def watch(
        self,
        input_data: Any,
        *,
        request_context: RequestContext | None = None,
        run_id: str | None = None,
    ) -> AbstractAsyncContextManager[WorkflowWatch]:
        """Run in the background and iterate over its events::

        async with workflow.watch(data) as run:
            async for event in run:
                print(event.type, event.step_id, event.status)
        print(run.result.status)
        """
        if self.is_processor:
            input_data = coerce_processor_input(input_data, request_context)
        return watch_plan(self.plan, input_data, request_context=request_context, run_id=run_id)

    # -- pictures ------------------------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        """The JSON description every picture is drawn from (see :func:`procflow._engine.describe_plan`)."""
        return describe_plan(self.plan)

    def to_json(self, *, result: WorkflowResult[Any] | None = None, indent: int | None = 2) -> str:
        """The description as JSON text; with ``result``, each step also has its status and duration."""
        return render.to_json(self.describe(), result, indent=indent)

    def to_mermaid(self, *, result: WorkflowResult[Any] | None = None) -> str:
        """A Mermaid flowchart; with ``result``, steps are coloured by status and show their duration."""
        return render.to_mermaid(self.describe(), result)

    def to_dot(self, *, result: WorkflowResult[Any] | None = None) -> str:
        """A Graphviz DOT digraph; with ``result``, steps are coloured by status and show their duration."""
        return render.to_dot(self.describe(), result)

    def to_svg(self, *, result: WorkflowResult[Any] | None = None) -> str:
        """An SVG picture, drawn by Graphviz's ``dot`` program (which must be installed)."""
        return render.run_dot(self.to_dot(result=result), "svg").decode("utf-8")

    def to_png(self, *, result: WorkflowResult[Any] | None = None) -> bytes:
        """A PNG picture, drawn by Graphviz's ``dot`` program (which must be installed)."""
        return render.run_dot(self.to_dot(result=result), "png")

    def __repr__(self) -> str:
        return f"Workflow(id={self.id!r}, steps={list(self.plan.nodes)})"

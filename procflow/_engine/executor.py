"""The executor: runs a plan's stages in order (each stage kind runs itself: :mod:`._stages`).

Statuses: a step ends ``success``, ``failed``, ``tripwire``, ``skipped`` (a branch not taken) or
``canceled`` (a sibling tripped, or the run was cancelled); a run ends ``success``, ``failed``,
``tripwire`` or ``canceled``. A :class:`TripWire` anywhere — a nested workflow, a parallel branch, a
foreach item — ends the run with status ``tripwire`` and, unless the plan says otherwise, cancels the
siblings still running. Failures always cancel them. Cancellation from outside propagates after the run
is recorded as ``canceled``.

Per-step cost is kept small: no events are built unless someone watches, and timing logs are emitted
only when tracing is on (:func:`procflow.set_tracing`).
"""

from __future__ import annotations

from collections.abc import Mapping
from time import perf_counter
from typing import Any

from procflow._engine._stages import SingleStage, branch_decision
from procflow._engine.nodes import run_node
from procflow._engine.plan import PlanNode, WorkflowPlan
from procflow._engine.records import RunStatus, StepRecord, WorkflowEvent, WorkflowResult
from procflow._engine.run_state import EventSink, RunState
from procflow._logging import is_tracing, log
from procflow._messages.request_context import RequestContext
from procflow._messages.tripwire import TripWire

__all__ = ["branch_decision", "execute_plan", "run_child", "run_lean", "run_node", "run_node_alone"]


async def execute_plan(
    plan: WorkflowPlan,
    input_data: Any,
    *,
    request_context: RequestContext | None = None,
    emit: EventSink | None = None,
    run_id: str | None = None,
    start_at: int = 0,
    results: Mapping[str, Any] | None = None,
    init_data: Any = None,
    run: RunState | None = None,
) -> WorkflowResult:
    """Run ``plan`` on ``input_data`` and return its result; never raises for step failures.

    Args:
        plan: The compiled workflow.
        input_data: The first stage's input.
        request_context: The per-request key/value store (a fresh one by default).
        emit: Receives every event (of nested runs too).
        run_id: The run's id (random by default).
        start_at: Index of the first stage to run (``run_from``); earlier stages are not run.
        results: Outputs of earlier steps, as if they had run (for ``run_from``).
        init_data: The run's initial input as steps see it (default: ``input_data``).
        run: A prepared :class:`RunState` (the other keyword arguments are then ignored).

    Raises:
        anyio cancellation: the caller's scope was cancelled (the run is recorded as ``canceled``).
    """
    if run is None:
        run = RunState(
            plan.id,
            init_data=input_data if init_data is None else init_data,
            request_context=request_context,
            emit=emit,
            cancel_on_tripwire=plan.cancel_on_tripwire,
            run_id=run_id,
        )
        for step_id, output in (results or {}).items():
            run.records[step_id] = StepRecord(step_id, "success", output=output)
    return await _execute(plan, input_data, run, start_at)


async def _execute(plan: WorkflowPlan, value: Any, run: RunState, start_at: int) -> WorkflowResult:
    started = perf_counter()
    if run.emit is not None:
        run.emit(WorkflowEvent("workflow-start", plan.id, run.run_id))
    status: RunStatus = "success"
    error: BaseException | None = None
    try:
        if start_at == 0 and plan.validate_input is not None:
            value = plan.validate_input(value)
        for stage in plan.stages if start_at == 0 else plan.stages[start_at:]:
            if type(stage) is SingleStage:
                value = await run_node(stage.node, value, run)
            else:
                value = await stage.run(value, run)
    except TripWire as tripwire:
        status, error = "tripwire", tripwire
    except Exception as exc:
        status, error = "failed", exc
    except BaseException:
        _finish_run(plan, run, "canceled", None, None, started)
        raise
    return _finish_run(plan, run, status, value if status == "success" else None, error, started)


def _finish_run(
    plan: WorkflowPlan,
    run: RunState,
    status: RunStatus,
    output: Any,
    error: BaseException | None,
    started: float,
) -> WorkflowResult:
    result = WorkflowResult(
        workflow_id=plan.id,
        run_id=run.run_id,
        status=status,
        output=output,
        error=error,
        tripwire=error.info() if isinstance(error, TripWire) else None,
        steps=run.records,
        started_at=started,
        ended_at=perf_counter(),
    )
    run.result = result
    if is_tracing():
        log.debug(
            "workflow_finished", workflow_id=plan.id, status=status, duration_ms=round(result.duration_ms, 3)
        )
    if run.emit is not None:
        run.emit(
            WorkflowEvent(
                "workflow-finish",
                plan.id,
                result.run_id,
                status=status,
                duration_ms=result.duration_ms,
                output=output,
                error=error,
            )
        )
    return result


async def run_lean(plan: WorkflowPlan, value: Any, run: RunState) -> Any:
    """Run ``plan`` in a lean run (nothing recorded, no events); return its output or raise its error.

    The same stages run as in :func:`execute_plan` (sequences of processor steps fused); only the per-node
    bookkeeping nobody can observe is left out.
    """
    if plan.validate_input is not None:
        value = plan.validate_input(value)
    for stage in plan.lean_stages or plan.stages:
        value = await stage.run(value, run)
    return value


async def run_child(plan: WorkflowPlan, value: Any, parent: RunState, step_id: str) -> Any:
    """Run a nested workflow for the step ``step_id`` of ``parent``; return its output or raise its error."""
    if parent.lean:
        child_run = RunState(plan.id, request_context=parent.request_context, lean=True)
        return await run_lean(plan, value, child_run)
    child = RunState(
        plan.id,
        init_data=value,
        request_context=parent.request_context,
        emit=parent.emit,
        cancel_on_tripwire=plan.cancel_on_tripwire,
    )
    result = await _execute(plan, value, child, 0)
    parent.children[step_id] = result
    if result.error is not None:
        raise result.error
    return result.output


async def run_node_alone(
    node: PlanNode,
    value: Any,
    *,
    workflow_id: str,
    request_context: RequestContext | None = None,
    results: Mapping[str, Any] | None = None,
    init_data: Any = None,
) -> Any:
    """Run one node outside any workflow (validation and retries included); return its output or raise."""
    run = RunState(
        workflow_id, init_data=value if init_data is None else init_data, request_context=request_context
    )
    for step_id, output in (results or {}).items():
        run.records[step_id] = StepRecord(step_id, "success", output=output)
    return await run_node(node, value, run)

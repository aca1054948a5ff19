"""One JSON description of a plan — the single source every picture (Mermaid, DOT, JSON) is drawn from.

Ordering is stable: steps in definition order, edges in the order the stages connect, so renders can be
snapshot-tested.
"""

from __future__ import annotations

from typing import Any

from procflow._engine._stages import BranchStage, ForeachStage, ParallelStage, stage_nodes
from procflow._engine.graph import START, STOP, stage_edges
from procflow._engine.plan import PlanNode, WorkflowPlan
from procflow._engine.records import StepRecord, WorkflowResult
from procflow._engine.schemas import schema_name

__all__ = ["describe_plan", "describe_run"]


def describe_plan(plan: WorkflowPlan) -> dict[str, Any]:
    """Return the plan as a JSON-ready dict.

    Keys: ``id``, ``description``, ``input_schema``, ``output_schema``, ``retry``,
    ``cancel_on_tripwire``, ``steps`` (each with ``id``, ``kind``, ``label``, schemas, ``retry`` and,
    where they apply, ``processor_id``, ``group``, ``selection``, ``references``, ``concurrency``,
    ``workflow`` — a nested description), ``groups`` (parallel blocks and branches with their step ids)
    and ``edges`` (``source``, ``target``, ``label``; ``__start__`` and ``__end__`` mark the ends).
    """
    steps: list[dict[str, Any]] = []
    groups: list[dict[str, Any]] = []
    edges: list[dict[str, str]] = []
    previous: tuple[str, ...] = (START,)
    for stage in plan.stages:
        group = None
        if isinstance(stage, ParallelStage):
            group = stage.group_id
            groups.append({"id": group, "kind": "parallel", "steps": [n.id for n in stage.nodes]})
        elif isinstance(stage, BranchStage):
            groups.append(
                {
                    "id": stage.node.id,
                    "kind": "branch",
                    "steps": [n.id for n in stage.candidates],
                    "conditions": [case.name for case in stage.cases],
                    "default": stage.default.id if stage.default is not None else None,
                }
            )
        for node in stage_nodes(stage):
            steps.append(_describe_node(node, group, stage))
        connects = stage_edges(stage)
        edges.extend(_edge(source, target, "") for source in previous for target in connects.entries)
        edges.extend(_edge(edge.source, edge.target, edge.label) for edge in connects.inner)
        previous = connects.exits
    edges.extend(_edge(source, STOP, "") for source in previous)
    _label_passthrough(plan, edges)
    return {
        "id": plan.id,
        "description": plan.description,
        "input_schema": schema_name(plan.input_schema),
        "output_schema": schema_name(plan.output_schema),
        "retry": plan.retry.to_dict() if plan.retry is not None else None,
        "cancel_on_tripwire": plan.cancel_on_tripwire,
        "steps": steps,
        "groups": groups,
        "edges": edges,
    }


def _edge(source: str, target: str, label: str) -> dict[str, str]:
    return {"source": source, "target": target, "label": label}


def _label_passthrough(plan: WorkflowPlan, edges: list[dict[str, str]]) -> None:
    deciders = {s.node.id for s in plan.stages if isinstance(s, BranchStage) and s.default is None}
    for edge in edges:
        if edge["source"] in deciders and not edge["label"]:
            edge["label"] = "otherwise"


def _describe_node(node: PlanNode, group: str | None, stage: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": node.id,
        "kind": node.kind,
        "label": node.label or node.id,
        "input_schema": schema_name(node.input_schema),
        "output_schema": schema_name(node.output_schema),
        "retry": node.retry.to_dict() if node.retry is not None else None,
    }
    if node.description:
        out["description"] = node.description
    if node.processor is not None:
        out["processor_id"] = getattr(node.processor, "id", None)
    if group is not None:
        out["group"] = group
    if node.selection is not None:
        out["selection"] = node.selection
    if node.references:
        out["references"] = list(node.references)
    if isinstance(stage, ForeachStage):
        out["concurrency"] = stage.concurrency
    if node.subplan is not None:
        out["workflow"] = describe_plan(node.subplan)
    return out


def describe_run(result: WorkflowResult) -> dict[str, dict[str, Any]]:
    """Each step's ``status``, ``duration_ms`` and ``attempts`` by step id, nested runs included.

    A nested workflow's steps appear under ``"<nesting step id>/<inner step id>"``.
    """
    out: dict[str, dict[str, Any]] = {}
    _collect(result.steps, "", out)
    return out


def _collect(records: dict[str, StepRecord], prefix: str, out: dict[str, dict[str, Any]]) -> None:
    for step_id, record in records.items():
        out[prefix + step_id] = {
            "status": record.status,
            "duration_ms": round(record.duration_ms, 3),
            "attempts": record.attempts,
        }
        if record.nested is not None:
            _collect(record.nested.steps, f"{prefix}{step_id}/", out)

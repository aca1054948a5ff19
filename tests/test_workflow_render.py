"""Pictures: the JSON description, Mermaid and DOT snapshots, run overlays, SVG/PNG through dot."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from workflow_support import moderation_pipeline

from procflow.errors import ConfigurationError
from procflow.workflows import RetryPolicy, StepContext, Workflow, create_step, create_workflow
from procflow.workflows._render import find_dot

SNAPSHOTS = Path(__file__).parent / "snapshots"


def _matches_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("PROCFLOW_UPDATE_SNAPSHOTS") == "1":
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no snapshot {name}; run with PROCFLOW_UPDATE_SNAPSHOTS=1 to write it"
    assert text == path.read_text(encoding="utf-8"), f"{name} changed; review and update the snapshot"


def _is_bulk(ctx: StepContext[list[int]]) -> bool:
    return len(ctx.input_data) > 3


def _order_workflow() -> Workflow:
    def step(step_id: str, **kwargs: Any) -> Any:
        return create_step(id=step_id, execute=lambda ctx: ctx.input_data, **kwargs)

    inner = create_workflow(id="pricing", description="nested").then(step("price")).then(step("tax")).commit()
    return (
        create_workflow(id="orders", input_schema=list[int], retry=RetryPolicy(attempts=2))
        .then(step("load", input_schema=list[int], output_schema=list[int]))
        .branch([(_is_bulk, step("bulk")), (lambda ctx: True, step("single"))], default=step("none"))
        .foreach(step("check"), concurrency=3)
        .parallel([inner, step("audit", retry=RetryPolicy(attempts=5))])
        .map(lambda ctx: ctx.input_data["pricing"], id="pick-price")
        .commit()
    )


def test_moderation_pipeline_mermaid_snapshot() -> None:
    """The seed's pipeline renders to the reviewed Mermaid flowchart."""
    _matches_snapshot("moderation_pipeline.mmd", moderation_pipeline().to_mermaid())


def test_moderation_pipeline_dot_snapshot() -> None:
    """The seed's pipeline renders to the reviewed DOT digraph."""
    _matches_snapshot("moderation_pipeline.dot", moderation_pipeline().to_dot())


def test_moderation_pipeline_json_snapshot() -> None:
    """The JSON description lists steps, kinds, schemas, groups and edges in a stable order."""
    text = moderation_pipeline().to_json()
    _matches_snapshot("moderation_pipeline.json", text)
    described = json.loads(text)
    assert [s["id"] for s in described["steps"]] == [
        "processor:pii-detector",
        "processor:prompt-injection-detector",
        "processor:moderation",
        "map:1",
    ]
    assert described["groups"][0]["kind"] == "parallel"


def test_every_construct_renders_stably() -> None:
    """Branches (condition names), foreach, nested workflows and retries render to stable snapshots."""
    workflow = _order_workflow()
    _matches_snapshot("order_workflow.mmd", workflow.to_mermaid())
    _matches_snapshot("order_workflow.dot", workflow.to_dot())
    assert workflow.to_mermaid() == _order_workflow().to_mermaid()
    described = workflow.describe()
    branch = next(g for g in described["groups"] if g["kind"] == "branch")
    assert branch["conditions"] == ["_is_bulk", "lambda"]
    audit = next(s for s in described["steps"] if s["id"] == "audit")
    assert audit["retry"]["attempts"] == 5
    assert next(s for s in described["steps"] if s["id"] == "check")["concurrency"] == 3


async def test_a_finished_run_renders_with_statuses() -> None:
    """A run overlay colours steps by status and lists their durations."""
    workflow = moderation_pipeline()
    result = await workflow.run(["this is hateful"])
    mermaid = workflow.to_mermaid(result=result)
    assert "classDef tripwire" in mermaid
    assert "class n2 tripwire" in mermaid
    assert "class n0,n1 success" in mermaid
    assert " ms" in mermaid
    dot = workflow.to_dot(result=result)
    assert 'fillcolor="#fff3cd"' in dot
    run = json.loads(workflow.to_json(result=result))["run"]
    assert run["status"] == "tripwire"
    assert run["steps"]["processor:moderation"]["status"] == "tripwire"


async def test_nested_run_statuses_are_drawn_inside_the_subgraph() -> None:
    """Steps of a nested workflow get their status from the nested run's records."""
    workflow = _order_workflow()
    result = await workflow.run([1, 2])
    assert result.status == "success"
    run = json.loads(workflow.to_json(result=result))["run"]["steps"]
    assert run["pricing/price"]["status"] == "success"
    assert run["bulk"]["status"] == "skipped"


def test_svg_and_png_through_dot() -> None:
    """to_svg and to_png call Graphviz's dot program."""
    workflow = moderation_pipeline()
    assert "<svg" in workflow.to_svg()
    assert workflow.to_png().startswith(b"\x89PNG")


def test_missing_dot_names_the_package(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Without any Graphviz program the error names the wheel and the system package."""
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("PROCFLOW_DOT", "")
    with pytest.raises(ConfigurationError, match=r"pip install graphviz-pure.*'graphviz' package"):
        moderation_pipeline().to_svg()


def test_without_system_graphviz_the_wheel_draws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """With no `dot` on PATH, pictures come from the graphviz-pure wheel's program."""
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("PROCFLOW_DOT", raising=False)
    program = find_dot()
    assert program is not None and Path(program).name == "graphviz-pure"
    assert "<svg" in moderation_pipeline().to_svg()

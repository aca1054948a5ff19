"""``procflow graph``: Mermaid, DOT, JSON, SVG and PNG pictures of pipelines (in-process)."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from cli_support import PIPELINES, WORKFLOWS, procflow

NO_GRAPHVIZ = {"PATH": str(Path(sys.executable).parent), "PROCFLOW_DOT": ""}


def _is_svg(text: str) -> bool:
    return ET.fromstring(text.encode("utf-8")).tag == "{http://www.w3.org/2000/svg}svg"


def test_a_list_of_processors_is_drawn_as_its_sequential_workflow() -> None:
    """The Mermaid picture of a list shows start → each processor step in order → end."""
    done = procflow("graph", f"{PIPELINES}:pipeline")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "flowchart TD\n"
        '    __start__(["start"])\n'
        '    n0["processor:email-redactor"]\n'
        '    n1["processor:blocker"]\n'
        '    __end__(["end"])\n'
        "    __start__ --> n0\n"
        "    n0 --> n1\n"
        "    n1 --> __end__\n"
    )


def test_dot_and_json_describe_the_same_steps() -> None:
    """DOT and JSON name every step of a workflow with a parallel block."""
    dot = procflow("graph", f"{WORKFLOWS}:guards", "--format", "dot").stdout
    data = json.loads(procflow("graph", f"{WORKFLOWS}:guards", "-f", "json").stdout)
    steps = [step["id"] for step in data["steps"]]
    assert steps == ["processor:shouting", "processor:email-redactor", "processor:blocker", "map:2"]
    assert dot.startswith('digraph "guards" {')
    assert all(f'"{step}"' in dot for step in steps)


def test_an_agent_is_drawn_as_input_model_output() -> None:
    """An agent's picture nests its input side, then the model, then its output side."""
    data = json.loads(procflow("graph", f"{WORKFLOWS}:agent", "-f", "json").stdout)
    assert [(s["id"], s["kind"]) for s in data["steps"]] == [
        ("input", "workflow"),
        ("model:nowhere/model-x", "step"),
        ("output", "workflow"),
    ]
    mermaid = procflow("graph", f"{WORKFLOWS}:agent").stdout
    assert 'subgraph c0 ["input"]' in mermaid
    assert mermaid.count('"processor:email-redactor"') == 2


def test_svg_and_png_are_drawn_with_graphviz(tmp_path: Path) -> None:
    """With Graphviz installed, --format svg gives a valid SVG and png a PNG file."""
    svg = procflow("graph", f"{WORKFLOWS}:guards", "--format", "svg")
    assert svg.returncode == 0, svg.stderr
    assert _is_svg(svg.stdout)
    png = tmp_path / "pictures" / "guards.png"
    assert procflow("graph", f"{WORKFLOWS}:guards", "-f", "png", "-o", png).returncode == 0
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_without_graphviz_svg_falls_back_to_mermaid_text() -> None:
    """Without `dot` on the PATH, asking for SVG prints Mermaid text and a warning saying why."""
    done = procflow("graph", f"{WORKFLOWS}:guards", "--format", "svg", env=NO_GRAPHVIZ)
    assert done.returncode == 0
    assert done.stdout.startswith("flowchart TD\n")
    assert "dot program is not installed" in done.stderr


def test_without_graphviz_an_svg_file_becomes_a_mermaid_file(tmp_path: Path) -> None:
    """-o picture.svg without Graphviz writes picture.mmd instead and says so."""
    done = procflow(
        "graph", f"{WORKFLOWS}:guards", "-f", "svg", "-o", tmp_path / "picture.svg", env=NO_GRAPHVIZ
    )
    assert done.returncode == 0
    assert not (tmp_path / "picture.svg").exists()
    assert (tmp_path / "picture.mmd").read_text(encoding="utf-8").startswith("flowchart TD\n")
    assert "picture.mmd" in done.stderr


def test_a_workflow_that_does_not_compile_is_reported_with_its_fix() -> None:
    """A definition error names the step and the fix, with exit status 2."""
    done = procflow("graph", f"{WORKFLOWS}:unselected")
    assert done.returncode == 2
    assert "parallel block" in done.stderr
    assert "merge_branches()" in done.stderr


def test_a_failing_graphviz_is_exit_1() -> None:
    """When the Graphviz program fails, no picture is drawn: exit 1 with the reason."""
    done = procflow("graph", f"{WORKFLOWS}:guards", "-f", "svg", env={"PROCFLOW_DOT": "false"})
    assert done.returncode == 1
    assert done.stderr.startswith("error: ")


def test_an_unwritable_picture_file_is_exit_1(tmp_path: Path) -> None:
    """-o under a regular file cannot be written: exit 1 naming the file, no traceback."""
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    done = procflow("graph", f"{WORKFLOWS}:guards", "-o", tmp_path / "a-file" / "g.mmd")
    assert done.returncode == 1
    assert f"cannot write {str(tmp_path / 'a-file' / 'g.mmd')!r}" in done.stderr


def test_an_empty_list_has_nothing_to_draw() -> None:
    """An empty list of processors is a usage error that says what to add."""
    done = procflow("graph", f"{PIPELINES}:empty")
    assert done.returncode == 2
    assert "pipeline 'empty' has no processors to draw" in done.stderr


def test_a_single_processor_is_drawn_as_a_one_step_workflow(tmp_path: Path) -> None:
    """One processor is a workflow named after it with one step; -o writes the text to a file."""
    out = tmp_path / "pictures" / "shouting.mmd"
    done = procflow("graph", f"{PIPELINES}:shouting", "-o", out)
    assert done.returncode == 0
    assert '    n0["processor:shouting"]\n' in out.read_text(encoding="utf-8")
    data = json.loads(procflow("graph", f"{PIPELINES}:shouting", "-f", "json").stdout)
    assert data["id"] == "shouting"

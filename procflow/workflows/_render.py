"""Pictures of a workflow, all drawn from its one JSON description: Mermaid, Graphviz DOT, JSON, SVG/PNG.

Output is deterministic (steps in definition order, edges in stage order) so renders can be snapshot
tested. Parallel blocks and nested workflows are drawn as subgraphs. With a run's result, each step
is coloured by its status and labelled with its duration.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from procflow._engine.describe import describe_run
from procflow._engine.graph import START, STOP, Edge
from procflow._engine.records import WorkflowResult
from procflow.errors import ConfigurationError, ProcflowError

__all__ = ["run_dot", "to_dot", "to_json", "to_mermaid"]

_COLOURS = {
    "success": ("#d4edda", "#28a745"),
    "failed": ("#f8d7da", "#dc3545"),
    "tripwire": ("#fff3cd", "#fd7e14"),
    "skipped": ("#eeeeee", "#999999"),
    "canceled": ("#e2e3e5", "#6c757d"),
}


@dataclass(slots=True)
class _Node:
    key: str
    kind: str
    label: str


@dataclass(slots=True)
class _Cluster:
    key: str
    label: str
    kind: str
    items: list[_Node | _Cluster] = field(default_factory=list)


@dataclass(slots=True)
class _Layout:
    items: list[_Node | _Cluster] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    entries: list[str] = field(default_factory=list)
    exits: list[str] = field(default_factory=list)


def _label(step: dict[str, Any]) -> str:
    kind, step_id, label = step["kind"], step["id"], step["label"]
    if kind == "map" and label != step_id:
        return f"{step_id}: {label}"
    if kind == "foreach":
        return f"foreach {step_id} ×{step.get('concurrency', 1)}"
    return str(step_id)


def _layout(desc: dict[str, Any], prefix: str = "") -> _Layout:
    out = _Layout()
    ends: dict[str, tuple[list[str], list[str]]] = {}
    clusters: dict[str, _Cluster] = {}
    nested_edges: dict[str, list[Edge]] = {}
    for step in desc["steps"]:
        key = prefix + step["id"]
        item: _Node | _Cluster
        if "workflow" in step:
            inner = _layout(step["workflow"], key + "/")
            item = _Cluster(key, step["id"], "workflow", inner.items)
            nested_edges[step["id"]] = inner.edges
            ends[step["id"]] = (inner.entries, inner.exits)
        else:
            item = _Node(key, step["kind"], _label(step))
            ends[step["id"]] = ([key], [key])
        group = step.get("group")
        if group is None:
            out.items.append(item)
            continue
        if group not in clusters:
            clusters[group] = _Cluster(prefix + group, group, "parallel")
            out.items.append(clusters[group])
        clusters[group].items.append(item)
    for edge in desc["edges"]:
        sources = [START] if edge["source"] == START else ends[edge["source"]][1]
        targets = [STOP] if edge["target"] == STOP else ends[edge["target"]][0]
        for source in sources:
            for target in targets:
                if source == START:
                    out.entries.append(target)
                elif target == STOP:
                    out.exits.append(source)
                else:
                    out.edges.append(Edge(source, target, edge["label"]))
        out.edges.extend(nested_edges.pop(edge["target"], ()))
    return out


def _status_text(run: dict[str, dict[str, Any]], key: str) -> str:
    info = run.get(key)
    if info is None:
        return ""
    if info["status"] == "skipped" or not info["duration_ms"]:
        return str(info["status"])
    return f"{info['status']} · {info['duration_ms']:.2f} ms"


# -- Mermaid -----------------------------------------------------------------------------------------

_MERMAID_SHAPES = {
    "processor": ('["', '"]'),
    "step": ('("', '")'),
    "map": ('[/"', '"/]'),
    "branch": ('{"', '"}'),
    "foreach": ('[["', '"]]'),
    "workflow": ('[["', '"]]'),
}


def _mermaid_text(text: str) -> str:
    return text.replace("&", "#amp;").replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")


def to_mermaid(desc: dict[str, Any], result: WorkflowResult | None = None) -> str:
    """Render a workflow description as a Mermaid ``flowchart``."""
    layout = _layout(desc)
    run = describe_run(result) if result is not None else {}
    ids: dict[str, str] = {START: "__start__", STOP: "__end__"}
    lines = ["flowchart TD", '    __start__(["start"])']
    classes: dict[str, list[str]] = {}
    counters = {"node": 0, "cluster": 0}

    def emit(items: list[_Node | _Cluster], depth: int) -> None:
        pad = "    " * depth
        for item in items:
            if isinstance(item, _Cluster):
                cid = f"c{counters['cluster']}"
                counters["cluster"] += 1
                lines.append(f'{pad}subgraph {cid} ["{_mermaid_text(item.label)}"]')
                emit(item.items, depth + 1)
                lines.append(f"{pad}end")
                continue
            nid = ids[item.key] = f"n{counters['node']}"
            counters["node"] += 1
            status = _status_text(run, item.key)
            text = _mermaid_text(item.label) + (f"<br/>{status}" if status else "")
            left, right = _MERMAID_SHAPES.get(item.kind, ('["', '"]'))
            lines.append(f"{pad}{nid}{left}{text}{right}")
            if item.key in run:
                classes.setdefault(run[item.key]["status"], []).append(nid)

    emit(layout.items, 1)
    lines.append('    __end__(["end"])')
    for target in layout.entries:
        lines.append(f"    __start__ --> {ids[target]}")
    for source, target, label in layout.edges:
        arrow = f"-->|{_mermaid_text(label)}|" if label else "-->"
        lines.append(f"    {ids[source]} {arrow} {ids[target]}")
    for source in layout.exits:
        lines.append(f"    {ids[source]} --> __end__")
    for status, (fill, stroke) in _COLOURS.items():
        if status in classes:
            dash = ",stroke-dasharray: 4 4" if status in ("skipped", "canceled") else ""
            lines.append(f"    classDef {status} fill:{fill},stroke:{stroke}{dash}")
            lines.append(f"    class {','.join(classes[status])} {status}")
    return "\n".join(lines) + "\n"


# -- Graphviz DOT ------------------------------------------------------------------------------------

_DOT_SHAPES = {
    "processor": "box",
    "step": "box, style=rounded",
    "map": "parallelogram",
    "branch": "diamond",
    "foreach": "box3d",
}


def _dot_text(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(desc: dict[str, Any], result: WorkflowResult | None = None) -> str:
    """Render a workflow description as a Graphviz ``digraph``."""
    layout = _layout(desc)
    run = describe_run(result) if result is not None else {}
    lines = [
        f"digraph {_dot_text(desc['id'])} {{",
        "    rankdir=TB;",
        '    node [fontname="Helvetica", fontsize=11];',
        '    edge [fontname="Helvetica", fontsize=10];',
        f'    {_dot_text(START)} [label="start", shape=circle];',
    ]

    def emit(items: list[_Node | _Cluster], depth: int) -> None:
        pad = "    " * depth
        for item in items:
            if isinstance(item, _Cluster):
                lines.append(f"{pad}subgraph {_dot_text('cluster_' + item.key)} {{")
                style = "dashed" if item.kind == "parallel" else "rounded"
                lines.append(f"{pad}    label={_dot_text(item.label)};")
                lines.append(f"{pad}    style={style};")
                emit(item.items, depth + 1)
                lines.append(f"{pad}}}")
                continue
            status = _status_text(run, item.key)
            attrs = f"label={_dot_text(item.label + (chr(10) + status if status else ''))}, "
            attrs += f"shape={_DOT_SHAPES.get(item.kind, 'box')}"
            if item.key in run:
                fill, stroke = _COLOURS[run[item.key]["status"]]
                filled = "rounded,filled" if item.kind == "step" else "filled"
                attrs = attrs.replace(", style=rounded", "")
                attrs += f', style="{filled}", fillcolor="{fill}", color="{stroke}"'
            lines.append(f"{pad}{_dot_text(item.key)} [{attrs}];")

    emit(layout.items, 1)
    lines.append(f'    {_dot_text(STOP)} [label="end", shape=doublecircle];')
    for target in layout.entries:
        lines.append(f"    {_dot_text(START)} -> {_dot_text(target)};")
    for source, target, label in layout.edges:
        suffix = f" [label={_dot_text(label)}]" if label else ""
        lines.append(f"    {_dot_text(source)} -> {_dot_text(target)}{suffix};")
    for source in layout.exits:
        lines.append(f"    {_dot_text(source)} -> {_dot_text(STOP)};")
    lines.append("}")
    return "\n".join(lines) + "\n"


# -- JSON, SVG, PNG ----------------------------------------------------------------------------------


def to_json(desc: dict[str, Any], result: WorkflowResult | None = None, *, indent: int | None = 2) -> str:
    """The description as JSON; with ``result``, a ``run`` key holds its status and each step's."""
    data = dict(desc)
    if result is not None:
        data["run"] = {"status": result.status, "steps": describe_run(result)}
    return json.dumps(data, indent=indent, ensure_ascii=False)


def find_dot() -> str | None:
    """The Graphviz program used for SVG/PNG: ``dot`` on PATH, else the ``graphviz-pure`` wheel's.

    The order is: the program named by the ``PROCFLOW_DOT`` environment variable when it is set (an
    empty value means "none": pictures fall back or fail as without Graphviz), then a ``dot`` found on
    ``PATH`` (a system Graphviz), then ``graphviz-pure`` in this interpreter's scripts directory (the
    wheel the ``dev`` extra installs: Graphviz's ``dot`` command line ported to Rust), then
    ``graphviz-pure`` on ``PATH``. ``None`` when there is none of them.
    """
    chosen = os.environ.get("PROCFLOW_DOT")
    if chosen is not None:
        return shutil.which(chosen) if chosen else None
    program = shutil.which("dot")
    if program is not None:
        return program
    scripts = Path(sysconfig.get_path("scripts"))
    for folder in (scripts, Path(sys.executable).parent):
        candidate = folder / "graphviz-pure"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("graphviz-pure")


def run_dot(source: str, fmt: str, *, timeout: float = 30.0) -> bytes:
    """Render DOT ``source`` to ``fmt`` (``svg``, ``png``…) with Graphviz (see :func:`find_dot`).

    Raises:
        ConfigurationError: neither ``dot`` nor ``graphviz-pure`` is installed.
        ProcflowError: the program failed.
    """
    program = find_dot()
    if program is None:
        raise ConfigurationError(
            "Graphviz's 'dot' program is needed to draw SVG/PNG pictures but is not installed; "
            "`pip install graphviz-pure` (a wheel with the dot command line), or install the 'graphviz' "
            "package (apt install graphviz, brew install graphviz), or use to_mermaid()/to_dot(), which "
            "need nothing"
        )
    done = subprocess.run(
        [program, f"-T{fmt}"], input=source.encode("utf-8"), capture_output=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        raise ProcflowError(f"dot -T{fmt} failed: {done.stderr.decode('utf-8', 'replace').strip()}")
    return done.stdout

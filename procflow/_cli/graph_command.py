"""``procflow graph``: draw a pipeline as Mermaid, Graphviz DOT, JSON, SVG or PNG."""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from procflow._cli.console import EXIT_FAILED, EXIT_OK, EXIT_USAGE, fail, warn
from procflow.errors import ProcflowError, WorkflowDefinitionError

if TYPE_CHECKING:
    from rich.console import Console

    from procflow._cli.loading import LoadedPipeline

__all__ = ["add_parser", "compile_pipeline", "describe_pipeline", "run"]

FORMATS = ("mermaid", "dot", "json", "svg", "png")


def add_parser(subparsers: Any) -> None:
    """Register ``procflow graph``."""
    parser = subparsers.add_parser(
        "graph",
        help="draw a pipeline (Mermaid, DOT, JSON; SVG/PNG with Graphviz)",
        description=(
            "Draw a pipeline. A list of processors is drawn as the sequential workflow it runs as; an "
            "agent as its input processors, the model, then its output processors. SVG and PNG need "
            "Graphviz's dot program; without it, Mermaid text is written instead (with a warning)."
        ),
    )
    parser.add_argument(
        "pipeline", nargs="?", help="FILE.py:NAME or MODULE:NAME (default: the bundled guard)"
    )
    parser.add_argument(
        "-f", "--format", choices=FORMATS, default="mermaid", help="picture format (default: mermaid)"
    )
    parser.add_argument("-o", "--output", help="write to FILE instead of stdout")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    """Run the ``procflow graph`` command; return the exit code."""
    from procflow._cli.loading import load_pipeline
    from procflow.workflows._render import find_dot

    try:
        pipeline = load_pipeline(args.pipeline)
        description = describe_pipeline(pipeline)
    except ProcflowError as exc:  # PipelineLoadError, WorkflowDefinitionError
        return fail(console, str(exc), code=EXIT_USAGE)
    fmt: str = args.format
    output = Path(args.output) if args.output else None
    if fmt in ("svg", "png") and find_dot() is None:
        fmt = "mermaid"
        if output is not None:
            output = output.with_suffix(".mmd")
        where = f"to {output}" if output is not None else "instead"
        warn(
            console,
            f"Graphviz's dot program is not installed, so no {args.format.upper()} can be drawn; writing "
            f"Mermaid text {where} (`pip install graphviz-pure`, or the graphviz package, for SVG/PNG)",
        )
    try:
        picture = _render(description, fmt)
    except ProcflowError as exc:
        return fail(console, str(exc), code=EXIT_FAILED)
    if output is None:
        return _to_stdout(console, picture)
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(picture, bytes):
            output.write_bytes(picture)
        else:
            output.write_text(picture if picture.endswith("\n") else picture + "\n", encoding="utf-8")
    except OSError as exc:
        return fail(console, f"cannot write {str(output)!r}: {exc.strerror or type(exc).__name__}")
    return EXIT_OK


def _render(description: dict[str, Any], fmt: str) -> str | bytes:
    from procflow.workflows import _render as render

    if fmt == "mermaid":
        return render.to_mermaid(description)
    if fmt == "json":
        return render.to_json(description)
    dot = render.to_dot(description)
    if fmt == "dot":
        return dot
    picture = render.run_dot(dot, fmt)
    return picture.decode("utf-8") if fmt == "svg" else picture


def _to_stdout(console: Console, picture: str | bytes) -> int:
    if isinstance(picture, bytes):
        if sys.stdout.isatty():
            return fail(console, "a PNG is binary; write it to a file with -o FILE.png", code=EXIT_USAGE)
        sys.stdout.buffer.write(picture)
        sys.stdout.buffer.flush()
        return EXIT_OK
    sys.stdout.write(picture if picture.endswith("\n") else picture + "\n")
    sys.stdout.flush()
    return EXIT_OK


def compile_pipeline(pipeline: LoadedPipeline) -> list[Any]:
    """The workflows a pipeline runs as: itself, a sequence of its processors, or an agent's two sides.

    Raises:
        WorkflowDefinitionError: the pipeline cannot be compiled (the message says how to fix it).
    """
    if pipeline.kind == "workflow":
        return [pipeline.target]
    name = _name_of(pipeline)
    if pipeline.kind != "agent":
        return [_sequence(name, pipeline.input_processors)]
    sides = [("input", pipeline.input_processors), ("output", pipeline.output_processors)]
    return [_sequence(f"{name}:{side}", processors) for side, processors in sides if processors]


def describe_pipeline(pipeline: LoadedPipeline) -> dict[str, Any]:
    """The JSON description a pipeline is drawn from (an agent: input side, the model, output side)."""
    workflows = compile_pipeline(pipeline)
    if pipeline.kind != "agent":
        description: dict[str, Any] = workflows[0].describe()
        return description
    model = getattr(pipeline.target.model, "model_id", pipeline.target.model)
    steps: list[dict[str, Any]] = []
    sides = iter(workflows)
    for side, processors in (("input", pipeline.input_processors), ("output", pipeline.output_processors)):
        if side == "output":
            steps.append({"id": f"model:{model}", "kind": "step", "label": f"model:{model}"})
        if processors:
            steps.append({"id": side, "kind": "workflow", "label": side, "workflow": next(sides).describe()})
    ids = ["__start__", *(step["id"] for step in steps), "__end__"]
    return {
        "id": pipeline.target.id,
        "description": f"agent {pipeline.target.id!r}: input processors, the model, output processors",
        "steps": steps,
        "groups": [],
        "edges": [{"source": a, "target": b, "label": ""} for a, b in itertools.pairwise(ids)],
    }


def _sequence(name: str, processors: tuple[Any, ...]) -> Any:
    from procflow.workflows import ProcessorStepSchema, create_workflow

    if not processors:
        raise WorkflowDefinitionError(
            f"pipeline {name!r} has no processors to draw", fix="add at least one processor to the list"
        )
    builder = create_workflow(id=name, input_schema=ProcessorStepSchema, output_schema=ProcessorStepSchema)
    for processor in processors:
        builder.then(processor)
    return builder.commit()


def _name_of(pipeline: LoadedPipeline) -> str:
    if pipeline.kind == "agent":
        return str(pipeline.target.id)
    if pipeline.kind == "processor":
        return str(pipeline.target.id)
    tail = pipeline.reference.rpartition(":")[2] or "pipeline"
    return "default-guard" if tail == "default_pipeline" else tail

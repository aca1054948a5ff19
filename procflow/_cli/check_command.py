"""``procflow check``: build and validate a pipeline, and print each problem with its fix."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from procflow._cli.console import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from procflow.errors import ConfigurationError, WorkflowDefinitionError

if TYPE_CHECKING:
    from rich.console import Console

    from procflow._cli.loading import LoadedPipeline, PipelineLoadError

__all__ = ["Problem", "add_parser", "find_problems", "run"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One finding: ``error`` makes the check fail, ``warning`` does not."""

    level: Literal["error", "warning"]
    what: str
    fix: str | None = None


def add_parser(subparsers: Any) -> None:
    """Register ``procflow check``."""
    parser = subparsers.add_parser(
        "check",
        help="build and validate a pipeline; print each problem with its fix",
        description=(
            "Import the pipeline, build its processor chains and compile it as a workflow (the checks "
            "of .commit(): duplicate ids, schema mismatches, parallel blocks without a selection, …). "
            "Prints the processors with their hooks, then each problem with how to fix it. Exit code 1 "
            "when there is an error, 2 when the reference cannot be resolved, 0 otherwise (warnings "
            "included)."
        ),
    )
    parser.add_argument(
        "pipeline", nargs="?", help="FILE.py:NAME or MODULE:NAME (default: the bundled guard)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    """Run the ``procflow check`` command; return the exit code."""
    from rich.console import Console
    from rich.markup import escape

    from procflow._cli.loading import PipelineLoadError, load_pipeline

    out = Console(highlight=False, soft_wrap=True, emoji=False)
    reference = escape(args.pipeline or "the bundled guard")
    try:
        pipeline = load_pipeline(args.pipeline)
    except PipelineLoadError as exc:
        _print_problems(out, [_load_problem(exc)])
        out.print(f"[red]✗[/] {reference}: 1 error")
        # A definition error found while importing (a workflow that cannot compile, an agent refusing
        # its processors) is what check looks for; a reference that cannot be resolved is a usage
        # error, as in every other command.
        definition = isinstance(exc.__cause__, WorkflowDefinitionError | ConfigurationError)
        return EXIT_FAILED if definition else EXIT_USAGE
    out.print(f"{reference}: {escape(_describe(pipeline))}")
    for line in _processor_lines(pipeline):
        out.print(line, markup=False)
    problems = find_problems(pipeline)
    _print_problems(out, problems)
    errors = sum(1 for p in problems if p.level == "error")
    warnings = len(problems) - errors
    if errors:
        out.print(f"[red]✗[/] {reference}: {errors} error(s), {warnings} warning(s)")
        return EXIT_FAILED
    out.print(f"[green]✓[/] {reference}: no errors" + (f", {warnings} warning(s)" if warnings else ""))
    return EXIT_OK


def find_problems(pipeline: LoadedPipeline) -> list[Problem]:
    """Every problem of a loaded pipeline, errors first."""
    from procflow._cli.graph_command import compile_pipeline
    from procflow._cli.processing import RUN_HOOKS
    from procflow._runner.pipeline import ProcessorPipeline

    problems: list[Problem] = []
    try:
        compile_pipeline(pipeline)
    except WorkflowDefinitionError as exc:
        problems.append(Problem("error", _without_fix(exc), exc.fix))
    else:
        chains = {"input": pipeline.input_processors, "output": pipeline.output_processors}
        if pipeline.kind != "agent":
            chains = {"the": pipeline.input_processors}
        for label, processors in chains.items():
            try:
                ProcessorPipeline.build(list(processors))
            except ConfigurationError as exc:
                problems.append(Problem("error", f"{label} processors: {exc}"))
    if pipeline.kind == "agent":
        problems.extend(_model_problems(pipeline.target))
    for processor in pipeline.processors:
        if not any(callable(getattr(processor, hook, None)) for hook in RUN_HOOKS):
            problems.append(
                Problem(
                    "warning",
                    f"processor {processor.id!r} has neither process_input nor process_output_result, so "
                    "`procflow run` leaves stored conversations unchanged by it (it still works in an agent)",
                )
            )
    return sorted(problems, key=lambda p: p.level != "error")


def _model_problems(agent: Any) -> list[Problem]:
    model = agent.model
    if not isinstance(model, str):
        return []
    from procflow.models import resolve_model

    try:
        resolve_model(model)
    except ConfigurationError as exc:
        return [
            Problem(
                "warning",
                f"the agent's model {model!r} cannot be used here: {exc}",
                "Use a model id the providers know (docs/concepts/models.md) and set the API key variable "
                "it names, or try the pipeline offline: procflow chat -p PIPELINE --model scripted",
            )
        ]
    return []


def _load_problem(exc: PipelineLoadError) -> Problem:
    cause = exc.__cause__
    if isinstance(cause, WorkflowDefinitionError):
        return Problem("error", f"{exc.problem.split(' raised ')[0]}: {_without_fix(cause)}", cause.fix)
    return Problem("error", exc.problem, exc.fix)


def _without_fix(exc: WorkflowDefinitionError) -> str:
    text = str(exc)
    return text.split(". Fix: ")[0] if exc.fix else text


def _describe(pipeline: LoadedPipeline) -> str:
    count = len(pipeline.processors)
    if pipeline.kind == "workflow":
        return f"workflow {pipeline.target.id!r} ({len(pipeline.target.plan.nodes)} steps)"
    if pipeline.kind == "agent":
        return (
            f"agent {pipeline.target.id!r} ({len(pipeline.input_processors)} input, "
            f"{len(pipeline.output_processors)} output processors)"
        )
    return f"{count} processor{'s' if count != 1 else ''}, run in sequence"


def _processor_lines(pipeline: LoadedPipeline) -> list[str]:
    from procflow._cli.processing import nested_processors
    from procflow.processors._base import HOOK_NAMES

    rows: list[tuple[str, str, str]] = []
    seen: set[int] = set()
    for top in pipeline.processors:
        for processor in (top, *nested_processors(top)):
            if id(processor) in seen:
                continue
            seen.add(id(processor))
            indent = "" if processor is top else "  "
            hooks = [h.removeprefix("process_") for h in HOOK_NAMES if callable(getattr(processor, h, None))]
            rows.append((f"{indent}{processor.id}", type(processor).__name__, ", ".join(hooks) or "-"))
    first = max(len(r[0]) for r in rows)
    second = max(len(r[1]) for r in rows)
    return [f"  {a.ljust(first)}  {b.ljust(second)}  {c}" for a, b, c in rows]


def _print_problems(out: Console, problems: list[Problem]) -> None:
    for problem in problems:
        colour = "red" if problem.level == "error" else "yellow"
        out.print(f"[{colour}]{problem.level}:[/] ", end="")
        out.print(problem.what, markup=False)
        if problem.fix:
            out.print("  fix: ", end="")
            out.print(problem.fix, markup=False)

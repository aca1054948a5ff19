"""``procflow run``: apply a pipeline to stored conversations (JSONL), offline."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import anyio
import anyio.lowlevel
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

from procflow.cli.chat_format import conversation_to_record
from procflow.cli.console import fail, warn
from procflow.cli.jsonl import JsonlWriter, ReadItem, read_conversations
from procflow.cli.loading import PipelineLoadError, load_pipeline
from procflow.cli.processing import RUN_HOOKS, ConversationProcessor, Outcome
from procflow.cli.summary import RunStats
from procflow.errors import ConfigurationError

__all__ = ["add_parser", "run"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def add_parser(subparsers: Any) -> None:
    """Register ``procflow run``."""
    parser = subparsers.add_parser(
        "run",
        help="apply a pipeline to conversations stored as JSONL",
        description=(
            "Apply a processor pipeline to conversations in the common chat format "
            '({"messages": [{"role": ..., "content": ...}]}, one per line). User, system and tool turns go '
            "through the input phase, assistant turns through the output phase. Each conversation is "
            "written back as soon as it is processed; blocked ones carry "
            '"blocked": {"reason", "processor_id", "phase"}.'
        ),
    )
    parser.add_argument("input", nargs="?", default="-", help="JSONL file of conversations, or - for stdin")
    parser.add_argument(
        "-p",
        "--pipeline",
        help="FILE.py:NAME or MODULE:NAME naming a workflow, processor, list of processors or agent "
        "(default: the bundled guard — Unicode normalisation, PII and secrets redaction, a "
        "prompt-injection block, a token limit)",
    )
    parser.add_argument("-o", "--output", default="-", help="where to write the processed JSONL (default: -)")
    parser.add_argument(
        "--phase",
        choices=("auto", "input", "output"),
        default="auto",
        help="auto: by role (default); input or output: every turn through that phase",
    )
    parser.add_argument(
        "--on-error",
        choices=("fail", "skip"),
        default="fail",
        help="on a bad line or a processor error: stop with exit code 1 (default), or report and skip it",
    )
    parser.add_argument("--report", metavar="FILE", help="also write the summary as JSON to FILE")
    parser.add_argument(
        "--keep-blocked",
        action="store_true",
        help="write the messages of blocked conversations (as processing left them) instead of []",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary table")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    """Run the ``procflow run`` command; return the exit code."""
    try:
        pipeline = load_pipeline(args.pipeline)
        processor = ConversationProcessor(pipeline, phase=args.phase)
    except (PipelineLoadError, ConfigurationError) as exc:
        return fail(console, str(exc), code=EXIT_USAGE)
    _warn_idle(console, pipeline.processors, args.phase)
    for pid in processor.unattached:
        warn(console, f"processor {pid!r} does not accept on_violation; its redactions are not counted")
    if args.input != "-" and not Path(args.input).is_file():
        return fail(console, f"input file {args.input!r} does not exist", code=EXIT_USAGE)
    if args.input != "-" and args.output != "-" and Path(args.output).resolve() == Path(args.input).resolve():
        return fail(console, "the output would overwrite the input; write to another file", code=EXIT_USAGE)
    stats = RunStats(pipeline=args.pipeline or "default", input=args.input, output=args.output)
    code = EXIT_OK
    try:
        with _open_input(args.input) as source, _open_output(args.output) as sink:
            code = anyio.run(_process_all, args, console, processor, source, JsonlWriter(sink), stats)
    except KeyboardInterrupt:
        stats.interrupted = True
        code = EXIT_INTERRUPTED
    except OSError as exc:
        where = exc.filename or args.output
        return fail(console, f"{where}: {exc.strerror or exc}", code=EXIT_FAILED)
    stats.finish()
    if not args.quiet:
        stats.render(console)
    if args.report:
        _write_report(console, Path(args.report), stats)
    return code


async def _process_all(
    args: argparse.Namespace,
    console: Console,
    processor: ConversationProcessor,
    source: IO[bytes],
    writer: JsonlWriter,
    stats: RunStats,
) -> int:
    total = _size_of(source)
    show = console.is_terminal and not args.quiet
    progress = Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not show,
    )
    # One event loop for the whole run; lines are read synchronously between conversations (a CLI has
    # nothing else to do meanwhile), which costs far less than a thread hop per conversation.
    with progress:
        task = progress.add_task("processing", total=total)
        for item in read_conversations(source):
            stats.lines += 1
            progress.update(task, completed=item.offset, description=f"{stats.processed} conversations")
            error = await _handle(item, args, processor, writer, stats)
            # Processors may never suspend; a checkpoint per conversation lets Ctrl-C stop the run here.
            await anyio.lowlevel.checkpoint()
            if error is not None:
                stats.errors.append({"line": item.line, "error": error})
                if args.on_error == "fail":
                    fail(
                        console, f"{_name(args.input)}:{item.line}: {error} (--on-error skip skips bad lines)"
                    )
                    return EXIT_FAILED
                stats.skipped += 1
                warn(console, f"{_name(args.input)}:{item.line}: {error}; skipped")
    stats.written = writer.written
    return EXIT_OK


async def _handle(
    item: ReadItem,
    args: argparse.Namespace,
    processor: ConversationProcessor,
    writer: JsonlWriter,
    stats: RunStats,
) -> str | None:
    """Process and write one line; return the error text when it failed."""
    if item.error is not None:
        return item.error.problem
    assert item.conversation is not None
    try:
        outcome: Outcome = await processor.process(item.conversation)
    except Exception as exc:
        return f"processing failed: {type(exc).__name__}: {exc}"
    blocked = outcome.tripwire is not None
    kept = outcome.messages if not blocked or args.keep_blocked else []
    record = conversation_to_record(item.conversation, kept)
    if outcome.tripwire is not None:
        record["blocked"] = {
            "reason": outcome.tripwire.reason,
            "processor_id": outcome.tripwire.processor_id,
            "phase": outcome.blocked_phase,
            "metadata": outcome.tripwire.metadata,
        }
    writer.write(record)
    stats.written = writer.written
    stats.add(outcome)
    return None


def _warn_idle(console: Console, processors: tuple[Any, ...], phase: str) -> None:
    for processor in processors:
        hooks = [h for h in RUN_HOOKS if callable(getattr(processor, h, None))]
        if not hooks:
            warn(
                console,
                f"processor {processor.id!r} has neither process_input nor process_output_result, so it does "
                "nothing to stored conversations",
            )
        elif phase == "input" and hooks == ["process_output_result"]:
            warn(
                console, f"processor {processor.id!r} only has process_output_result; --phase input skips it"
            )
        elif phase == "output" and hooks == ["process_input"]:
            warn(console, f"processor {processor.id!r} only has process_input; --phase output skips it")


def _name(path: str) -> str:
    return "<stdin>" if path == "-" else path


def _size_of(stream: IO[bytes]) -> float | None:
    try:
        return float(Path(stream.name).stat().st_size) if isinstance(stream.name, str) else None
    except (OSError, AttributeError):
        return None


@contextlib.contextmanager
def _open_input(path: str) -> Iterator[IO[bytes]]:
    if path == "-":
        yield sys.stdin.buffer
        return
    with open(path, "rb") as stream:
        yield stream


@contextlib.contextmanager
def _open_output(path: str) -> Iterator[IO[str]]:
    if path == "-":
        if hasattr(sys.stdout, "reconfigure"):
            sys.stdout.reconfigure(encoding="utf-8")
        yield sys.stdout
        return
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", encoding="utf-8", newline="\n") as stream:
        yield stream


def _write_report(console: Console, path: Path, stats: RunStats) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(stats.to_report(), indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        fail(console, f"cannot write the report to {str(path)!r}: {exc.strerror or exc}")

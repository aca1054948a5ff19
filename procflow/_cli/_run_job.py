"""The work of ``procflow run``: read each line, apply the pipeline, write the line, count it.

No input can crash the job: every bad line is a line-numbered error that describes what is wrong
without quoting the conversation (see :mod:`procflow._chat.json_input`); a closed stdout ends the run
quietly; Ctrl-C keeps what was written and still writes the summary and the report.
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from procflow._chat.format import Conversation, ConversationFormatError, conversation_to_record
from procflow._cli._run_io import input_size, open_input, open_output, report_problem, write_report
from procflow._cli.console import (
    EXIT_BROKEN_PIPE,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    describe_exception,
    fail,
    silence_stdout,
    warn,
)
from procflow._cli.jsonl import JsonlWriter, ReadItem, read_conversations
from procflow._cli.loading import PipelineLoadError, load_pipeline
from procflow._cli.processing import RUN_HOOKS, ConversationProcessor, Outcome
from procflow.errors import ConfigurationError

if TYPE_CHECKING:
    # rich loads with the summary, when a job runs: a worker process imports this module (for
    # record_of) and has no use for it.
    from rich.console import Console
    from rich.progress import Progress

    from procflow._cli.summary import RunStats

__all__ = ["record_of", "run_job"]


def run_job(args: argparse.Namespace, console: Console) -> int:
    """Run ``procflow run`` with parsed ``args``; return the exit code."""
    from procflow._cli.summary import RunStats

    try:
        pipeline = load_pipeline(args.pipeline)
        processor = ConversationProcessor(pipeline, phase=args.phase)
    except (PipelineLoadError, ConfigurationError) as exc:
        return fail(console, str(exc), code=EXIT_USAGE)
    _warn_idle(console, pipeline.processors, args.phase)
    for pid in processor.unattached:
        warn(console, f"processor {pid!r} does not accept on_violation; its redactions are not counted")
    problem = _argument_problem(args)
    if problem is not None:
        return fail(console, problem[1], code=problem[0])
    stats = RunStats(pipeline=args.pipeline or "default", input=args.input, output=args.output)
    if getattr(args, "engine", "local") == "ray":
        from procflow._scale import run_ray_command

        code: int | None = run_ray_command(args, console, stats)
    else:
        code = _run_files(args, console, processor, stats)
    if code is None:
        return EXIT_USAGE
    stats.finish()
    if not args.quiet and code != EXIT_BROKEN_PIPE:
        stats.render(console)
    if args.report:
        why = write_report(Path(args.report), stats.to_report())
        if why is not None:
            fail(console, f"cannot write the report to {args.report!r}: {why}")
            code = code or EXIT_FAILED
    return code


def _run_files(
    args: argparse.Namespace, console: Console, processor: ConversationProcessor, stats: RunStats
) -> int | None:
    """Open the input and output and process every line; ``None`` when the input cannot be read."""
    with contextlib.ExitStack() as files:
        try:
            source = files.enter_context(open_input(args.input))
        except OSError as exc:
            fail(
                console, f"cannot read {args.input!r}: {exc.strerror or type(exc).__name__}", code=EXIT_USAGE
            )
            return None
        try:
            sink = files.enter_context(open_output(args.output))
            workers = _workers_for(args, source)
            if workers > 1:
                from procflow._scale import run_with_workers

                return run_with_workers(args, console, source, sink, stats, workers=workers)
            # A file never makes the reader wait: flush a few times a second instead of every line.
            # A pipe or a terminal may pause between lines, so each line goes out as soon as written.
            writer = JsonlWriter(sink, flush_every=FLUSH_EVERY if args.input != "-" else 0.0)
            return anyio.run(_process_all, args, console, processor, source, writer, stats)
        except KeyboardInterrupt:
            stats.interrupted = True
            return EXIT_INTERRUPTED
        except BrokenPipeError:
            # The reader of stdout stopped (`| head -1`): stop quietly, as programs killed by SIGPIPE do.
            silence_stdout()
            stats.interrupted = True
            return EXIT_BROKEN_PIPE
        except OSError as exc:
            where = exc.filename or args.output
            return fail(console, f"{where}: {exc.strerror or type(exc).__name__}", code=EXIT_FAILED)


FLUSH_EVERY = 0.05
"""Seconds between flushes of the output when the input is a file (see :class:`JsonlWriter`)."""


def _workers_for(args: argparse.Namespace, source: IO[bytes]) -> int:
    """How many worker processes to use: ``--workers``, or (without it) the cores for a large file."""
    from procflow._scale._start import workers_for

    return workers_for(getattr(args, "workers", None), input_size(source) if args.input != "-" else None)


def _argument_problem(args: argparse.Namespace) -> tuple[int, str] | None:
    """A problem with the files named, found before any conversation is read: (exit code, message)."""
    ray_parquet = getattr(args, "engine", "local") == "ray" and args.input.rstrip("/").endswith(".parquet")
    if (
        args.input != "-"
        and not Path(args.input).is_file()
        and not (ray_parquet and Path(args.input).is_dir())
    ):
        what = "is a directory" if Path(args.input).is_dir() else "does not exist"
        return EXIT_USAGE, f"input file {args.input!r} {what}"
    if args.input != "-" and args.output != "-" and Path(args.output).resolve() == Path(args.input).resolve():
        return EXIT_USAGE, "the output would overwrite the input; write to another file"
    if args.report:
        why = report_problem(Path(args.report))
        if why is not None:
            return EXIT_FAILED, f"cannot write the report to {args.report!r}: {why}"
    return None


async def _process_all(
    args: argparse.Namespace,
    console: Console,
    processor: ConversationProcessor,
    source: IO[bytes],
    writer: JsonlWriter,
    stats: RunStats,
) -> int:
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

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
    try:
        code = await _process_lines(args, console, processor, source, writer, stats, progress, show)
    except BaseException:
        with contextlib.suppress(OSError):
            writer.flush()  # keep what was written (Ctrl-C); a closed pipe has nothing left to keep
        raise
    writer.flush()
    return code


async def _process_lines(
    args: argparse.Namespace,
    console: Console,
    processor: ConversationProcessor,
    source: IO[bytes],
    writer: JsonlWriter,
    stats: RunStats,
    progress: Progress,
    show: bool,
) -> int:
    # One event loop for the whole run; lines are read synchronously between conversations (a CLI has
    # nothing else to do meanwhile), which costs far less than a thread hop per conversation.
    with progress:
        task = progress.add_task("processing", total=input_size(source))
        for item in read_conversations(source, max_line_bytes=args.max_line_size):
            stats.lines += 1
            if show:  # a hidden bar still takes a lock and formats its description on every update
                progress.update(task, completed=item.offset, description=f"{stats.processed} conversations")
            error = await _handle(item, args, processor, writer, stats)
            # Processors may never suspend; a checkpoint per conversation lets Ctrl-C stop the run here.
            await anyio.lowlevel.checkpoint()
            if error is not None:
                stats.errors.append({"line": item.line, "error": error})
                where = f"{_name(args.input)}:{item.line}"
                if args.on_error == "fail":
                    fail(console, f"{where}: {error} (--on-error skip skips bad lines)")
                    return EXIT_FAILED
                stats.skipped += 1
                warn(console, f"{where}: {error}; skipped")
    stats.written = writer.written
    return EXIT_OK


async def _handle(
    item: ReadItem,
    args: argparse.Namespace,
    processor: ConversationProcessor,
    writer: JsonlWriter,
    stats: RunStats,
) -> str | None:
    """Process and write one line; return what went wrong, when it did."""
    if item.error is not None:
        return item.error.problem
    assert item.conversation is not None
    try:
        outcome: Outcome = await processor.process(item.conversation)
    except Exception as exc:
        return f"processing failed: {describe_exception(exc)}"
    record = record_of(item.conversation, outcome, keep_blocked=args.keep_blocked)
    try:
        writer.write(record)
    except ConversationFormatError as exc:
        return exc.problem
    stats.written = writer.written
    stats.add(outcome)
    return None


def record_of(conversation: Conversation, outcome: Outcome, *, keep_blocked: bool) -> dict[str, Any]:
    """The output record of a processed conversation (its messages withheld when it was blocked)."""
    blocked = outcome.tripwire is not None
    kept = outcome.messages if not blocked or keep_blocked else []
    record = conversation_to_record(conversation, kept)
    if outcome.tripwire is not None:
        record["blocked"] = {
            "reason": outcome.tripwire.reason,
            "processor_id": outcome.tripwire.processor_id,
            "phase": outcome.blocked_phase,
            "metadata": outcome.tripwire.metadata,
        }
    return record


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

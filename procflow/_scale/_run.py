"""The parent's side of ``procflow run --workers N``: feed the pool, write and count what comes back."""

from __future__ import annotations

import argparse
from concurrent.futures.process import BrokenProcessPool
from typing import IO, TYPE_CHECKING

from procflow._scale._chunks import iter_chunks
from procflow._scale._workers import (
    ChunkResult,
    Interrupted,
    WorkerConfig,
    Written,
    results_as_done,
    results_in_order,
    sigint_deferred,
    start_pool,
    stop_pool,
)

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

    from procflow._cli.summary import RunStats

__all__ = ["run_with_workers"]


def run_with_workers(
    args: argparse.Namespace,
    console: Console,
    source: IO[bytes],
    sink: IO[str],
    stats: RunStats,
    *,
    workers: int,
) -> int:
    """Process ``source`` into ``sink`` on ``workers`` processes, counting into ``stats``; the exit code.

    KeyboardInterrupt and BrokenPipeError propagate (after the pool is stopped), as on the
    single-process path, whose caller turns them into exit statuses 130 and 141.
    """
    from procflow._cli.console import EXIT_OK, describe_exception, fail

    config = WorkerConfig(pipeline=args.pipeline, phase=args.phase, keep_blocked=args.keep_blocked)
    chunks = iter_chunks(source, max_line_bytes=args.max_line_size)
    pool = start_pool(workers, pipeline=args.pipeline)
    finished = False
    try:
        with _progress(console, args, source) as progress:
            results = results_as_done if args.unordered else results_in_order
            for chunk, lines in results(pool, config, chunks, workers=workers):
                code = _consume(args, console, sink, stats, lines)
                progress.update(progress.task_ids[0], completed=chunk.offset, description=_done(stats))
                if code is not None:
                    return code
        finished = True
    except BrokenProcessPool:
        return fail(console, "a worker process stopped unexpectedly (killed, or out of memory)")
    except Exception as exc:  # a worker could not load the pipeline, say
        return fail(console, f"a worker process failed: {describe_exception(exc)}")
    finally:
        stats.errors.sort(key=lambda error: int(error["line"]))
        if finished:
            pool.shutdown(wait=True)
        else:
            stop_pool(pool)
    return EXIT_OK


def _consume(
    args: argparse.Namespace, console: Console, sink: IO[str], stats: RunStats, results: ChunkResult
) -> int | None:
    """Write and count one chunk's results, as the single-process run does line by line."""
    from procflow._cli.console import EXIT_FAILED, fail, warn

    where = "<stdin>" if args.input == "-" else args.input
    with sigint_deferred():
        try:
            for result in results:
                if isinstance(result, Written):
                    sink.write(result.text)
                    _count(stats, result)
                    continue
                stats.lines += 1
                if isinstance(result, Interrupted):
                    raise KeyboardInterrupt
                number, problem = result.line, result.problem
                stats.errors.append({"line": number, "error": problem})
                if args.on_error == "fail":
                    fail(console, f"{where}:{number}: {problem} (--on-error skip skips bad lines)")
                    return EXIT_FAILED
                stats.skipped += 1
                warn(console, f"{where}:{number}: {problem}; skipped")
        finally:
            sink.flush()
    return None


def _count(stats: RunStats, written: Written) -> None:
    """Count a run of written lines, as :meth:`RunStats.count` counts them one by one."""
    stats.lines += written.lines
    stats.written += written.lines
    stats.processed += written.lines
    if written.redactions:
        stats.redactions.update(written.redactions)
    if written.warnings:
        stats.warnings.update(written.warnings)
    if written.blocked_by:
        stats.blocked += sum(written.blocked_by.values())
        stats.blocked_by.update(written.blocked_by)


def _done(stats: RunStats) -> str:
    return f"{stats.processed} conversations"


def _progress(console: Console, args: argparse.Namespace, source: IO[bytes]) -> Progress:
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

    from procflow._cli._run_io import input_size

    progress = Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not (console.is_terminal and not args.quiet),
    )
    progress.add_task("processing", total=input_size(source))
    return progress

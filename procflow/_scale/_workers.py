"""``procflow run --workers N``: the input split across worker processes, the output and report merged.

The parent reads raw lines (the ``--max-line-size`` check happens there, so no over-long line is ever
held or sent), groups them into chunks and hands each chunk to a process pool (``forkserver`` where
the platform has it, else ``spawn``). Each worker loads the pipeline from its reference once and
parses, processes and serialises its lines; the parent writes the lines in input order (or as chunks
finish, with ``--unordered``) and counts them with the same :class:`~procflow._cli.summary.RunStats`
as a single-process run, so the summary and the report are the same. Workers ignore SIGINT: Ctrl-C
reaches the parent, which stops the pool; only whole chunks of whole lines are ever written.
"""

from __future__ import annotations

import concurrent.futures as futures
import contextlib
import io
import multiprocessing
import os
import signal
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any, Literal

import anyio

__all__ = [
    "Chunk",
    "LineResult",
    "WorkerConfig",
    "cpu_count",
    "iter_chunks",
    "process_chunk",
    "process_one",
    "start_pool",
]

CHUNK_LINES = 64
"""Lines per chunk: enough to make the cost of sending a chunk small beside processing it."""
CHUNK_BYTES = 4 << 20
"""A chunk is sent early once its lines reach this many bytes."""
IN_FLIGHT_PER_WORKER = 3
"""Chunks queued per worker: keeps every worker busy while bounding what is held in memory."""

LineResult = tuple[int, Literal["ok", "error", "interrupted"], Any]
"""``(line, "ok", (json line, redactions, warnings, blocked_by))``, ``(line, "error", problem)`` or
``(line, "interrupted", None)`` (a processor raised KeyboardInterrupt)."""


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    """What a worker needs to build its pipeline and write records, sent with every chunk (it is tiny).

    Attributes:
        pipeline: The pipeline reference (``None`` for the bundled guard).
        phase: ``auto``, ``input`` or ``output``.
        keep_blocked: Whether blocked conversations keep their messages.
    """

    pipeline: str | None
    phase: str
    keep_blocked: bool


@dataclass(frozen=True, slots=True)
class Chunk:
    """Consecutive input lines: ``(line number, raw bytes or None, size error or None)`` each.

    Attributes:
        lines: The lines; a line rejected by the size limit has no bytes and its error's text.
        offset: Input bytes consumed up to the end of the chunk (for the progress bar).
    """

    lines: list[tuple[int, bytes | None, str | None]]
    offset: int


def cpu_count() -> int:
    """The number of cores this process may use (its CPU affinity where the platform tells it)."""
    getter = getattr(os, "process_cpu_count", None)
    if getter is not None:
        return int(getter() or 1)
    with contextlib.suppress(AttributeError, OSError):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def iter_chunks(stream: IO[bytes], *, max_line_bytes: int) -> Iterator[Chunk]:
    """Group the raw lines of ``stream`` into chunks of at most :data:`CHUNK_LINES` lines."""
    from procflow._cli.jsonl import read_raw_lines

    lines: list[tuple[int, bytes | None, str | None]] = []
    size = 0
    offset = 0
    for number, raw, error, offset in read_raw_lines(stream, max_line_bytes=max_line_bytes):
        lines.append((number, raw, None if error is None else error.problem))
        size += len(raw or b"")
        if len(lines) >= CHUNK_LINES or size >= CHUNK_BYTES:
            yield Chunk(lines, offset)
            lines, size = [], 0
    if lines:
        yield Chunk(lines, offset)


def start_pool(workers: int) -> futures.ProcessPoolExecutor:
    """A pool of ``workers`` processes that ignore SIGINT (the parent handles Ctrl-C)."""
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        # The server imports the CLI's machinery once; every worker forked from it starts with it loaded.
        context.set_forkserver_preload(list(_PRELOAD))
    return futures.ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_ignore_sigint)


_PRELOAD = ("procflow._scale._workers", "procflow._cli._run_job", "procflow._cli.defaults")


def stop_pool(pool: futures.ProcessPoolExecutor) -> None:
    """Stop ``pool`` now: drop queued chunks and end the worker processes without waiting for them."""
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14+
    if terminate is not None:
        terminate()
        return
    processes = list((getattr(pool, "_processes", None) or {}).values())
    call_queue = getattr(pool, "_call_queue", None)
    if call_queue is not None:
        # Before the workers end: the queue's feeder thread may be blocked writing a chunk into a full
        # pipe whose only readers are those workers (this process holds the reading end too, so the
        # write never fails). Once the workers are gone the executor's manager thread would wait for
        # that feeder forever, and the interpreter for the manager at exit.
        with contextlib.suppress(Exception):
            call_queue.cancel_join_thread()
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(Exception):
            process.terminate()
    for process in processes:
        with contextlib.suppress(Exception):
            process.join(5)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


_PROCESSORS: dict[WorkerConfig, Any] = {}


def process_chunk(config: WorkerConfig, chunk: Chunk) -> list[LineResult]:
    """In a worker: parse, process and serialise every line of ``chunk`` (the pipeline built once)."""
    processor = _PROCESSORS.get(config)
    if processor is None:
        from procflow._cli.loading import load_pipeline
        from procflow._cli.processing import ConversationProcessor

        processor = ConversationProcessor(load_pipeline(config.pipeline), phase=config.phase)  # type: ignore[arg-type]
        _PROCESSORS[config] = processor
    return anyio.run(_process_lines, config, processor, chunk)


async def _process_lines(config: WorkerConfig, processor: Any, chunk: Chunk) -> list[LineResult]:
    from procflow._cli.jsonl import parse_line

    results: list[LineResult] = []
    for number, raw, problem in chunk.lines:
        if raw is None:
            results.append((number, "error", problem))
            continue
        conversation, error = parse_line(raw, number)
        if error is not None:
            results.append((number, "error", error.problem))
            continue
        try:
            kind, payload = await process_one(config, processor, conversation)
            results.append((number, kind, payload))
        except KeyboardInterrupt:
            results.append((number, "interrupted", None))
            break
    return results


async def process_one(
    config: WorkerConfig, processor: Any, conversation: Any
) -> tuple[Literal["ok", "error"], Any]:
    from procflow._chat.format import ConversationFormatError
    from procflow._cli._run_job import record_of
    from procflow._cli.console import describe_exception
    from procflow._cli.jsonl import JsonlWriter

    try:
        outcome = await processor.process(conversation)
    except Exception as exc:
        return "error", f"processing failed: {describe_exception(exc)}"
    buffer = io.StringIO()
    try:
        JsonlWriter(buffer).write(record_of(conversation, outcome, keep_blocked=config.keep_blocked))
    except ConversationFormatError as exc:
        return "error", exc.problem
    tripwire = outcome.tripwire
    blocked_by = None if tripwire is None else tripwire.processor_id or "unknown"
    return "ok", (buffer.getvalue(), dict(outcome.redactions), dict(outcome.warnings), blocked_by)


def results_in_order(
    pool: futures.ProcessPoolExecutor, config: WorkerConfig, chunks: Iterator[Chunk], *, workers: int
) -> Iterator[tuple[Chunk, list[LineResult]]]:
    """Each chunk with its results, in input order, keeping a bounded number of chunks in flight."""
    pending: deque[tuple[Chunk, futures.Future[list[LineResult]]]] = deque()
    limit = workers * IN_FLIGHT_PER_WORKER
    for chunk in chunks:
        pending.append((chunk, pool.submit(process_chunk, config, chunk)))
        if len(pending) >= limit:
            head, future = pending.popleft()
            yield head, future.result()
    while pending:
        head, future = pending.popleft()
        yield head, future.result()


def results_as_done(
    pool: futures.ProcessPoolExecutor, config: WorkerConfig, chunks: Iterator[Chunk], *, workers: int
) -> Iterator[tuple[Chunk, list[LineResult]]]:
    """Each chunk with its results as soon as it is done (``--unordered``), a bounded number in flight."""
    pending: dict[futures.Future[list[LineResult]], Chunk] = {}
    limit = workers * IN_FLIGHT_PER_WORKER
    source = iter(chunks)
    exhausted = False
    while True:
        while not exhausted and len(pending) < limit:
            chunk = next(source, None)
            if chunk is None:
                exhausted = True
            else:
                pending[pool.submit(process_chunk, config, chunk)] = chunk
        if not pending:
            return
        done, _ = futures.wait(pending, return_when=futures.FIRST_COMPLETED)
        for future in done:
            yield pending.pop(future), future.result()


@contextlib.contextmanager
def sigint_deferred() -> Iterator[None]:
    """Hold Ctrl-C back while a chunk is written, so an interrupted run never leaves half a line.

    A Ctrl-C that arrives meanwhile is raised as KeyboardInterrupt once the chunk is written.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt

"""``procflow run --workers N``: the input split across worker processes, the output and report merged.

The parent reads the input in blocks of whole lines (:mod:`procflow._scale._chunks`; the
``--max-line-size`` check happens there, so no over-long line is ever held or sent) and hands each
chunk to a process pool (``forkserver`` where the platform has it, else ``spawn``). Each worker loads
the pipeline from its reference once, then parses, processes and serialises a chunk's lines and sends
back its output as one string with the chunk's counts (:class:`Written`), broken only where a line
failed (:class:`LineFailed`) or a processor raised KeyboardInterrupt (:class:`Interrupted`). The parent
writes the chunks in input order (or as they finish, with ``--unordered``) and adds their counts to the
same :class:`~procflow._cli.summary.RunStats` as a single-process run, so the summary and the report are
the same. Workers ignore SIGINT: Ctrl-C reaches the parent, which stops the pool; only whole chunks of
whole lines are ever written.
"""

from __future__ import annotations

import concurrent.futures as futures
import contextlib
import io
import multiprocessing
import signal
import threading
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import anyio

from procflow._scale._chunks import Chunk
from procflow._scale._start import cpu_count, start_forkserver, start_method

__all__ = [
    "ChunkResult",
    "Interrupted",
    "LineFailed",
    "WorkerConfig",
    "Written",
    "cpu_count",
    "process_chunk",
    "process_one",
    "start_pool",
]

IN_FLIGHT_PER_WORKER = 3
"""Chunks queued per worker: keeps every worker busy while bounding what is held in memory."""


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
class Written:
    """Consecutive lines processed and serialised: their output and their counts.

    Attributes:
        text: The output lines, joined.
        lines: How many lines (each one conversation, written).
        redactions: Redactions per rule, summed over the lines.
        warnings: ``warn``-strategy matches per rule, summed.
        blocked_by: Blocked conversations per processor id.
    """

    text: str
    lines: int
    redactions: dict[str, int]
    warnings: dict[str, int]
    blocked_by: dict[str, int]


@dataclass(frozen=True, slots=True)
class LineFailed:
    """A line that could not be read, parsed, processed or written: its number and what went wrong."""

    line: int
    problem: str


@dataclass(frozen=True, slots=True)
class Interrupted:
    """A processor raised KeyboardInterrupt on this line; the chunk's later lines were not processed."""

    line: int


ChunkResult = list[Written | LineFailed | Interrupted]
"""A chunk's lines in input order: runs of written lines, broken by the lines that failed."""


def start_pool(workers: int, *, pipeline: str | None = None) -> futures.ProcessPoolExecutor:
    """A pool of ``workers`` processes that ignore SIGINT (the parent handles Ctrl-C).

    With ``forkserver``, the server is started here unless :func:`start_forkserver` started it earlier.
    """
    method = start_method()
    if method == "forkserver":
        start_forkserver(pipeline)
    context = multiprocessing.get_context(method)
    return futures.ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_ignore_sigint)


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


def process_chunk(config: WorkerConfig, chunk: Chunk) -> ChunkResult:
    """In a worker: parse, process and serialise every line of ``chunk`` (the pipeline built once)."""
    processor = _PROCESSORS.get(config)
    if processor is None:
        from procflow._cli.loading import load_pipeline
        from procflow._cli.processing import ConversationProcessor

        processor = ConversationProcessor(load_pipeline(config.pipeline), phase=config.phase)  # type: ignore[arg-type]
        _PROCESSORS[config] = processor
    return anyio.run(_process_lines, config, processor, chunk)


class _Run:
    """The run of written lines being gathered, and how a conversation joins it.

    Also the stream its :class:`~procflow._cli.jsonl.JsonlWriter` writes to (the text goes back to the
    parent with the chunk). Built once per chunk, so that nothing is looked up once per line.
    """

    __slots__ = (
        "_config",
        "_describe",
        "_format_error",
        "_processor",
        "_record_of",
        "_writer",
        "blocked_by",
        "lines",
        "parts",
        "redactions",
        "warnings",
    )

    def __init__(self, config: WorkerConfig, processor: Any) -> None:
        from procflow._chat.format import ConversationFormatError
        from procflow._cli._run_job import record_of
        from procflow._cli.console import describe_exception
        from procflow._cli.jsonl import JsonlWriter

        self._config, self._processor = config, processor
        self._record_of, self._describe, self._format_error = (
            record_of,
            describe_exception,
            ConversationFormatError,
        )
        self._writer = JsonlWriter(self)  # type: ignore[arg-type]
        self.reset()

    def reset(self) -> None:
        """Start a new run."""
        self.parts: list[str] = []
        self.lines = 0
        self.redactions: Counter[str] = Counter()
        self.warnings: Counter[str] = Counter()
        self.blocked_by: Counter[str] = Counter()

    def write(self, text: str) -> None:
        """Take one output line (from the writer)."""
        self.parts.append(text)

    def flush(self) -> None:
        """Nothing to flush: the text goes back to the parent with the chunk."""

    async def add(self, conversation: Any) -> str | None:
        """Process ``conversation`` and write it into the run, counting it; what went wrong, if anything."""
        try:
            outcome = await self._processor.process(conversation)
        except Exception as exc:
            return f"processing failed: {self._describe(exc)}"
        try:
            self._writer.write(self._record_of(conversation, outcome, keep_blocked=self._config.keep_blocked))
        except self._format_error as exc:
            return str(exc.problem)
        self.lines += 1
        if outcome.redactions:
            self.redactions.update(outcome.redactions)
        if outcome.warnings:
            self.warnings.update(outcome.warnings)
        tripwire = outcome.tripwire
        if tripwire is not None:
            self.blocked_by[tripwire.processor_id or "unknown"] += 1
        return None

    def close(self, results: ChunkResult) -> None:
        """Append the run to ``results`` (when it has lines) and start a new one."""
        if self.lines:
            text = "".join(self.parts)
            counts = (dict(self.redactions), dict(self.warnings), dict(self.blocked_by))
            results.append(Written(text, self.lines, *counts))
            self.reset()


async def _process_lines(config: WorkerConfig, processor: Any, chunk: Chunk) -> ChunkResult:
    from procflow._cli.jsonl import parse_line

    results: ChunkResult = []
    run = _Run(config, processor)
    too_long = dict(chunk.too_long)
    lines = chunk.data.split(b"\n")
    if chunk.data.endswith(b"\n"):
        lines.pop()
    for number, raw in enumerate(lines, chunk.start):
        problem: str | None = None
        if not raw.strip():
            problem = too_long.get(number)
            if problem is None:
                continue  # a blank line
        else:
            conversation, error = parse_line(raw, number)
            if error is None:
                try:
                    problem = await run.add(conversation)
                except KeyboardInterrupt:
                    run.close(results)
                    results.append(Interrupted(number))
                    return results
            else:
                problem = error.problem
        if problem is not None:
            run.close(results)
            results.append(LineFailed(number, problem))
    run.close(results)
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
) -> Iterator[tuple[Chunk, ChunkResult]]:
    """Each chunk with its results, in input order, keeping a bounded number of chunks in flight."""
    pending: deque[tuple[Chunk, futures.Future[ChunkResult]]] = deque()
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
) -> Iterator[tuple[Chunk, ChunkResult]]:
    """Each chunk with its results as soon as it is done (``--unordered``), a bounded number in flight."""
    pending: dict[futures.Future[ChunkResult], Chunk] = {}
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

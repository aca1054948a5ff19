"""``procflow run --engine ray`` and :func:`run_ray`: the same pipeline over a Ray Data dataset.

Rows are ``line`` (the 1-based input line or row number) and ``raw`` (the JSON bytes of a conversation;
``None`` with an ``error`` when the line was rejected unparsed). :class:`ApplyPipeline`, a callable
class run by ``map_batches`` on a pool of actors, builds the pipeline once per actor and turns each
row into ``json`` (the output record, or ``None``), ``error``, ``redactions``/``warnings`` (JSON
objects) and ``blocked_by``. The driver then walks the rows in line order and counts them with the
same :class:`~procflow._cli.summary.RunStats` as a single-process run, so the summary and the report
are the same; a failed row is never dropped: it is in the report (and in Parquet output, as a row
with its ``error``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import logging
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

import anyio

from procflow._scale._workers import WorkerConfig, sigint_deferred
from procflow.errors import ProcflowError

if TYPE_CHECKING:
    from rich.console import Console

    from procflow._cli.summary import RunStats

__all__ = [
    "DEFAULT_RAY_WORKERS",
    "ApplyPipeline",
    "RayUnavailableError",
    "execute_ray",
    "run_ray",
    "run_ray_command",
]

DEFAULT_RAY_WORKERS = 2
"""Actors (each with its own pipeline) and, for a local cluster, its CPUs, when no number is given."""
BATCH_ROWS = 64
"""Rows per ``map_batches`` batch."""
_BLOCK_ROWS = 1024
_OUTPUT_COLUMNS = ("line", "json", "error", "redactions", "warnings", "blocked_by")

Problem = Callable[[int, str, bool], None]
"""Called for a failed row: (line, problem, whether the run stops there)."""


class RayUnavailableError(ProcflowError, ImportError):
    """Ray Data is not installed; ``pip install 'procflow[ray]'`` installs it."""


def _ray() -> Any:
    try:
        import ray
        import ray.data
    except ImportError as exc:
        raise RayUnavailableError(
            "the Ray engine needs Ray Data, which is not installed; install it with "
            "pip install 'procflow[ray]' (or pip install 'ray[data]')"
        ) from exc
    return ray


class ApplyPipeline:
    """The ``map_batches`` callable class: one pipeline per actor, applied to each row of a batch."""

    def __init__(self, config: WorkerConfig) -> None:
        from procflow._cli.loading import load_pipeline
        from procflow._cli.processing import ConversationProcessor

        self.config = config
        self.processor = ConversationProcessor(load_pipeline(config.pipeline), phase=config.phase)  # type: ignore[arg-type]

    def __call__(self, batch: Any) -> Any:
        """Process one ``pyarrow`` batch of rows; return the output rows, one per input row."""
        pa = _pyarrow()
        columns = batch.to_pydict()
        raws = columns.get("raw") or [None if t is None else t.encode() for t in columns["json"]]
        errors = columns.get("error") or [
            "the row has no json" if t is None else None for t in columns["json"]
        ]
        rows = anyio.run(self._rows, list(zip(columns["line"], raws, errors, strict=True)))
        names = ("line", "json", "error", "redactions", "warnings", "blocked_by")
        types = (pa.int64(), pa.string(), pa.string(), pa.string(), pa.string(), pa.string())
        return pa.table(
            {n: pa.array([r[i] for r in rows], t) for i, (n, t) in enumerate(zip(names, types, strict=True))}
        )

    async def _rows(self, lines: list[tuple[int, bytes | None, str | None]]) -> list[tuple[Any, ...]]:
        from procflow._cli.jsonl import parse_line
        from procflow._scale._workers import process_one

        rows: list[tuple[Any, ...]] = []
        for number, raw, problem in lines:
            if raw is None:
                rows.append((number, None, problem, None, None, None))
                continue
            conversation, error = parse_line(raw, number)
            if error is not None:
                rows.append((number, None, error.problem, None, None, None))
                continue
            try:
                kind, payload = await process_one(self.config, self.processor, conversation)
            except KeyboardInterrupt:  # a processor raising it on a cluster is that row's failure
                kind, payload = "error", "processing failed: KeyboardInterrupt raised by a processor"
            if kind == "error":
                rows.append((number, None, payload, None, None, None))
            else:
                text, redactions, warnings, blocked_by = payload
                rows.append((number, text, None, json.dumps(redactions), json.dumps(warnings), blocked_by))
        return rows


def run_ray(
    input: str | Path,
    output: str | Path,
    *,
    pipeline: str | None = None,
    phase: Literal["auto", "input", "output"] = "auto",
    keep_blocked: bool = False,
    on_error: Literal["fail", "skip"] = "skip",
    max_line_size: int = 10_000_000,
    workers: int = DEFAULT_RAY_WORKERS,
    address: str | None = None,
) -> dict[str, Any]:
    """Apply a pipeline to a dataset of conversations with Ray Data; return the ``--report`` summary.

    Args:
        input: A JSONL file (``-`` for stdin), or a ``.parquet`` file or folder with ``line`` and
            ``json`` columns (what this function writes as Parquet).
        output: A JSONL file (``-`` for stdout), or a ``.parquet`` file (one row per input row:
            ``line``, ``json``, ``error``, ``redactions``, ``warnings``, ``blocked_by``).
        pipeline: A pipeline reference, as ``procflow run -p`` takes (default: the bundled guard).
        phase: ``auto`` (by role), ``input`` or ``output``.
        keep_blocked: Write blocked conversations' messages instead of ``[]``.
        on_error: ``skip``: failed rows are reported and the rest is written; ``fail``: nothing after
            the first failed row (in line order) is written or counted, as ``procflow run`` does.
        max_line_size: Longer JSONL lines are failed rows, never parsed.
        workers: Actors running the pipeline (and the CPUs of a local cluster started for the run).
        address: An existing cluster (``auto``, ``ray://host:10001``); by default the running one, or a
            local cluster started for this call and shut down after it.

    Returns:
        The report, as ``procflow run --report`` writes it.

    Raises:
        RayUnavailableError: Ray Data is not installed.
    """
    from procflow._cli.summary import RunStats

    stats = RunStats(pipeline=pipeline or "default", input=str(input), output=str(output))
    config = WorkerConfig(pipeline=absolute_reference(pipeline), phase=phase, keep_blocked=keep_blocked)
    execute_ray(
        str(input),
        str(output),
        config,
        stats,
        on_error=on_error,
        max_line_size=max_line_size,
        workers=workers,
        address=address,
    )
    stats.finish()
    return stats.to_report()


def absolute_reference(reference: str | None) -> str | None:
    """A ``FILE.py:NAME`` reference with its file made absolute, so actors find it wherever they start."""
    if reference is None:
        return None
    location, sep, name = reference.rpartition(":") if reference.count(":") else (reference, "", "")
    if location.endswith(".py") and Path(location).is_file():
        return f"{Path(location).resolve()}{sep}{name}"
    if reference.endswith(".py") and Path(reference).is_file():
        return str(Path(reference).resolve())
    return reference


def execute_ray(
    input: str,
    output: str,
    config: WorkerConfig,
    stats: RunStats,
    *,
    on_error: str,
    max_line_size: int,
    workers: int,
    address: str | None,
    problem: Problem | None = None,
    quiet: bool = True,
) -> None:
    """Run the job on Ray, write ``output`` and count every row into ``stats`` in line order."""
    ray = _ray()
    with _cluster(ray, workers=workers, address=address, quiet=quiet):
        processed = (
            _dataset(ray, input, max_line_size, workers)
            .map_batches(
                ApplyPipeline,
                fn_constructor_kwargs={"config": config},
                compute=ray.data.ActorPoolStrategy(size=workers),
                batch_size=BATCH_ROWS,
                batch_format="pyarrow",
            )
            .sort("line")
            .materialize()
        )
        with contextlib.ExitStack() as files:
            if is_parquet(output):
                sink, table_sink = None, files.enter_context(_parquet_writer(output))
            else:
                sink, table_sink = files.enter_context(_open_output(output)), None
            _count(processed, stats, sink, table_sink, on_error=on_error, problem=problem)


@contextlib.contextmanager
def _parquet_writer(path: str) -> Iterator[Any]:
    """A Parquet file written batch by batch (its folder created), closed at the end."""
    parquet = importlib.import_module("pyarrow.parquet")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pa = _pyarrow()
    schema = pa.schema([(n, pa.int64() if n == "line" else pa.string()) for n in _OUTPUT_COLUMNS])
    writer = parquet.ParquetWriter(path, schema)
    try:
        yield writer
    finally:
        writer.close()


def is_parquet(path: str) -> bool:
    """Whether ``path`` names Parquet data (``.parquet``), not JSONL."""
    return path != "-" and path.rstrip("/").endswith(".parquet")


@contextlib.contextmanager
def _cluster(ray: Any, *, workers: int, address: str | None, quiet: bool) -> Iterator[None]:
    """The cluster to run on: ``address``, the one already initialised, or a local one started here."""
    with warnings.catch_warnings():  # Ray's own deprecated defaults warn when its context is first made
        warnings.simplefilter("ignore", DeprecationWarning)
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = not quiet
    if quiet:
        logging.getLogger("ray.data").setLevel(logging.WARNING)
    if ray.is_initialized() and address is None:
        yield
        return
    if address is not None:
        ray.init(address=address, logging_level=logging.WARNING, log_to_driver=not quiet)
    else:
        ray.init(
            num_cpus=workers, include_dashboard=False, logging_level=logging.WARNING, log_to_driver=not quiet
        )
    try:
        yield
    finally:
        ray.shutdown()


def _dataset(ray: Any, input: str, max_line_size: int, workers: int) -> Any:
    if is_parquet(input):
        # Read before the actors start: with every CPU held by an actor, read tasks would never run.
        # Several blocks per actor, however few files.
        dataset = ray.data.read_parquet(input).select_columns(["line", "json"])
        return dataset.repartition(workers * 4).materialize()
    from procflow._cli._run_io import open_input
    from procflow._cli.jsonl import read_raw_lines

    with open_input(input) as source:
        rows = [
            (number, raw, None if error is None else error.problem)
            for number, raw, error, _ in read_raw_lines(source, max_line_bytes=max_line_size)
        ]
    # Enough blocks for every actor to get several, however small the input.
    size = max(1, min(_BLOCK_ROWS, -(-len(rows) // (workers * 4))))
    pa = _pyarrow()
    tables = [_table(pa, rows[i : i + size]) for i in range(0, len(rows), size)] or [_table(pa, [])]
    return ray.data.from_arrow(tables)


def _pyarrow() -> Any:
    return importlib.import_module("pyarrow")


def _table(pa: Any, rows: list[tuple[int, bytes | None, str | None]]) -> Any:
    return pa.table(
        {
            "line": pa.array([r[0] for r in rows], pa.int64()),
            "raw": pa.array([r[1] for r in rows], pa.binary()),
            "error": pa.array([r[2] for r in rows], pa.string()),
        }
    )


@contextlib.contextmanager
def _open_output(path: str) -> Iterator[IO[str]]:
    from procflow._cli._run_io import open_output

    with open_output(path) as sink:
        yield sink


def _count(
    processed: Any,
    stats: RunStats,
    sink: IO[str] | None,
    table_sink: Any,
    *,
    on_error: str,
    problem: Problem | None,
) -> None:
    """Count (and write) the rows in line order, up to the first failed one with ``on_error="fail"``."""
    for batch in processed.iter_batches(batch_format="pyarrow", batch_size=_BLOCK_ROWS):
        with sigint_deferred():
            try:
                before = stats.lines
                cut = _count_batch(batch.to_pydict(), stats, sink, on_error=on_error, problem=problem)
                if table_sink is not None:  # Parquet keeps failed rows, with their error
                    kept = batch if cut is None else batch.slice(0, stats.lines - before)
                    table_sink.write_table(kept.select(list(_OUTPUT_COLUMNS)))
            finally:
                if sink is not None:
                    sink.flush()
        if cut is not None:
            return


def _count_batch(
    columns: dict[str, list[Any]],
    stats: RunStats,
    sink: IO[str] | None,
    *,
    on_error: str,
    problem: Problem | None,
) -> int | None:
    rows = zip(*(columns[n] for n in _OUTPUT_COLUMNS), strict=True)
    for line, text, error, redactions, warned, blocked_by in rows:
        stats.lines += 1
        if error is not None:
            stats.errors.append({"line": line, "error": error})
            if problem is not None:
                problem(line, error, on_error == "fail")
            if on_error == "fail":
                return int(line)
            stats.skipped += 1
            continue
        if sink is not None:
            sink.write(text)
        stats.written += 1
        stats.count(json.loads(redactions), json.loads(warned), blocked_by)
    return None


def run_ray_command(args: argparse.Namespace, console: Console, stats: RunStats) -> int:
    """``procflow run --engine ray`` with parsed ``args``, counting into ``stats``; the exit code."""
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

    where = "<stdin>" if args.input == "-" else args.input

    def problem(line: int, text: str, stops: bool) -> None:
        if stops:
            fail(console, f"{where}:{line}: {text} (--on-error skip skips bad lines)")
        else:
            warn(console, f"{where}:{line}: {text}; skipped")

    config = WorkerConfig(absolute_reference(args.pipeline), args.phase, args.keep_blocked)
    try:
        execute_ray(
            args.input,
            args.output,
            config,
            stats,
            on_error=args.on_error,
            max_line_size=args.max_line_size,
            workers=args.workers or DEFAULT_RAY_WORKERS,
            address=args.address,
            problem=problem,
            quiet=args.quiet or not console.is_terminal,
        )
    except RayUnavailableError as exc:
        return fail(console, str(exc), code=EXIT_USAGE)
    except KeyboardInterrupt:
        stats.interrupted = True
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        silence_stdout()
        stats.interrupted = True
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        return fail(console, f"{exc.filename or args.output}: {exc.strerror or type(exc).__name__}")
    except Exception as exc:  # the cluster could not be reached, an actor could not load the pipeline
        return fail(console, f"the Ray job failed: {describe_exception(exc)}")
    return EXIT_FAILED if stats.errors and args.on_error == "fail" else EXIT_OK

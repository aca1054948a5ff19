"""``procflow run``: apply a pipeline to stored conversations (JSONL), offline."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from procflow._cli._run_io import parse_size

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["add_parser", "run"]

DEFAULT_MAX_LINE_SIZE = "10MB"


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
    parser.add_argument(
        "--max-line-size",
        type=parse_size,
        default=parse_size(DEFAULT_MAX_LINE_SIZE),
        metavar="SIZE",
        help="longer lines are bad lines, rejected unparsed (e.g. 512KB, 50MB; default: "
        f"{DEFAULT_MAX_LINE_SIZE})",
    )
    parser.add_argument(
        "--workers",
        type=_worker_count,
        metavar="N",
        help="split the input across N worker processes, each loading the pipeline once (default: the "
        "number of cores for an input file of 1 MB or more, else 1; 1 runs in this process)",
    )
    parser.add_argument(
        "--unordered",
        action="store_true",
        help="with --workers: write conversations as workers finish them, not in input order",
    )
    parser.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local: this machine (default); ray: Ray Data, --workers actors (default 2), JSONL or "
        ".parquet in and out (needs procflow[ray])",
    )
    parser.add_argument(
        "--address",
        metavar="ADDR",
        help="with --engine ray: an existing Ray cluster (auto, ray://HOST:10001); default: a local one",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary table")
    parser.set_defaults(handler=run)


def _start_workers_early(args: argparse.Namespace) -> None:
    """With workers ahead, start their fork server now: it loads on the other core while this one
    imports the job's machinery (a run that turns out not to need it only wastes that server's start)."""
    import contextlib
    import os

    from procflow._scale._start import start_forkserver, workers_for

    try:
        size = None if args.input == "-" else os.stat(args.input).st_size
    except OSError:
        return  # the job says what is wrong with the input
    if workers_for(args.workers, size) > 1:
        with contextlib.suppress(OSError):  # the pool's own start says what went wrong
            start_forkserver(args.pipeline)


def _worker_count(text: str) -> int:
    """``--workers N``: a whole number of at least 1 (for argparse: a bad value is a usage error)."""
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of workers; give a whole number, 1 or more"
        )
    return count


def run(args: argparse.Namespace, console: Console) -> int:
    """Run the ``procflow run`` command; return the exit code."""
    if args.engine == "local":
        _start_workers_early(args)
    from procflow._cli._run_job import run_job

    return run_job(args, console)

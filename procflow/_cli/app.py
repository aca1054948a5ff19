"""The ``procflow`` command: parse the arguments and dispatch to a subcommand.

Only what ``procflow --help`` needs is imported up front; each subcommand imports its machinery
(rich, the engine, the agent, the renderer) when it runs.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Iterator, Sequence

from procflow._cli.console import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, EXIT_USAGE, silence_stdout

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """Return the parser of the ``procflow`` command and its subcommands."""
    from procflow import __version__
    from procflow._cli import chat_command, check_command, graph_command, run_command, serve_command

    parser = argparse.ArgumentParser(
        prog="procflow",
        description="Run processor pipelines over conversations, draw them, check them, chat through them.",
        epilog="PIPELINE is FILE.py:NAME or MODULE:NAME naming a workflow, a processor, a list of "
        "processors or an agent. See docs/cli.md.",
    )
    parser.add_argument("--version", action="version", version=f"procflow {__version__}")
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also log tripwires and retries (debug events, on stderr)",
    )
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for command in (run_command, graph_command, check_command, chat_command, serve_command):
        command.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``procflow`` command with ``argv`` (default: ``sys.argv[1:]``); return the exit code.

    Ctrl-C at any point — while modules load, a pipeline is imported, or a job runs — exits with 130
    and no traceback; a closed stdout (``| head -1``) exits quietly with 141.
    """
    try:
        try:
            return _main(argv)
        finally:
            # Flushed here, not at interpreter exit, so a closed pipe is noticed where it is handled.
            sys.stdout.flush()
    except KeyboardInterrupt:
        sys.stderr.write("\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        silence_stdout()
        return EXIT_BROKEN_PIPE


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    try:
        from procflow._cli.console import stderr_console

        console = stderr_console()
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] != "rich":
            raise
        sys.stderr.write("error: the procflow command needs its 'cli' extra: pip install 'procflow[cli]'\n")
        return EXIT_USAGE
    with _logging_to_stderr(verbose=args.verbose):
        code: int = args.handler(args, console)
    return code


@contextlib.contextmanager
def _logging_to_stderr(*, verbose: bool) -> Iterator[None]:
    # The command is an application, so it shows procflow's events: on stderr, never in the JSONL on
    # stdout; warnings only unless --verbose. Undone afterwards, so main() can be called again.
    logger = logging.getLogger("procflow")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("procflow: %(levelname)s %(message)s"))
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if verbose else logging.WARNING)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)

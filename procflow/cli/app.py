"""The ``procflow`` command: parse the arguments and dispatch to a subcommand."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

import structlog

from procflow.cli import chat_command, check_command, graph_command, run_command, serve_command
from procflow.cli.console import stderr_console

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """Return the parser of the ``procflow`` command and its subcommands."""
    from procflow import __version__

    parser = argparse.ArgumentParser(
        prog="procflow",
        description="Run processor pipelines over conversations, draw them, check them, chat through them.",
        epilog="PIPELINE is FILE.py:NAME or MODULE:NAME naming a workflow, a processor, a list of "
        "processors or an agent. See docs/cli.md.",
    )
    parser.add_argument("--version", action="version", version=f"procflow {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log every tripwire and warning event (on stderr)"
    )
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for command in (run_command, graph_command, check_command, chat_command, serve_command):
        command.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``procflow`` command with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    args = build_parser().parse_args(argv)
    _configure_logging(verbose=args.verbose)
    console = stderr_console()
    try:
        code: int = args.handler(args, console)
    except KeyboardInterrupt:
        console.print()
        return 130
    return code


def _configure_logging(*, verbose: bool) -> None:
    # The command is an application, so it may configure structlog: logs go to stderr, never into the
    # JSONL on stdout, and only warnings unless --verbose.
    structlog.configure(
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        wrapper_class=structlog.make_filtering_bound_logger(logging.INFO if verbose else logging.WARNING),
    )

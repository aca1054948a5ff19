"""Printing errors and warnings on stderr, and the exit codes, the same way in every subcommand."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "describe_exception",
    "fail",
    "silence_stdout",
    "stderr_console",
    "warn",
]

EXIT_OK = 0
"""Success, blocked conversations and warnings included."""
EXIT_FAILED = 1
"""The job failed: a bad line or processor error, an unwritable output, an error found by ``check``."""
EXIT_USAGE = 2
"""The job could not start: bad arguments, a pipeline that cannot be loaded, an unreadable input."""
EXIT_INTERRUPTED = 130
"""Ctrl-C (128 + SIGINT); what was written stays written."""
EXIT_BROKEN_PIPE = 141
"""The reader of stdout went away (``| head -1``), as for a program stopped by SIGPIPE (128 + 13)."""


def stderr_console() -> Console:
    """Return the console all diagnostics, progress bars and summaries go to (stdout is for data)."""
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def fail(console: Console, message: str, *, code: int = EXIT_FAILED) -> int:
    """Print ``error: message`` and return ``code``, the exit status to use."""
    console.print("[bold red]error:[/] ", end="")
    console.print(message, markup=False, emoji=False)
    return code


def warn(console: Console, message: str) -> None:
    """Print ``warning: message``."""
    console.print("[yellow]warning:[/] ", end="")
    console.print(message, markup=False, emoji=False)


def describe_exception(exc: BaseException) -> str:
    """Name an exception without its message (which may quote private text): type and where raised.

    procflow's own errors are described in full: their messages never quote message text.
    """
    import traceback
    from pathlib import Path

    from procflow.errors import ProcessorFailedError, ProcflowError

    # A processor that raised fails closed with ProcessorFailedError: name what it raised, and where.
    failed = exc if isinstance(exc, ProcessorFailedError) else None
    if failed is not None:
        exc = failed.original
    elif isinstance(exc, ProcflowError):
        return f"{type(exc).__name__}: {exc}"
    package = Path(__file__).resolve().parent.parent
    frames = traceback.extract_tb(exc.__traceback__)
    outside = [f for f in frames if not Path(f.filename).resolve().is_relative_to(package)]
    where = (outside or frames)[-1:] if frames else []
    at = f" at {Path(where[0].filename).name}:{where[0].lineno}" if where else ""
    by = f" in processor {failed.processor_id!r} ({failed.hook})" if failed is not None else ""
    return f"{type(exc).__name__} raised{at}{by} (its message is not shown: it may quote the conversation)"


def silence_stdout() -> None:
    """Point stdout at the null device, so the interpreter's last flush cannot fail on a closed pipe."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, fd)
    os.close(null)

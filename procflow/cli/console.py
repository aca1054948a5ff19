"""Printing errors and warnings on stderr, the same way in every subcommand."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

__all__ = ["fail", "stderr_console", "warn"]


def stderr_console() -> Console:
    """Return the console all diagnostics, progress bars and summaries go to (stdout is for data)."""
    return Console(stderr=True, highlight=False, soft_wrap=True)


def fail(console: Console, message: str, *, code: int = 1) -> int:
    """Print ``error: message`` and return ``code``, the exit status to use."""
    console.print(f"[bold red]error:[/] {escape(message)}")
    return code


def warn(console: Console, message: str) -> None:
    """Print ``warning: message``."""
    console.print(f"[yellow]warning:[/] {escape(message)}")

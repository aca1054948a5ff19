"""The files of ``procflow run``: opening input and output, the ``--report`` file, the size option."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["input_size", "open_input", "open_output", "parse_size", "report_problem", "write_report"]

_SIZE = re.compile(r"(?i)\s*(\d+(?:\.\d+)?)\s*(b|kb?|mb?|gb?|kib|mib|gib)?\s*")
_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "m": 1000**2,
    "mb": 1000**2,
    "g": 1000**3,
    "gb": 1000**3,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
}


def parse_size(text: str) -> int:
    """``10MB``, ``512KiB``, ``1000`` → bytes (for argparse: a bad value is a usage error)."""
    match = _SIZE.fullmatch(text)
    if match is None or float(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size; write e.g. 10MB, 512KiB or 1000000")
    return int(float(match.group(1)) * _UNITS[(match.group(2) or "").lower()])


def input_size(stream: IO[bytes]) -> float | None:
    """The size of a regular input file in bytes, for the progress bar (``None`` for a pipe)."""
    try:
        return float(Path(stream.name).stat().st_size) if isinstance(stream.name, str) else None
    except (OSError, AttributeError):
        return None


@contextlib.contextmanager
def open_input(path: str) -> Iterator[IO[bytes]]:
    """``path`` opened for binary reading, or stdin for ``-``."""
    if path == "-":
        yield sys.stdin.buffer
        return
    with open(path, "rb") as stream:
        yield stream


@contextlib.contextmanager
def open_output(path: str) -> Iterator[IO[str]]:
    """``path`` opened for UTF-8 writing (its folder created), or stdout for ``-``."""
    if path == "-":
        reconfigure = getattr(sys.stdout, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(encoding="utf-8")
        yield sys.stdout
        return
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", encoding="utf-8", newline="\n") as stream:
        yield stream


def report_problem(path: Path) -> str | None:
    """Why the report could not be written to ``path``, checked before the run; ``None`` when it can."""
    if path.is_dir():
        return "it is a directory"
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"its folder cannot be created ({exc.strerror or type(exc).__name__})"
    if not os.access(folder, os.W_OK | os.X_OK):
        return "its folder is not writable"
    if path.exists() and not os.access(path, os.W_OK):
        return "the file is not writable"
    return None


def write_report(path: Path, report: dict[str, Any]) -> str | None:
    """Write ``report`` as JSON to ``path``; return why it failed, or ``None``."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None

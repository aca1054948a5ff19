"""How many worker processes ``procflow run`` uses, and starting their fork server before they are needed.

This module imports nothing but the standard library, so the command can decide and start the
workers' fork server before it imports its own (heavy) machinery: the server's interpreter then
loads the worker modules, and warms the bundled guard, on the other core while the parent starts.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os

__all__ = ["AUTO_WORKERS_MIN_BYTES", "cpu_count", "start_forkserver", "start_method", "workers_for"]

AUTO_WORKERS_MIN_BYTES = 1 << 20
"""Without ``--workers``, inputs smaller than this run in one process: starting workers costs more."""

_PRELOAD = ("procflow._scale._workers", "procflow._cli._run_job", "procflow._cli.defaults")
_WARM = "procflow._scale._warm"


def cpu_count() -> int:
    """The number of cores this process may use (its CPU affinity where the platform tells it)."""
    getter = getattr(os, "process_cpu_count", None)
    if getter is not None:
        return int(getter() or 1)
    with contextlib.suppress(AttributeError, OSError):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def workers_for(requested: int | None, size: float | None) -> int:
    """The worker count: ``--workers`` when given, else the cores for an input file of ``size`` ≥ 1 MiB.

    Args:
        requested: ``--workers`` (``None`` when not given).
        size: The input file's size in bytes (``None`` for stdin or a pipe).
    """
    if requested is not None:
        return requested
    if size is None or size < AUTO_WORKERS_MIN_BYTES:
        return 1
    return cpu_count()


def start_method() -> str:
    """``forkserver`` where the platform has it, else ``spawn``."""
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def start_forkserver(pipeline: str | None) -> None:
    """Set what the fork server preloads and start it now, without waiting for it (no-op on ``spawn``).

    The server imports the worker modules once; for the bundled guard (``pipeline`` is ``None``) it also
    builds the guard and runs one conversation through it (:mod:`procflow._scale._warm`), so that every
    worker forked from it starts with the tokenizer loaded. A server already running is kept as it is.
    """
    if start_method() != "forkserver":
        return
    preload = [*_PRELOAD, _WARM] if pipeline is None else list(_PRELOAD)
    multiprocessing.get_context("forkserver").set_forkserver_preload(preload)
    from multiprocessing import forkserver

    forkserver.ensure_running()

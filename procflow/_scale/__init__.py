"""Scale-out for ``procflow run``: worker processes on one machine, and Ray Data across a cluster.

``procflow run --workers N`` splits the input across N processes (:func:`run_with_workers`);
``procflow run --engine ray`` and :func:`run_ray` run the same pipeline over a dataset with Ray Data.
See ``docs/scale-out.md``.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

from procflow._scale._run import run_with_workers
from procflow._scale._workers import cpu_count

if _typing.TYPE_CHECKING:
    from procflow._scale._ray import DEFAULT_RAY_WORKERS, RayUnavailableError, run_ray, run_ray_command

__all__ = [
    "DEFAULT_RAY_WORKERS",
    "RayUnavailableError",
    "cpu_count",
    "run_ray",
    "run_ray_command",
    "run_with_workers",
]

_RAY_NAMES = ("DEFAULT_RAY_WORKERS", "RayUnavailableError", "run_ray", "run_ray_command")


def __getattr__(name: str) -> object:
    # The Ray engine's module loads on first use (it never imports Ray itself until a job runs).
    if name not in _RAY_NAMES:
        raise AttributeError(f"module 'procflow._scale' has no attribute {name!r}")
    value = getattr(_importlib.import_module("procflow._scale._ray"), name)
    globals()[name] = value
    return value

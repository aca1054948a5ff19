"""Scale-out for ``procflow run``: worker processes on one machine, and Ray Data across a cluster.

``procflow run --workers N`` splits the input across N processes (:func:`run_with_workers`);
``procflow run --engine ray`` and :func:`run_ray` run the same pipeline over a dataset with Ray Data.
See ``docs/scale-out.md``.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from procflow._scale._ray import DEFAULT_RAY_WORKERS, RayUnavailableError, run_ray, run_ray_command
    from procflow._scale._run import run_with_workers
    from procflow._scale._start import cpu_count

__all__ = [
    "DEFAULT_RAY_WORKERS",
    "RayUnavailableError",
    "cpu_count",
    "run_ray",
    "run_ray_command",
    "run_with_workers",
]

_MODULES = {
    "DEFAULT_RAY_WORKERS": "procflow._scale._ray",
    "RayUnavailableError": "procflow._scale._ray",
    "cpu_count": "procflow._scale._start",
    "run_ray": "procflow._scale._ray",
    "run_ray_command": "procflow._scale._ray",
    "run_with_workers": "procflow._scale._run",
}


def __getattr__(name: str) -> object:
    # Each module loads on first use: the command decides on workers and starts their fork server
    # (procflow._scale._start, standard library only) before it imports the rest; the Ray engine's
    # module never imports Ray itself until a job runs.
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'procflow._scale' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value

"""Scale-out for ``procflow run``: worker processes on one machine, and Ray Data across a cluster.

``procflow run --workers N`` splits the input across N processes (:func:`run_with_workers`);
``procflow run --engine ray`` and :func:`run_ray` run the same pipeline over a dataset with Ray Data.
See ``docs/scale-out.md``.
"""

from __future__ import annotations

from procflow._scale._run import run_with_workers
from procflow._scale._workers import cpu_count

__all__ = ["cpu_count", "run_with_workers"]

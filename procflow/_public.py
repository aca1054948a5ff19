"""Give public names their public path: ``__module__`` of each class and function a public package
exports is rewritten to that package, so reprs, pickles and tracebacks name ``procflow.processors``
rather than the private module that defines it."""

from __future__ import annotations

import types
from collections.abc import Iterable, Mapping

__all__ = ["publish"]


def publish(package: str, namespace: Mapping[str, object], names: Iterable[str]) -> None:
    """Set ``__module__`` to ``package`` for every class or function in ``names`` defined in procflow.

    Only objects exported under their own name are rewritten (pickle looks them up as
    ``package.name``); constants and type aliases have no ``__module__`` of their own and are skipped.
    """
    for name in names:
        value = namespace[name]
        if not isinstance(value, type | types.FunctionType):
            continue
        if value.__qualname__ == name and value.__module__.startswith("procflow."):
            value.__module__ = package


def publish_root(package: str, namespace: Mapping[str, object]) -> None:
    """Rewrite, to ``procflow``, the names the package root loads lazily from private ``package``."""
    import procflow  # the parent package: already imported

    publish("procflow", namespace, [name for name, home in procflow._LAZY.items() if home == package])

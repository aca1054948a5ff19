"""Every package's ``__all__`` is sorted and lists every public name it exposes."""

from __future__ import annotations

import importlib
import pkgutil
import types

import pytest

import procflow


def _isort_key(name: str) -> tuple[int, str]:
    """Ruff's RUF022 order: CONSTANTS, then CamelCase, then the rest, each alphabetical."""
    if name.isupper():
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


def _packages() -> list[str]:
    names = ["procflow"]
    for info in pkgutil.walk_packages(procflow.__path__, "procflow."):
        if info.ispkg and not info.name.rsplit(".", 1)[-1].startswith("_"):
            names.append(info.name)
    return names


@pytest.mark.parametrize("name", _packages())
def test_all_is_sorted_and_complete(name: str) -> None:
    """__all__ is sorted and covers every public, non-module attribute of the package."""
    module = importlib.import_module(name)
    exported = list(getattr(module, "__all__", []))
    assert exported == sorted(exported, key=_isort_key), f"{name}.__all__ is not sorted"
    public = {
        attr
        for attr, value in vars(module).items()
        if not attr.startswith("_") and not isinstance(value, types.ModuleType) and attr != "annotations"
    }
    missing = public - set(exported)
    assert not missing, f"{name} exposes {sorted(missing)} without listing them in __all__"
    for attr in exported:
        assert hasattr(module, attr), f"{name}.__all__ lists {attr!r} which does not exist"

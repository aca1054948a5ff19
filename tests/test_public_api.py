"""Every package's ``__all__`` is sorted and lists every public name it exposes; every public package has a
reference page in the docs."""

from __future__ import annotations

import importlib
import pkgutil
import re
import types
from pathlib import Path

import pytest

import procflow


def _isort_key(name: str) -> tuple[int, str]:
    """Ruff's RUF022 order: CONSTANTS, then CamelCase, then the rest, each alphabetical."""
    if name.isupper():
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


ROOT = Path(__file__).resolve().parent.parent


def _is_public(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split("."))


def _packages() -> list[str]:
    names = ["procflow"]
    for info in pkgutil.walk_packages(procflow.__path__, "procflow."):
        if info.ispkg and _is_public(info.name):
            names.append(info.name)
    return names


def _documented() -> dict[str, str]:
    """Each module a ``::: name`` block of docs/reference/ documents, with the page's name."""
    found: dict[str, str] = {}
    for page in sorted(ROOT.joinpath("docs", "reference").glob("*.md")):
        for name in re.findall(r"^::: ([\w.]+)", page.read_text(encoding="utf-8"), re.MULTILINE):
            found.setdefault(name, page.name)
    return found


def _public_modules() -> list[str]:
    """The public packages, at any depth, and the public modules directly under ``procflow``."""
    top = [
        info.name
        for info in pkgutil.iter_modules(procflow.__path__, "procflow.")
        if not info.ispkg and _is_public(info.name)
    ]
    return sorted([*_packages(), *top])


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


@pytest.mark.parametrize("name", _public_modules())
def test_every_public_package_has_a_reference_page(name: str) -> None:
    """A public package (or top-level module) has a docs/reference/ page in mkdocs.yml's nav."""
    documented = _documented()
    assert name in documented, (
        f"{name} is public but undocumented: add docs/reference/<page>.md holding '::: {name}' and list "
        "it under 'API reference' in mkdocs.yml (or make the package private: _name)"
    )
    nav = ROOT.joinpath("mkdocs.yml").read_text(encoding="utf-8")
    assert f"reference/{documented[name]}" in nav, (
        f"mkdocs.yml's nav does not list reference/{documented[name]}"
    )


def test_every_reference_page_documents_a_public_module() -> None:
    """Each reference page's first ``:::`` block names a public module (none private or gone)."""
    public = set(_public_modules())
    stale = []
    for page in sorted(ROOT.joinpath("docs", "reference").glob("*.md")):
        names = re.findall(r"^::: ([\w.]+)", page.read_text(encoding="utf-8"), re.MULTILINE)
        if names and names[0] not in public:
            stale.append(f"{page.name}: {names[0]}")
    assert stale == []

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


CORE_PACKAGES = (
    "procflow",
    "procflow.errors",
    "procflow.models",
    "procflow.processors",
    "procflow.testing",
    "procflow.workflows",
)
"""The public packages of the core; ``memory``, ``cache`` and ``server`` are features, counted apart."""

FEATURE_NAMES = frozenset(
    {
        # LLM-backed guards
        "DEFAULT_GUARD_MODEL",
        "JUDGE_USAGE_KEY",
        "STRUCTURED_OUTPUT_KEY",
        "JudgeUsage",
        "LanguageDetector",
        "ModerationProcessor",
        "PIIDetector",
        "PromptInjectionDetector",
        "StructuredOutputProcessor",
        "SystemPromptScrubber",
        # response cache and cost guard
        "DEFAULT_MODEL_PRICES",
        "RESPONSE_CACHE_CONTEXT_KEY",
        "CacheBackendError",
        "CacheError",
        "CacheValueError",
        "CostGuardProcessor",
        "ModelIdentity",
        "ModelPrice",
        "ResponseCache",
        "ResponseCacheKeyInputs",
        "build_response_cache_key",
        # memory
        "MemoryStorageError",
    }
)
"""Names of the memory, cache and guard features that live in core packages (they come on top)."""

CORE_NAME_BUDGET = 120


def _core_names() -> set[str]:
    names: set[str] = set()
    for package in CORE_PACKAGES:
        names.update(importlib.import_module(package).__all__)
    return names


def test_the_core_surface_stays_within_its_name_budget() -> None:
    """At most 120 public names across the core packages (the shape issue), feature names on top."""
    names = _core_names()
    assert names >= FEATURE_NAMES, f"FEATURE_NAMES lists names no package exports: {FEATURE_NAMES - names}"
    core = names - FEATURE_NAMES
    assert len(core) <= CORE_NAME_BUDGET, f"{len(core)} public names in the core packages: {sorted(core)}"


def test_only_the_listed_packages_are_public() -> None:
    """Every public package is a core or a feature package; everything else is private (``_name``)."""
    assert set(_packages()) == {
        *CORE_PACKAGES,
        "procflow.cache",
        "procflow.memory",
        "procflow.server",
    } - {"procflow.errors"}


@pytest.mark.parametrize("name", [*_packages(), "procflow.errors"])
def test_public_classes_and_functions_name_their_public_home(name: str) -> None:
    """``__module__`` of an exported class or function is a public module that really exports it."""
    module = importlib.import_module(name)
    wrong = []
    for attr in module.__all__:
        value = getattr(module, attr)
        if not isinstance(value, type | types.FunctionType):
            continue
        home = value.__module__
        if not _is_public(home) or getattr(importlib.import_module(home), attr, None) is not value:
            wrong.append(f"{attr}: {home}")
    assert wrong == []


def test_public_objects_survive_pickling_by_their_public_path() -> None:
    """A message, a chunk and a processor pickle and load through their rewritten ``__module__``."""
    import pickle

    from procflow import Chunk, Message, MessageContent, TextPart
    from procflow.processors import RegexFilterProcessor

    message = Message(role="user", content=MessageContent(parts=[TextPart(text="hola, 你好")]))
    assert pickle.loads(pickle.dumps(message)) == message
    chunk = Chunk("text-delta", {"text": "bonjour"})
    assert pickle.loads(pickle.dumps(chunk)).payload == {"text": "bonjour"}
    guard = pickle.loads(pickle.dumps(RegexFilterProcessor(presets=["pii"])))
    assert type(guard) is RegexFilterProcessor

"""Loading a pipeline from a reference: ``path/to/file.py:name`` or ``package.module:name``.

The named object may be a workflow, a processor, a list of processors, an agent, or a function taking
no arguments that returns one of those.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from procflow.errors import ConfigurationError
from procflow.processors._base import HOOK_NAMES

__all__ = ["DEFAULT_PIPELINE", "LoadedPipeline", "PipelineKind", "PipelineLoadError", "load_pipeline"]

DEFAULT_PIPELINE = "procflow._cli.defaults:default_pipeline"
"""The reference ``procflow run`` uses when no ``--pipeline`` is given: the bundled guard."""

DEFAULT_NAME = "pipeline"
"""The attribute looked up when a reference names a module or file but no object."""

PipelineKind = Literal["processor", "processors", "workflow", "agent"]

_WANTED = "a workflow, a processor, a list of processors or an agent"


class PipelineLoadError(ConfigurationError):
    """A pipeline reference could not be resolved; the message names what was looked for.

    Attributes:
        reference: The reference as given.
        fix: What to do about it, when there is a clear next step.
    """

    def __init__(self, reference: str, problem: str, *, fix: str | None = None) -> None:
        self.reference = reference
        self.problem = problem
        self.fix = fix
        text = f"cannot load pipeline {reference!r}: {problem}"
        if fix:
            text = f"{text}{'' if text.endswith(('.', '?')) else '.'} {fix}"
        super().__init__(text)


@dataclass(frozen=True, slots=True)
class LoadedPipeline:
    """A resolved pipeline reference.

    Attributes:
        reference: The reference it was loaded from.
        kind: What the reference named.
        target: The named object itself (after calling it, for a factory).
        input_processors: What runs on user and system turns.
        output_processors: What runs on assistant turns.
    """

    reference: str
    kind: PipelineKind
    target: Any
    input_processors: tuple[Any, ...]
    output_processors: tuple[Any, ...]

    @property
    def processors(self) -> tuple[Any, ...]:
        """Every distinct processor of the pipeline, input ones first."""
        seen: dict[int, Any] = {}
        for processor in (*self.input_processors, *self.output_processors):
            seen.setdefault(id(processor), processor)
        return tuple(seen.values())


def load_pipeline(reference: str | None = None) -> LoadedPipeline:
    """Import the object ``reference`` names and classify it.

    Args:
        reference: ``path/to/file.py:name`` or ``package.module:name``; without ``:name`` the object
            ``pipeline`` is looked up. ``None`` loads the bundled default guard.

    Raises:
        PipelineLoadError: the module or object cannot be found or is not a pipeline.
    """
    reference = reference or DEFAULT_PIPELINE
    location, _, name = reference.rpartition(":") if ":" in reference else (reference, "", "")
    if not location:
        raise PipelineLoadError(
            reference, "the reference names no module or file", fix="Write it as FILE.py:NAME or MODULE:NAME"
        )
    module = _import(reference, location)
    target = _lookup(reference, module, location, name or DEFAULT_NAME, defaulted=not name)
    return classify(reference, target)


def _is_file_reference(location: str) -> bool:
    return location.endswith(".py") or "/" in location or "\\" in location


def _import(reference: str, location: str) -> ModuleType:
    if _is_file_reference(location):
        return _import_file(reference, Path(location))
    # As with `python -m`, modules in the current directory are importable by name.
    cwd = str(Path.cwd())
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(location)
    except ModuleNotFoundError as exc:
        if exc.name is not None and location.startswith(exc.name):
            raise PipelineLoadError(
                reference,
                f"no module named {exc.name!r} (looked for module {location!r} on the Python path)",
                fix="Check the spelling, install the package, or give a file path (path/to/file.py:NAME)",
            ) from None
        raise _failed(reference, f"module {location!r}", _origin(location), exc) from exc
    except Exception as exc:
        raise _failed(reference, f"module {location!r}", _origin(location), exc) from exc


def _origin(location: str) -> Path | None:
    """The file module ``location`` was loaded from, to point at the line of it that raised."""
    module = sys.modules.get(location)
    origin = getattr(getattr(module, "__spec__", None), "origin", None)
    if origin is None:
        try:
            spec = importlib.util.find_spec(location)
        except (ImportError, ValueError):
            return None
        origin = spec.origin if spec is not None else None
    return Path(origin).resolve() if origin and origin != "built-in" else None


def _import_file(reference: str, path: Path) -> ModuleType:
    resolved = path.resolve()
    if not resolved.is_file():
        raise PipelineLoadError(
            reference,
            f"file {str(path)!r} does not exist (looked for {resolved})",
            fix="Give a path relative to the current directory, e.g. examples/pipeline.py:pipeline",
        )
    module_name = f"_procflow_pipeline_{resolved.stem}"
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    if spec is None or spec.loader is None:
        raise PipelineLoadError(reference, f"{str(path)!r} cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    # The file's own directory goes on the path so its sibling modules import as in a script.
    folder = str(resolved.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise _failed(reference, str(path), resolved, exc) from exc
    return module


def _failed(reference: str, what: str, origin: Path | None, exc: Exception) -> PipelineLoadError:
    """Describe an exception raised while a pipeline module ran, with the line of it that raised."""
    where = what
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if origin is not None and Path(f.filename) == origin] or frames[-1:]
    if isinstance(exc, SyntaxError) and exc.lineno is not None:
        where = f"{Path(exc.filename or what).name}:{exc.lineno}"
    elif mine:
        where = (
            f"{what}:{mine[-1].lineno}" if origin is not None else f"{mine[-1].filename}:{mine[-1].lineno}"
        )
    return PipelineLoadError(reference, f"{where} raised {type(exc).__name__}: {exc}")


def _lookup(reference: str, module: ModuleType, location: str, name: str, *, defaulted: bool) -> Any:
    target: Any = module
    for index, attribute in enumerate(name.split(".")):
        if not hasattr(target, attribute):
            where = location if index == 0 else ".".join(name.split(".")[:index])
            defined = [n for n in vars(target) if not n.startswith("_")] if index == 0 else dir(target)
            close = difflib.get_close_matches(attribute, defined, n=3)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            why = " (no :NAME was given, so the default name was tried)" if defaulted else ""
            raise PipelineLoadError(
                reference,
                f"{where!r} has no attribute {attribute!r}{why}{hint}",
                fix=f"Name {_WANTED} defined there, e.g. {location}:NAME",
            )
        target = getattr(target, attribute)
    if inspect.isfunction(target) and not _required_parameters(target):
        try:
            target = target()
        except PipelineLoadError:
            raise
        except Exception as exc:
            raise PipelineLoadError(
                reference, f"calling {name}() raised {type(exc).__name__}: {exc}"
            ) from exc
    return target


def _required_parameters(fn: Any) -> list[str]:
    return [
        p.name
        for p in inspect.signature(fn).parameters.values()
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]


def is_processor(value: Any) -> bool:
    """Whether ``value`` has a string ``id`` and at least one processor hook."""
    if inspect.isclass(value):
        return False
    pid = getattr(value, "id", None)
    return isinstance(pid, str) and any(callable(getattr(value, h, None)) for h in HOOK_NAMES)


def is_workflow(value: Any) -> bool:
    """Whether ``value`` is a procflow workflow."""
    return _is_instance(value, "procflow.workflows", "Workflow")


def is_agent(value: Any) -> bool:
    """Whether ``value`` is a procflow agent."""
    return _is_instance(value, "procflow._agent", "Agent")


def _is_instance(value: Any, module: str, name: str) -> bool:
    # Only an imported class can have instances: when its package is not loaded yet, the answer is
    # no, and the check does not import it (the bundled guard never loads the agent or the engine's
    # workflow layer).
    kind = getattr(sys.modules.get(module), name, None)
    return isinstance(kind, type) and isinstance(value, kind)


def classify(reference: str, target: Any) -> LoadedPipeline:
    """Wrap ``target`` as a :class:`LoadedPipeline`, or say why it is not a pipeline."""
    if is_agent(target):
        inputs = _agent_processors(reference, target, "input_processors")
        outputs = _agent_processors(reference, target, "output_processors")
        return LoadedPipeline(reference, "agent", target, inputs, outputs)
    if is_workflow(target):
        return LoadedPipeline(reference, "workflow", target, (target,), (target,))
    if is_processor(target):
        return LoadedPipeline(reference, "processor", target, (target,), (target,))
    if isinstance(target, list | tuple):
        bad = [f"#{i} ({type(p).__name__})" for i, p in enumerate(target) if not is_processor(p)]
        if bad:
            raise PipelineLoadError(
                reference,
                f"the list holds items that are not processors: {', '.join(bad)}",
                fix="A processor needs a string 'id' and at least one hook such as process_input",
            )
        return LoadedPipeline(reference, "processors", list(target), tuple(target), tuple(target))
    raise PipelineLoadError(
        reference,
        f"it names {_describe(target)}, not {_WANTED}",
        fix="Point the reference at a processor object, a list of them, a committed workflow or an agent",
    )


def _agent_processors(reference: str, agent: Any, attribute: str) -> tuple[Any, ...]:
    value = getattr(agent, attribute, None) or ()
    if callable(value) and not isinstance(value, list | tuple):
        raise PipelineLoadError(
            reference,
            f"the agent's {attribute} is a function of the request context",
            fix="Give the agent a list of processors, or reference that list directly",
        )
    return tuple(value)


def _describe(value: Any) -> str:
    if inspect.ismodule(value):
        return f"the module {value.__name__!r}"
    if inspect.isclass(value):
        return f"the class {value.__name__} (create an instance: {value.__name__}(...))"
    if inspect.isfunction(value):
        return f"the function {value.__name__}() which needs arguments {_required_parameters(value)}"
    return f"a {type(value).__name__}"

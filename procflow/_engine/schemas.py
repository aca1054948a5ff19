"""Step schemas: compatibility between steps at build time, validation of inputs at run time, names.

A schema is any type pydantic understands (``int``, ``list[str]``, a ``BaseModel``, a ``TypedDict``…)
or ``Any``. Compatibility is checked conservatively: the build fails only when a step certainly cannot
accept what the step before it returns; constructs it cannot judge (``Literal``, ``TypedDict``…) pass.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard, Union, get_args, get_origin

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.errors import PydanticSchemaGenerationError

from procflow._error_rules import format_validation_error
from procflow.errors import ConfigurationError, WorkflowRunError

__all__ = [
    "ParallelSchema",
    "accepts",
    "element_schema",
    "make_validator",
    "schema_name",
    "union_of",
]

_UNIONS: tuple[Any, ...] = (Union, types.UnionType)
_MAPPINGS: tuple[Any, ...] = (dict, Mapping, typing.Mapping, typing.Dict)  # noqa: UP006 - matched, not used
_NOT_LISTS: tuple[type, ...] = (str, bytes, bytearray, dict, Mapping, BaseModel)


@dataclass(frozen=True, slots=True)
class ParallelSchema:
    """The schema of what a parallel block returns: each branch's output schema by step id."""

    fields: tuple[tuple[str, Any], ...]

    @property
    def keys(self) -> tuple[str, ...]:
        """The step ids, in branch order."""
        return tuple(name for name, _ in self.fields)


def _is_model(schema: Any) -> TypeGuard[type[BaseModel]]:
    return isinstance(schema, type) and issubclass(schema, BaseModel)


def _required_fields(model: type[BaseModel]) -> set[str]:
    return {
        field.alias or name if isinstance(field.alias, str) else name
        for name, field in model.model_fields.items()
        if field.is_required()
    }


def _model_names(model: type[BaseModel]) -> set[str]:
    names = set(model.model_fields)
    names.update(f.alias for f in model.model_fields.values() if isinstance(f.alias, str))
    return names


def accepts(target: Any, source: Any) -> bool:
    """Whether a step whose input schema is ``target`` can take a value of schema ``source``."""
    if target is Any or target is object or source is Any or target == source:
        return True
    if isinstance(source, ParallelSchema):
        return _accepts_parallel(target, source)
    if isinstance(target, ParallelSchema):
        return True
    t_origin, s_origin = get_origin(target), get_origin(source)
    if t_origin in _UNIONS:
        return any(accepts(arg, source) for arg in get_args(target))
    if s_origin in _UNIONS:
        return all(accepts(target, arg) for arg in get_args(source))
    if t_origin is typing.Annotated:
        return accepts(get_args(target)[0], source)
    if s_origin is typing.Annotated:
        return accepts(target, get_args(source)[0])
    if isinstance(target, type) and isinstance(source, type):
        return _accepts_class(target, source)
    if t_origin is not None or s_origin is not None:
        return _accepts_generic(target, source)
    return True


def _accepts_parallel(target: Any, source: ParallelSchema) -> bool:
    if target in _MAPPINGS or get_origin(target) in _MAPPINGS:
        return True
    if get_origin(target) in _UNIONS:
        return any(_accepts_parallel(arg, source) for arg in get_args(target))
    if _is_model(target):
        return _required_fields(target) <= set(source.keys)
    return not isinstance(target, type)


def _accepts_class(target: Any, source: Any) -> bool:
    try:
        if issubclass(source, target) or (target is float and source is int):
            return True
    except TypeError:  # TypedDict and other classes that refuse class checks: cannot judge
        return True
    if _is_model(target):
        if _is_model(source):
            return _required_fields(target) <= _model_names(source)
        return issubclass(source, dict)
    return False


def _accepts_generic(target: Any, source: Any) -> bool:
    t_base, s_base = get_origin(target) or target, get_origin(source) or source
    if not (isinstance(t_base, type) and isinstance(s_base, type)):
        return True
    if not issubclass(s_base, t_base):
        return False
    t_args, s_args = get_args(target), get_args(source)
    if t_args and s_args and len(t_args) == len(s_args) and t_args[-1] is not Ellipsis:
        return all(accepts(t, s) for t, s in zip(t_args, s_args, strict=True))
    return True


def element_schema(schema: Any) -> Any | None:
    """The item schema of a list-like schema, ``Any`` when unknown, ``None`` when it is not a list."""
    if schema is Any:
        return Any
    if isinstance(schema, ParallelSchema):
        return None
    origin = get_origin(schema)
    if origin in _UNIONS or origin is typing.Annotated:
        return Any
    base = origin or schema
    if not isinstance(base, type):
        return Any
    if issubclass(base, _NOT_LISTS) or not issubclass(base, Iterable):
        return None
    args = get_args(schema)
    return args[0] if args else Any


def union_of(schemas: Iterable[Any]) -> Any:
    """One schema covering every given schema (``Any`` when they cannot be combined)."""
    unique: list[Any] = []
    for schema in schemas:
        if schema is Any or isinstance(schema, ParallelSchema):
            return Any
        if schema not in unique:
            unique.append(schema)
    if len(unique) == 1:
        return unique[0]
    try:
        return Union[tuple(unique)]  # noqa: UP007 - built from a runtime tuple
    except TypeError:
        return Any


def schema_name(schema: Any) -> str:
    """A short readable name: ``int``, ``list[str]``, ``Order``, ``ProcessorStepSchema``, ``{a: int}``."""
    if schema is Any:
        return "Any"
    if schema is None or schema is type(None):
        return "None"
    if isinstance(schema, ParallelSchema):
        return "{" + ", ".join(f"{k}: {schema_name(v)}" for k, v in schema.fields) + "}"
    custom = getattr(schema, "__schema_name__", None)
    if isinstance(custom, str):
        return custom
    origin, args = get_origin(schema), get_args(schema)
    if origin in _UNIONS:
        return " | ".join(schema_name(a) for a in args)
    if origin is typing.Literal:
        return "Literal[" + ", ".join(repr(a) for a in args) + "]"
    if origin is typing.Annotated:
        return schema_name(args[0])
    if origin is not None:
        base = getattr(origin, "__name__", repr(origin))
        return f"{base}[{', '.join('...' if a is Ellipsis else schema_name(a) for a in args)}]"
    return str(getattr(schema, "__name__", repr(schema)))


def make_validator(schema: Any, step_id: str) -> Callable[[Any], Any] | None:
    """Build the run-time input check of a step; ``None`` when there is nothing to check.

    Classes marked ``__fast_schema__ = True`` get an ``isinstance`` check only (no copying, no pydantic);
    other schemas validate (and convert, e.g. a dict into a model) through a pydantic ``TypeAdapter``.

    Raises:
        ConfigurationError: pydantic cannot build a validator for ``schema`` and it is not a class.
    """
    if schema is Any or schema is object:
        return None
    if isinstance(schema, type) and getattr(schema, "__fast_schema__", False):
        return _isinstance_validator(schema, step_id)
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(schema)
    except PydanticSchemaGenerationError as exc:
        if isinstance(schema, type):
            return _isinstance_validator(schema, step_id)
        raise ConfigurationError(
            f"step {step_id!r}: pydantic cannot validate the schema {schema!r}; use a type, a pydantic "
            "model or Any"
        ) from exc
    name = schema_name(schema)

    def validate(value: Any) -> Any:
        try:
            return adapter.validate_python(value)
        except ValidationError as exc:
            problems = format_validation_error(exc, root="input")
            raise WorkflowRunError(
                f"input does not match the step's input schema {name} ({problems}); make the step "
                "before it return that shape, or add a .map(...) that converts it",
                step_id=step_id,
            ) from None  # pydantic's own text quotes the input

    return validate


def _isinstance_validator(schema: type, step_id: str) -> Callable[[Any], Any]:
    name = schema_name(schema)

    def validate(value: Any) -> Any:
        if not isinstance(value, schema):
            raise WorkflowRunError(
                f"input is a {type(value).__name__}, not a {name}; make the step before it return a "
                f"{name} (after a parallel block, pick one with .map(select(...)))",
                step_id=step_id,
            )
        return value

    return validate

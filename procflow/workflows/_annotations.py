"""A step function's schemas from its annotations, and the check of explicit schemas against them.

``def total(ctx: StepContext[Order]) -> int`` has the input schema ``Order`` and the output schema
``int``. Annotations that cannot be read (a forward reference to a class defined inside a function, say)
count as missing: the schema is then ``Any`` unless given explicitly.
"""

from __future__ import annotations

import collections.abc
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any, get_args, get_origin, get_type_hints

from procflow._engine.run_state import StepContext
from procflow._engine.schemas import accepts, schema_name
from procflow.errors import WorkflowDefinitionError

__all__ = ["annotated_schemas", "resolve_schemas"]

_AWAITABLES: tuple[Any, ...] = (
    collections.abc.Awaitable,
    collections.abc.Coroutine,
    typing.Awaitable,
    typing.Coroutine,
)


def _annotated(fn: Callable[..., Any]) -> Callable[..., Any]:
    """What carries ``fn``'s annotations: the function a partial wraps, or an object's ``__call__``."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.isroutine(fn) or inspect.isclass(fn):
        return fn
    call: Callable[..., Any] = type(fn).__call__
    return call


_NO_OUTPUT: tuple[Any, ...] = (None, type(None), typing.NoReturn, typing.Never)


def _plain(schema: Any) -> Any:
    """``Any`` for what is no schema: a type variable (a generic step function)."""
    return Any if isinstance(schema, typing.TypeVar) else schema


def _output(schema: Any) -> Any:
    """``Any`` for ``-> None`` and ``-> NoReturn``: steps that only raise or act say nothing of a value."""
    return Any if any(schema is marker for marker in _NO_OUTPUT) else _plain(schema)


def annotated_schemas(fn: Callable[..., Any]) -> tuple[Any, Any]:
    """The ``(input, output)`` schemas ``fn``'s annotations declare, ``Any`` where they say nothing.

    The input comes from the first parameter's ``StepContext[X]``; the output from the return
    annotation (``async def`` functions declare the awaited type; a sync ``-> Awaitable[X]`` gives ``X``;
    ``-> None`` and ``-> NoReturn`` give ``Any``, as a function that only raises is annotated so).
    """
    try:
        hints = get_type_hints(_annotated(fn), include_extras=True)
        params = list(inspect.signature(fn).parameters.values())
    except (NameError, TypeError, ValueError):  # unresolvable forward reference, no signature
        return Any, Any
    input_schema: Any = Any
    if params and params[0].name in hints:
        annotation = hints[params[0].name]
        if get_origin(annotation) is StepContext and get_args(annotation):
            input_schema = _plain(get_args(annotation)[0])
    output_schema: Any = hints.get("return", Any)
    if get_origin(output_schema) in _AWAITABLES and get_args(output_schema):
        output_schema = get_args(output_schema)[-1]
    return input_schema, _output(output_schema)


def resolve_schemas(
    step_id: str, fn: Callable[..., Any], input_schema: Any, output_schema: Any
) -> tuple[Any, Any]:
    """The step's schemas: the explicit ones, checked against the annotations, or the annotations.

    Raises:
        WorkflowDefinitionError: an explicit schema disagrees with the function's annotation.
    """
    annotated_in, annotated_out = annotated_schemas(fn)
    if input_schema is Any:
        input_schema = annotated_in
    elif annotated_in is not Any and not accepts(annotated_in, input_schema):
        raise WorkflowDefinitionError(
            f"input_schema={schema_name(input_schema)} does not match the function's annotation "
            f"StepContext[{schema_name(annotated_in)}]",
            step_id=step_id,
            fix="make the two agree, or drop input_schema= (the annotation is the default)",
        )
    if output_schema is Any:
        output_schema = annotated_out
    elif annotated_out is not Any and not accepts(output_schema, annotated_out):
        raise WorkflowDefinitionError(
            f"output_schema={schema_name(output_schema)} does not match the function's return "
            f"annotation -> {schema_name(annotated_out)}",
            step_id=step_id,
            fix="make the two agree, or drop output_schema= (the annotation is the default)",
        )
    return input_schema, output_schema

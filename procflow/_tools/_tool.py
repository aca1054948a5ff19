"""Function tools: pydantic-validated arguments, sync or async functions, JSON schema for providers."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, get_type_hints, overload

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from procflow._callables import is_async_callable
from procflow._error_rules import format_validation_error
from procflow._messages.request_context import RequestContext
from procflow._messages.writer import StreamWriter
from procflow.errors import ConfigurationError, ToolArgumentsError

__all__ = ["Tool", "ToolContext", "ToolSpec", "tool"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What a provider needs to offer a tool to the model: name, description, JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(slots=True)
class ToolContext:
    """Passed to tools that accept a ``context`` parameter."""

    tool_call_id: str
    request_context: RequestContext = field(default_factory=RequestContext)
    writer: StreamWriter | None = None


ToolFunction = Callable[..., Any] | Callable[..., Awaitable[Any]]

ModelOutputFunction = Callable[[Any], Any] | Callable[[Any], Awaitable[Any]]
"""``to_model_output(result)``: what the model is shown in place of a tool's result."""


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool the model may call.

    Args:
        name: The name the model uses (letters, digits, ``_`` and ``-``).
        description: What the tool does, for the model.
        input_model: The pydantic model the arguments are validated against.
        execute: Called with the validated arguments as keyword arguments (plus ``context`` when the
            function declares it); sync functions run in a worker thread.
        to_model_output: A function of the tool's result (sync or async, kept cheap: it runs in the
            event loop) returning what the model is shown *instead of* the result — a string or a
            JSON-serialisable value, e.g. a short summary of a large record. The raw result stays in
            ``result.tool_results``, the stored message and the UI; the model output is stored next to
            it (``ToolInvocationPart.model_output``), so later turns and ``ToolCallFilter``'s
            ``preserve_model_output`` records use it too. Returning ``None`` shows the raw result.
    """

    name: str
    description: str
    input_model: type[BaseModel]
    execute: ToolFunction | None = None
    wants_context: bool = False
    is_async: bool = False
    to_model_output: ModelOutputFunction | None = None

    def spec(self) -> ToolSpec:
        """Return the provider-facing description of this tool."""
        return ToolSpec(self.name, self.description, self.input_model.model_json_schema())

    def validate_args(self, args: dict[str, Any]) -> BaseModel:
        """Validate the model's arguments; raise :class:`ToolArgumentsError` saying what is wrong."""
        try:
            return self.input_model.model_validate(args)
        except ValidationError as exc:
            raise ToolArgumentsError(
                f"invalid arguments: {format_validation_error(exc, root='arguments')}; call the tool again "
                "with arguments that match its input schema",
                tool_name=self.name,
            ) from None  # pydantic's own text quotes the arguments

    async def call(self, args: dict[str, Any], context: ToolContext) -> Any:
        """Validate ``args`` and run the tool; return its result."""
        if self.execute is None:
            raise ToolArgumentsError(
                "this tool has no execute function (client-side tool)", tool_name=self.name
            )
        validated = self.validate_args(args)
        kwargs = {k: getattr(validated, k) for k in type(validated).model_fields}
        if self.wants_context:
            kwargs["context"] = context
        if self.is_async:
            return await self.execute(**kwargs)
        fn = self.execute
        return await anyio.to_thread.run_sync(lambda: fn(**kwargs))

    async def model_output(self, result: Any) -> Any:
        """What the model is shown for ``result``: ``to_model_output(result)``, or ``None`` for the result."""
        convert = self.to_model_output
        if convert is None:
            return None
        output = convert(result)
        if inspect.isawaitable(output):
            output = await output
        return output


def _annotated(fn: Callable[..., Any]) -> Callable[..., Any]:
    """What carries ``fn``'s parameter annotations: the function a partial wraps, an object's ``__call__``."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.isroutine(fn) or inspect.isclass(fn):
        return fn
    return type(fn).__call__


def _model_from_signature(fn: Callable[..., Any], name: str) -> tuple[type[BaseModel], bool]:
    hints = get_type_hints(_annotated(fn))
    fields: dict[str, Any] = {}
    wants_context = False
    for param in inspect.signature(fn).parameters.values():
        if param.name == "context":
            wants_context = True
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ConfigurationError(f"tool {name!r}: *args/**kwargs cannot be described to a model")
        annotation = hints.get(param.name, Any)
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, default)
    model = create_model(f"{name}_args", __config__=ConfigDict(extra="forbid"), **fields)
    return model, wants_context


@overload
def tool(
    fn: ToolFunction,
    /,
    *,
    name: str | None = ...,
    description: str | None = ...,
    input_model: type[BaseModel] | None = ...,
    to_model_output: ModelOutputFunction | None = ...,
) -> Tool: ...


@overload
def tool(
    fn: None = None,
    /,
    *,
    name: str | None = ...,
    description: str | None = ...,
    input_model: type[BaseModel] | None = ...,
    to_model_output: ModelOutputFunction | None = ...,
) -> Callable[[ToolFunction], Tool]: ...


def tool(
    fn: ToolFunction | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    input_model: type[BaseModel] | None = None,
    to_model_output: ModelOutputFunction | None = None,
) -> Tool | Callable[[ToolFunction], Tool]:
    """Make a :class:`Tool` from a function, as ``tool(fn)``, ``@tool`` or ``@tool(name=...)``.

    Typed: ``tool(fn)`` and ``@tool`` give a :class:`Tool`; ``tool(name=...)`` gives the decorator.

    The arguments schema comes from ``input_model`` or from the function's annotated parameters; the
    description from ``description`` or the docstring's first paragraph. ``to_model_output`` (a
    function of the result) decides what the model is shown instead of the raw result (see
    :class:`Tool`).
    """
    if to_model_output is not None and not callable(to_model_output):
        raise ConfigurationError(
            f"to_model_output must be a function of the tool's result, got {type(to_model_output).__name__}"
        )

    def build(func: ToolFunction) -> Tool:
        tool_name = name or getattr(func, "__name__", None)
        if not tool_name:
            raise ConfigurationError(
                f"a {type(func).__name__} object has no __name__: give the tool one with tool(fn, name=...)"
            )
        doc = inspect.getdoc(func) or ""
        text = description or doc.split("\n\n")[0].strip()
        if not text:
            raise ConfigurationError(
                f"tool {tool_name!r} needs a description (pass description= or a docstring)"
            )
        if input_model is not None:
            model, wants_context = input_model, "context" in inspect.signature(func).parameters
        else:
            model, wants_context = _model_from_signature(func, tool_name)
        return Tool(
            name=tool_name,
            description=text,
            input_model=model,
            execute=func,
            wants_context=wants_context,
            is_async=is_async_callable(func),
            to_model_output=to_model_output,
        )

    if fn is not None:
        return build(fn)
    return build

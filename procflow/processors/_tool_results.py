"""The results of the tools run during a call, judged by input processors before the model reads them.

``process_input`` sees a request's messages once, at the start. A tool's result (a fetched page, a
retrieved document, a looked-up record) is new text the next model call reads, so the input guards
that judge tool traffic also judge each such result once, from ``process_input_step``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Literal, TypeVar

from procflow._messages import Message
from procflow._messages.parts import ToolInvocationPart
from procflow.processors._args import ProcessInputStepArgs, ProcessInputStepResult
from procflow.processors._tool_args import ArgPath, map_strings

__all__ = [
    "RESULT_FIELDS",
    "has_tool_results",
    "is_on_tool_results_only",
    "judge_tool_results",
    "on_tool_results_only",
    "part_strings",
    "rewrite_part",
    "tool_result_strings",
    "withheld",
]

_F = TypeVar("_F", bound=Callable[..., Any])
_Field = TypeVar("_Field", bound=str)

_ONLY = "__procflow_tool_results_only__"

RESULT_FIELDS: tuple[Literal["result", "model_output"], ...] = ("result", "model_output")
"""The fields of a tool-invocation part a tool fills in (``model_output``: what the model is shown)."""


def part_strings(part: ToolInvocationPart, fields: Iterable[str], found: list[str]) -> None:
    """Append every non-empty string inside ``fields`` of ``part`` (at any depth) to ``found``."""
    for name in fields:
        map_strings(getattr(part, name), lambda text, _path: found.append(text))


def tool_result_strings(part: ToolInvocationPart) -> list[str]:
    """Every distinct non-empty string a tool put in its invocation part (its result, its output for
    the model): what the model reads of the tool's work."""
    found: list[str] = []
    part_strings(part, RESULT_FIELDS, found)
    return list(dict.fromkeys(found))


def rewrite_part(
    part: ToolInvocationPart,
    fields: Iterable[_Field],
    change: Callable[[_Field], Callable[[str, ArgPath], str | None]],
) -> ToolInvocationPart:
    """``part`` with each string of each of ``fields`` replaced by ``change(field)(string, path)`` when
    that is not ``None`` (see ``map_strings``); the same object when nothing changed."""
    update: dict[str, Any] = {}
    for name in fields:
        value = getattr(part, name)
        new = map_strings(value, change(name))
        if new is not value:
            update[name] = new
    return part.model_copy(update=update) if update else part


_JUDGED = "judged_tool_results"
"""The ``(message id, tool call id)`` of the tool results judged so far, in the processor's state."""


async def judge_tool_results(
    args: ProcessInputStepArgs,
    judge: Callable[[Message, int, ToolInvocationPart, list[str]], Awaitable[ToolInvocationPart]],
) -> ProcessInputStepResult | None:
    """Run ``judge(message, index, part, strings)`` on each tool result produced during this call,
    once, before the next model call reads it; the messages with the parts it returned, or ``None``
    when none changed.

    Only response messages are looked at: tool results in the input are ``process_input``'s to judge.
    ``judge`` gets the message, the part's index in it, the part and its strings
    (:func:`tool_result_strings`), and returns the part itself or its replacement.
    """
    judged: set[tuple[str, str]] = args.state.setdefault(_JUDGED, set())
    source_of = args.message_list.source_of
    out: list[Message] | None = None
    for index, message in enumerate(args.messages):
        parts = message.content.parts
        new_parts: list[Any] | None = None
        for at, part in enumerate(parts):
            if not isinstance(part, ToolInvocationPart) or part.state != "result":
                continue
            key = (message.id, part.tool_call_id)
            if key in judged or source_of(message.id) != "response":
                continue
            judged.add(key)
            strings = tool_result_strings(part)
            if not strings:
                continue
            new = await judge(message, at, part, strings)
            if new is not part:
                new_parts = new_parts if new_parts is not None else list(parts)
                new_parts[at] = new
        if new_parts is not None:
            out = out if out is not None else list(args.messages)
            content = message.content.model_copy(update={"parts": new_parts})
            out[index] = message.model_copy(update={"content": content})
    return None if out is None else ProcessInputStepResult(messages=out)


def withheld(part: ToolInvocationPart, notice: str) -> ToolInvocationPart:
    """``part`` with ``notice`` as the result the model reads (the call itself stays)."""
    return part.model_copy(update={"result": notice, "model_output": None})


def on_tool_results_only(hook: _F) -> _F:
    """Mark a ``process_input_step`` hook that changes nothing while no response message holds a tool
    result: a processor workflow whose every such hook is marked skips its run for a step until one
    does (the run would change nothing; it costs ~100-300 µs per model step)."""
    setattr(hook, _ONLY, True)
    return hook


def is_on_tool_results_only(hook: object) -> bool:
    """Whether ``hook`` (a function or bound method) was marked with :func:`on_tool_results_only`."""
    return bool(getattr(hook, _ONLY, False))


def has_tool_results(messages: Iterable[Message]) -> bool:
    """Whether any of ``messages`` holds a tool-invocation part with its result."""
    return any(
        isinstance(part, ToolInvocationPart) and part.state == "result"
        for message in messages
        for part in message.content.parts
    )

"""Which tool calls belong to the current run, and how a tool call or result reads as text."""

from __future__ import annotations

from typing import Any

from procflow._messages._tool_json import tool_result_text
from procflow._messages.message_list import MessageList
from procflow._messages.parts import StepStartPart, ToolInvocationPart
from procflow._messages.results import StepResult

__all__ = ["current_run_tool_steps", "to_text"]


def to_text(value: Any) -> str:
    """A tool's arguments or result as the model reads it: strings as they are, anything else as JSON.

    The wire's own serialiser (:func:`procflow._messages._tool_json.tool_result_text`), so what is counted
    is what is sent.
    """
    return tool_result_text(value)


def current_run_tool_steps(message_list: MessageList, steps: list[StepResult]) -> list[list[str]]:
    """The tool-call ids of each tool step of this request, oldest step first.

    A *tool step* is a model step that called tools. The ids come from the step records and from the
    request's response messages (split at their step boundaries), so a run is recognised whether or not
    the caller keeps step records.
    """
    out: list[list[str]] = []
    seen: set[str] = set()
    for step in steps:
        ids = [call.tool_call_id for call in step.tool_calls if call.tool_call_id not in seen]
        if ids:
            out.append(ids)
            seen.update(ids)
    for message in message_list.response:
        current: list[str] = []
        for part in message.content.parts:
            if isinstance(part, StepStartPart) and current:
                out.append(current)
                current = []
            elif isinstance(part, ToolInvocationPart) and part.tool_call_id not in seen:
                current.append(part.tool_call_id)
                seen.add(part.tool_call_id)
        if current:
            out.append(current)
    return out

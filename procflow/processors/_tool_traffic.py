"""Which tool calls belong to the current turn, and how a tool call or result reads as text."""

from __future__ import annotations

from typing import Any

from procflow._messages._tool_json import tool_result_text
from procflow._messages.message import Message
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
    """The tool-call ids of each tool step of the current turn, oldest step first.

    A *tool step* is a model step that called tools. The current turn is this request's run and the
    tool traffic the conversation holds after its last user message: a client that runs the tools
    itself (as through the gateway, one model step per request) sends the call the model just made
    with its result as the new input, and that exchange belongs to the turn as much as a tool the
    agent ran in this request. The run's ids come from the step records and from the request's
    response messages (split at their step boundaries), so a run is recognised whether or not the
    caller keeps step records.
    """
    out: list[list[str]] = []
    seen: set[str] = set()
    _split(_since_last_user(message_list), out, seen)
    for step in steps:
        ids = [call.tool_call_id for call in step.tool_calls if call.tool_call_id not in seen]
        if ids:
            out.append(ids)
            seen.update(ids)
    _split(message_list.response, out, seen)
    return out


def _since_last_user(message_list: MessageList) -> list[Message]:
    """The input and memory messages after the last user message among them (all, without one)."""
    turn: list[Message] = []
    for message in reversed(message_list.all):
        if message_list.source_of(message.id) not in ("input", "memory"):
            continue
        if message.role == "user":
            break
        turn.append(message)
    turn.reverse()
    return turn


def _split(messages: list[Message], out: list[list[str]], seen: set[str]) -> None:
    """Append the new tool-call ids of ``messages`` to ``out``, one list per step (a message, or the
    part of one between two step boundaries)."""
    for message in messages:
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

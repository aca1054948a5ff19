"""The texts a guard checks in a message, and rewriting them: its text parts (joined as the model
reads them) and the flattened text.

Tool traffic in the input (an app or a gateway client replaying a conversation: a tool call's
arguments, its result) is sent to the model too, so the strings inside tool-invocation parts are
checked as well, at any depth, in messages of any role.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from typing import Any

from procflow._messages import Message
from procflow._messages.parts import TextPart, ToolInvocationPart
from procflow.processors._args import ProcessInputArgs, ProcessInputResult
from procflow.processors._text_runs import TextRun, text_runs
from procflow.processors._tool_results import RESULT_FIELDS, part_strings, rewrite_part

__all__ = [
    "TOOL_FIELDS",
    "judge_input",
    "read_texts",
    "replace_parts",
    "replace_text",
    "rewrite_tool_strings",
    "text_runs_of",
    "tool_strings",
    "user_facing",
]

TOOL_FIELDS = ("args", *RESULT_FIELDS)
"""The fields of a tool-invocation part whose strings reach the model."""


def text_runs_of(message: Message) -> list[TextRun]:
    """The message's text parts as the model reads them: each run of parts joined (see
    :func:`~procflow.processors._text_runs.text_runs`; an image between two parts separates them)."""
    parts = message.content.parts
    return [TextRun.of(parts, run) for run in text_runs(parts, message.role)]


def read_texts(message: Message) -> list[str]:
    """The message's text as the model reads it: its text parts joined as they are sent (nothing
    between them), then its flattened ``content.content`` when that says something else.

    A guard that gives one verdict per message judges this, not each part alone: a phrase split over
    two text parts (``"ignore previous instruc"`` + ``"tions"``) reaches the model whole.
    """
    joined = "".join(part.text for part in message.content.parts if isinstance(part, TextPart))
    texts = [joined] if joined else []
    fallback = message.content.content
    if fallback and fallback != joined:
        texts.append(fallback)
    return texts


def replace_parts(message: Message, texts: dict[int, str], fallback: str | None) -> Message:
    """The message with the text parts at the indexes of ``texts`` given those texts, and its flattened
    text replaced by ``fallback`` (when given and different).

    Returns the same object when nothing changed.
    """
    content = message.content
    update: dict[str, Any] = {}
    if texts:
        parts = list(content.parts)
        for index, text in texts.items():
            parts[index] = parts[index].model_copy(update={"text": text})
        update["parts"] = parts
    if fallback is not None and fallback != content.content:
        update["content"] = fallback
    if not update:
        return message
    return message.model_copy(update={"content": content.model_copy(update=update)})


def user_facing(messages: list[Message], roles: Collection[str] = ("user",)) -> list[Message]:
    """The messages whose text a guard judges on input: those of ``roles``, by default user turns (in
    an agent the system prompt is the app's and assistant turns the model's; a gateway client writes
    them all)."""
    return [message for message in messages if message.role in roles]


JudgeMessages = Callable[[list[Message], list[Message]], Awaitable[list[Message]]]
"""A guard's pass over some messages: ``(messages, judged)`` → the messages after its strategy, the
texts of those in ``judged`` judged too (tool traffic in all of them)."""


async def judge_input(
    args: ProcessInputArgs, roles: Collection[str], judge: JudgeMessages
) -> list[Message] | ProcessInputResult:
    """A guard's ``process_input``: ``judge`` over the system messages first when ``roles`` holds
    ``"system"``, then over the input messages (those of ``roles`` judged).

    Returns the input messages, or with the system messages too when any of those was dropped or
    replaced.
    """
    system = args.system_messages
    if "system" in roles and system:
        system = await judge(system, system)
    messages = await judge(args.messages, user_facing(args.messages, roles))
    if len(system) == len(args.system_messages) and all(
        new is old for new, old in zip(system, args.system_messages, strict=True)
    ):
        return messages
    return ProcessInputResult(messages=messages, system_messages=list(system))


def replace_text(message: Message, text: str) -> Message:
    """The message with all its text replaced by ``text`` (text parts and the flattened text alike)."""
    replaced = message.with_text(text)
    if replaced.content.content:
        replaced = replaced.model_copy(
            update={"content": replaced.content.model_copy(update={"content": text})}
        )
    return replaced


def tool_strings(message: Message) -> list[str]:
    """Every distinct non-empty string inside the message's tool-invocation parts (arguments, results)."""
    found: list[str] = []
    for part in message.content.parts:
        if isinstance(part, ToolInvocationPart):
            part_strings(part, TOOL_FIELDS, found)
    return list(dict.fromkeys(found))


def rewrite_tool_strings(message: Message, rewrite: Callable[[str], str]) -> Message:
    """The message with ``rewrite`` applied to every string in its tool-invocation parts.

    Returns the same object when nothing changed.
    """

    def change(text: str, _path: Any) -> str | None:
        new = rewrite(text)
        return None if new == text else new

    parts: list[Any] | None = None
    for index, part in enumerate(message.content.parts):
        if not isinstance(part, ToolInvocationPart):
            continue
        new = rewrite_part(part, TOOL_FIELDS, lambda _field: change)
        if new is not part:
            parts = parts if parts is not None else list(message.content.parts)
            parts[index] = new
    if parts is None:
        return message
    return message.model_copy(update={"content": message.content.model_copy(update={"parts": parts})})

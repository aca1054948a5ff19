"""Applying what message hooks return to the live message list."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from procflow._error_rules import format_validation_error
from procflow._messages.message import Message
from procflow._messages.message_list import MessageList
from procflow._messages.prompt import Prompt, PromptMessage
from procflow.errors import ProcessorResultError
from procflow.processors._args import ProcessInputResult

__all__ = ["apply_messages_result", "coerce_prompt"]

_EXPECTED = (
    "return None, a list of messages, the message_list itself, or "
    "{'messages': [...], 'system_messages': [...]}"
)


def _coerce_messages(items: Any, processor_id: str, hook: str) -> list[Message]:
    if isinstance(items, str | bytes) or not isinstance(items, Sequence):
        raise ProcessorResultError(
            processor_id, hook, f"returned messages as {type(items).__name__}; {_EXPECTED}"
        )
    out: list[Message] = []
    for item in items:
        if isinstance(item, Message):
            out.append(item)
        elif isinstance(item, Mapping):
            out.append(_validated(item, processor_id, hook))
        else:
            raise ProcessorResultError(
                processor_id,
                hook,
                f"returned a {type(item).__name__} where a Message was expected; {_EXPECTED}",
            )
    return out


def _validated(item: Mapping[str, Any], processor_id: str, hook: str) -> Message:
    try:
        return Message.model_validate(item)
    except ValidationError as exc:
        raise ProcessorResultError(
            processor_id,
            hook,
            f"returned an invalid message ({format_validation_error(exc, root='message')}); return "
            "Message objects or mappings such as {'role': 'user', 'content': 'Hi'}",
        ) from None  # pydantic's own text quotes the input


def apply_messages_result(
    message_list: MessageList, result: Any, *, scope: list[Message], processor_id: str, hook: str
) -> None:
    """Apply a message hook's result; a returned list is authoritative over ``scope``.

    Raises:
        ProcessorResultError: the result is of an unusable kind, or is a different MessageList instance.
    """
    if result is None:
        return
    if isinstance(result, MessageList):
        if result is not message_list:
            raise ProcessorResultError(
                processor_id,
                hook,
                "returned a different MessageList instance; edit args.message_list in place and return it "
                "(or return a list of messages)",
            )
        return
    messages: Any = None
    system: Any = None
    if isinstance(result, ProcessInputResult):
        messages, system = result.messages, result.system_messages
    elif isinstance(result, Mapping):
        unknown = set(result) - {"messages", "system_messages"}
        if unknown:
            raise ProcessorResultError(
                processor_id, hook, f"returned unknown keys {sorted(unknown)}; {_EXPECTED}"
            )
        messages, system = result.get("messages"), result.get("system_messages")
    elif isinstance(result, Sequence) and not isinstance(result, str | bytes):
        messages = result
    else:
        raise ProcessorResultError(processor_id, hook, f"returned {type(result).__name__}; {_EXPECTED}")
    if messages is not None:
        message_list.replace_messages(_coerce_messages(messages, processor_id, hook), scope=scope)
    if system is not None:
        if isinstance(system, str | bytes) or not isinstance(system, Sequence):
            raise ProcessorResultError(processor_id, hook, "returned system_messages that is not a list")
        tagged_ids = {m.id for m in message_list.system_messages} - {
            m.id for m in message_list.untagged_system_messages
        }
        kept = [m if isinstance(m, Message | str) else _validated(m, processor_id, hook) for m in system]
        message_list.set_system_messages(m for m in kept if isinstance(m, str) or m.id not in tagged_ids)


def coerce_prompt(prompt: Any, processor_id: str) -> Prompt:
    """Validate a prompt a ``process_llm_request`` hook returned."""
    if not isinstance(prompt, Sequence) or isinstance(prompt, str | bytes):
        raise ProcessorResultError(
            processor_id, "process_llm_request", "returned a prompt that is not a list"
        )
    try:
        return [m if isinstance(m, PromptMessage) else PromptMessage.model_validate(m) for m in prompt]
    except ValidationError as exc:
        raise ProcessorResultError(
            processor_id,
            "process_llm_request",
            f"returned an invalid prompt ({format_validation_error(exc, root='prompt')}); return the list "
            "of PromptMessage objects it was given, edited",
        ) from None  # pydantic's own text quotes the input

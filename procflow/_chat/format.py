"""Conversations in the common chat format, to and from procflow messages.

One conversation is one JSON object per line (JSONL)::

    {"id": "c1", "messages": [
        {"role": "system", "content": "You are a support agent."},
        {"role": "user", "content": "Where is my order?"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "lookup_order", "arguments": "{\\"order_id\\": \\"A-1001\\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\\"status\\": \\"shipped\\"}"},
        {"role": "assistant", "content": "It shipped yesterday."}]}

Text becomes text parts, ``content`` given as a list of parts keeps its text and image parts, tool calls
become ``tool-invocation`` parts (``state="call"``) of the assistant message, and each ``tool`` turn becomes
a ``tool`` message holding one ``tool-invocation`` part with ``state="result"``. The record's other keys
and each turn's unknown keys are kept and written back unchanged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from procflow._chat.json_input import JsonInputError, decode_json, describe
from procflow._chat.turns import Item, TextTurn, as_message, items_of
from procflow._messages.message import Message, Role
from procflow._messages.parts import ImagePart, TextPart, ToolInvocationPart
from procflow.errors import ProcflowError

__all__ = ["Conversation", "ConversationFormatError", "conversation_to_record", "parse_conversation"]

_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
}
_ROLE_NAMES = "system, developer, user, assistant, tool"
_KNOWN_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id"})


class ConversationFormatError(ProcflowError, ValueError):
    """A JSONL line is not a conversation in the common chat format.

    Attributes:
        line: The 1-based line number, when known.
        problem: What is wrong with the line.
    """

    def __init__(self, problem: str, *, line: int | None = None) -> None:
        self.line = line
        self.problem = problem
        super().__init__(f"line {line}: {problem}" if line is not None else problem)


@dataclass(slots=True)
class _TurnFormat:
    """How one turn was written, so it is written back the same way."""

    role: str
    content_kind: str  # "text", "null", "parts" or "absent"
    extra: dict[str, Any] = field(default_factory=dict)
    order: tuple[str, ...] = ()
    tool_text: str | None = None
    arguments: dict[str, tuple[Any, dict[str, Any]]] = field(default_factory=dict)
    """Per tool call id: the arguments as written, and as parsed (written back as they were if unchanged)."""
    raw: dict[str, Any] | None = None
    """A text turn as read: written back as it is while its message still says what was read (see
    :func:`_as_read`); ``parsed`` is that message."""
    parsed: Message | None = None


@dataclass(slots=True)
class Conversation:
    """One conversation read from a JSONL line.

    Attributes:
        fields: The record's keys other than ``messages`` (``id``, ``metadata``, …), written back as they are.
        line: The 1-based line number the conversation came from (0 when not read from a file).
        items: The turns in order: messages, and plain text turns not built as messages until needed.
    """

    fields: dict[str, Any] = field(default_factory=dict)
    line: int = 0
    formats: dict[str, _TurnFormat] = field(default_factory=dict, repr=False)
    items: list[Item] = field(default_factory=list, repr=False)

    @property
    def messages(self) -> list[Message]:
        """The turns as procflow messages, in order (text turns built on first use)."""
        return [as_message(item) for item in self.items]


def _is_mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    # Decoded JSON objects are dicts: the exact type test spares the ABC check on every turn.
    return type(value) is dict or isinstance(value, Mapping)


def parse_conversation(record: Any, *, line: int = 0) -> Conversation:
    """Build a :class:`Conversation` from one decoded JSON record.

    Raises:
        ConversationFormatError: the record is not ``{"messages": [...]}`` with valid turns. The message
            names the field (``messages[2].content``) and describes what was found by kind and size,
            without quoting it.
    """
    if not _is_mapping(record):
        raise ConversationFormatError(
            f'expected a JSON object like {{"messages": [...]}}, got {describe(record)}', line=line
        )
    turns = record.get("messages")
    if not isinstance(turns, list):
        problem = "has no 'messages' key" if "messages" not in record else "'messages' is not a list"
        raise ConversationFormatError(
            f'the conversation {problem}; write {{"messages": [{{"role": "user", "content": "..."}}]}}',
            line=line,
        )
    conversation = Conversation(
        fields={k: v for k, v in record.items() if k not in ("messages", "blocked")}, line=line
    )
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    for index, turn in enumerate(turns):
        try:
            # Ids follow the turn's index, so reports that name a message (tripwire metadata, redaction
            # reports) point at messages[i] of the input, the same on every run.
            message, fmt = _parse_turn(turn, calls, f"turn-{index}")
        except ConversationFormatError as exc:
            raise ConversationFormatError(_at(f"messages[{index}]", exc.problem), line=line) from None
        conversation.items.append(message)
        conversation.formats[message.id] = fmt
    return conversation


def _at(path: str, problem: str) -> str:
    """``problem`` of a field inside ``path``: ``messages[0].content: ...`` or ``messages[0]: ...``."""
    return f"{path}{problem}" if problem.startswith((".", "[")) else f"{path}: {problem}"


_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}")


def _label(value: str) -> str:
    """A short keyword-like value (a role, a part type) quoted; anything else only by its length."""
    return repr(value) if _NAME.fullmatch(value) else describe(value)


def _parse_turn(
    turn: Any, calls: dict[str, tuple[str, dict[str, Any]]], message_id: str
) -> tuple[Item, _TurnFormat]:
    if not _is_mapping(turn):
        raise ConversationFormatError(f"expected a turn object, got {describe(turn)}")
    role = turn.get("role")
    if not isinstance(role, str):
        problem = "is missing" if "role" not in turn else f"must be a string, not {describe(role)}"
        raise ConversationFormatError(f".role: {problem}; use one of {_ROLE_NAMES}")
    if role not in _ROLES:
        raise ConversationFormatError(f".role: unknown role {_label(role)}; use one of {_ROLE_NAMES}")
    content = turn.get("content")
    if type(content) is str and role != "tool" and "tool_calls" not in turn:
        return _text_turn(turn, role, content, message_id)
    parts, content_kind = _parse_content(content, "content" in turn)
    fmt = _TurnFormat(
        role=role,
        content_kind=content_kind,
        extra={k: v for k, v in turn.items() if k not in _KNOWN_KEYS},
        order=tuple(turn),
    )
    if role == "tool":
        message = _parse_tool_turn(turn, parts, calls, message_id)
        fmt.tool_text = message.content.content
        return message, fmt
    tool_calls = turn.get("tool_calls")
    if tool_calls is not None:
        if role != "assistant":
            raise ConversationFormatError(
                f".tool_calls: only assistant turns may have tool_calls, not {role!r} turns"
            )
        if not isinstance(tool_calls, list):
            raise ConversationFormatError(f".tool_calls: must be a list, not {describe(tool_calls)}")
        for index, call in enumerate(tool_calls):
            try:
                part, raw = _parse_tool_call(call)
            except ConversationFormatError as exc:
                raise ConversationFormatError(_at(f".tool_calls[{index}]", exc.problem)) from None
            fmt.arguments[part["tool_call_id"]] = (raw, dict(part["args"]))
            calls[part["tool_call_id"]] = (part["tool_name"], part["args"])
            parts.append(part)
    return _message(message_id, _ROLES[role], parts, None), fmt


def _text_turn(
    turn: Mapping[str, Any], role: str, text: str, message_id: str
) -> tuple[TextTurn, _TurnFormat]:
    """The most common turn, ``{"role": ..., "content": "text"}`` (other keys kept as they are); its
    message is built when first needed."""
    extra = {k: v for k, v in turn.items() if k not in _KNOWN_KEYS} if len(turn) > 2 else {}
    fmt = _TurnFormat(role=role, content_kind="text", extra=extra, order=tuple(turn))
    if type(turn) is dict and "tool_call_id" not in turn:  # written back as read while unchanged
        fmt.raw = turn
    return TextTurn(message_id, _ROLES[role], text, fmt), fmt


def _message(message_id: str, role: Role, parts: list[dict[str, Any]], text: str | None) -> Message:
    # One validation of the whole turn (parts given as data, checked above): building each part and the
    # content as models first validated every turn three times over. The id is given, not generated
    # and then replaced: a random id per turn cost a tenth of the parse.
    return Message.model_validate(
        {"id": message_id, "role": role, "content": {"parts": parts, "content": text}}
    )


def _parse_content(content: Any, present: bool) -> tuple[list[dict[str, Any]], str]:
    if content is None:
        return [], "null" if present else "absent"
    if isinstance(content, str):
        return [{"type": "text", "text": content}], "text"
    if not isinstance(content, list):
        raise ConversationFormatError(
            f".content: must be a string, null or a list of parts, not {describe(content)}"
        )
    parts: list[dict[str, Any]] = []
    for index, item in enumerate(content):
        parts.append(_parse_part(item, f".content[{index}]"))
    return parts, "parts"


def _parse_part(item: Any, path: str) -> dict[str, Any]:
    if not _is_mapping(item):
        raise ConversationFormatError(f"{path}: a content part must be an object, not {describe(item)}")
    kind = item.get("type")
    if kind == "text":
        if not isinstance(item.get("text"), str):
            raise ConversationFormatError(f"{path}.text: must be a string, not {describe(item.get('text'))}")
        return {"type": "text", "text": item["text"]}
    if kind == "image_url":
        image = item.get("image_url")
        url = image.get("url") if isinstance(image, Mapping) else image
        if not isinstance(url, str):
            raise ConversationFormatError(
                f"{path}: an image_url part needs {{'image_url': {{'url': '...'}}}}"
            )
        return {"type": "image", "url": url}
    what = _label(kind) if isinstance(kind, str) else describe(kind)
    raise ConversationFormatError(
        f"{path}.type: unsupported content part type {what}; content parts must be "
        "{'type': 'text', 'text': ...} or {'type': 'image_url', 'image_url': {'url': ...}}"
    )


def _parse_tool_call(call: Any) -> tuple[dict[str, Any], Any]:
    function = call.get("function") if _is_mapping(call) else None
    if not _is_mapping(function) or not isinstance(call.get("id"), str):
        raise ConversationFormatError(
            "a tool call needs {'id': ..., 'type': 'function', 'function': {'name': ..., 'arguments': ...}}"
        )
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise ConversationFormatError(".function.name: a tool call needs a function name (a string)")
    raw = function.get("arguments", {})
    parsed = raw
    if isinstance(raw, str):
        try:
            parsed = decode_json(raw, path=".function.arguments") if raw.strip() else {}
        except JsonInputError as exc:
            raise ConversationFormatError(exc.problem) from None
    if not isinstance(parsed, dict):
        raise ConversationFormatError(f".function.arguments: must be a JSON object, not {describe(parsed)}")
    part = {"type": "tool-invocation", "tool_call_id": call["id"], "tool_name": name, "args": parsed}
    return part, raw


def _parse_tool_turn(
    turn: Mapping[str, Any],
    parts: list[dict[str, Any]],
    calls: dict[str, tuple[str, dict[str, Any]]],
    message_id: str,
) -> Message:
    call_id = turn.get("tool_call_id")
    if not isinstance(call_id, str):
        raise ConversationFormatError(
            ".tool_call_id: a tool turn needs 'tool_call_id' naming the assistant's tool call"
        )
    call = calls.get(call_id)
    written = turn.get("name")
    name = call[0] if call is not None else written if isinstance(written, str) and written else "unknown"
    args = dict(call[1]) if call is not None else {}
    text = "".join(p["text"] for p in parts if p["type"] == "text")
    result = {
        "type": "tool-invocation",
        "tool_call_id": call_id,
        "tool_name": name,
        "args": args,
        "state": "result",
        "result": text,
    }
    # The result is also the message's flattened text, so text processors (redaction, normalisation)
    # check what a tool returned like any other text the conversation carries.
    return _message(message_id, "tool", [result], text)


def conversation_to_record(
    conversation: Conversation, messages: Sequence[Message] | None = None
) -> dict[str, Any]:
    """Return the chat-format record for ``messages`` (default: the conversation's own).

    Signals (``role="signal"``) are hints for the model, not turns, and are left out.
    """
    items = conversation.items if messages is None else items_of(messages)
    formats = conversation.formats
    if items is None:
        assert messages is not None
        turns = [_turn_of(m, formats.get(m.id)) for m in messages if m.role != "signal"]
    else:
        turns = [_item_turn(item, formats) for item in items if item.role != "signal"]
    return {**conversation.fields, "messages": turns}


def _item_turn(item: Item, formats: dict[str, _TurnFormat]) -> dict[str, Any]:
    if type(item) is TextTurn:
        raw = item.fmt.raw
        if raw is not None and (item.fmt.parsed is None or _as_read(item.fmt.parsed, raw)):
            return raw  # never built as a message, or built and still as read
        return _turn_of(item.message(), item.fmt)
    message: Message = item  # type: ignore[assignment]
    return _turn_of(message, formats.get(message.id))


def _turn_of(message: Message, fmt: _TurnFormat | None) -> dict[str, Any]:
    if fmt is not None and fmt.parsed is message and fmt.raw is not None and _as_read(message, fmt.raw):
        return fmt.raw  # unchanged, and written back as it was read (copy on write)
    role = fmt.role if fmt is not None and _ROLES[fmt.role] == message.role else message.role
    turn: dict[str, Any] = {"role": role}
    invocations = message.tool_invocations
    if message.role == "tool" and invocations:
        turn["content"] = _tool_text(message, invocations[0], fmt)
        turn["tool_call_id"] = invocations[0].tool_call_id
    else:
        content = _content_of(message, fmt)
        if content is not _ABSENT:
            turn["content"] = content
        calls = [p for p in invocations if p.state == "call" or message.role == "assistant"]
        if calls:
            written = fmt.arguments if fmt is not None else {}
            turn["tool_calls"] = [_tool_call_of(p, written.get(p.tool_call_id)) for p in calls]
    if fmt is None:
        return turn
    turn.update(fmt.extra)
    ordered = {key: turn[key] for key in fmt.order if key in turn}
    ordered.update(turn)
    return ordered


_ABSENT = object()


def _as_read(message: Message, raw: dict[str, Any]) -> bool:
    """Whether a text turn's message still says what ``raw`` says: the same object is no proof, as a
    processor may have edited it in place (a part's text, its role, parts added)."""
    if message.role != _ROLES[raw["role"]] or message.content.content is not None:
        return False
    parts = message.content.parts
    if len(parts) != 1:
        return False
    part = parts[0]
    return type(part) is TextPart and part.text == raw["content"]


def _tool_text(message: Message, part: ToolInvocationPart, fmt: _TurnFormat | None) -> str:
    """A tool turn's content: whichever of its result and its text a processor changed."""
    result = part.result if isinstance(part.result, str) else json.dumps(part.result, ensure_ascii=False)
    original = fmt.tool_text if fmt is not None else None
    text = message.text
    if result == original and text != original:
        return text
    return result


def _content_of(message: Message, fmt: _TurnFormat | None) -> Any:
    kind = fmt.content_kind if fmt is not None else "text"
    texts = [p for p in message.content.parts if isinstance(p, TextPart)]
    if kind == "parts":
        out: list[dict[str, Any]] = []
        for part in message.content.parts:
            if isinstance(part, TextPart):
                out.append({"type": "text", "text": part.text})
            elif isinstance(part, ImagePart) and part.url is not None:
                out.append({"type": "image_url", "image_url": {"url": part.url}})
        return out
    if not texts and not message.content.content:
        return {"null": None, "absent": _ABSENT}.get(kind, "")
    return message.text


def _tool_call_of(part: ToolInvocationPart, written: tuple[Any, dict[str, Any]] | None) -> dict[str, Any]:
    arguments: Any
    if written is not None and written[1] == part.args:
        arguments = written[0]
    elif written is not None and not isinstance(written[0], str):
        arguments = part.args
    else:
        arguments = json.dumps(part.args, ensure_ascii=False)
    return {
        "id": part.tool_call_id,
        "type": "function",
        "function": {"name": part.tool_name, "arguments": arguments},
    }

"""Writing processed conversations back in the common chat format.

A turn is written back as it was read, with only what the processors changed replaced: a turn's keys
(known and unknown) in their order, the other keys of its content parts (``cache_control``, an image's
``detail``), of its tool calls and their functions (``type`` as written, or absent), images in a tool
turn. A turn no processor changed is written back JSON-equal to what was read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from procflow._chat.conversation import ROLES, Conversation, TurnCall, TurnFormat
from procflow._chat.turns import Item, TextTurn, items_of
from procflow._messages.message import Message
from procflow._messages.parts import ImagePart, TextPart, ToolInvocationPart

__all__ = ["conversation_to_record"]

_ABSENT = object()


def conversation_to_record(
    conversation: Conversation, messages: Sequence[Message] | None = None
) -> dict[str, Any]:
    """Return the chat-format record for ``messages`` (default: the conversation's own).

    Signals (``role="signal"``) are hints for the model, not turns, and are left out. A message holding
    the text of a turn's key (``turn-i.refusal``) is written under that key of its turn; when a
    processor dropped it, the key is left out.
    """
    items: Sequence[Item] | None = conversation.items if messages is None else items_of(messages)
    sequence: Sequence[Item] = messages if items is None else items  # type: ignore[assignment]
    formats = conversation.formats
    turns: list[dict[str, Any]] = []
    keyed: list[tuple[str, dict[str, Any], TurnFormat]] | None = None
    texts: dict[tuple[str, str], str] = {}
    for item in sequence:
        if item.role == "signal":
            continue
        fmt = item.fmt if type(item) is TextTurn else formats.get(item.id)
        if fmt is not None and fmt.owner is not None:
            assert fmt.key is not None
            texts[fmt.owner, fmt.key] = item.text
            continue
        turn = _item_turn(item, fmt)
        if fmt is not None and fmt.key_texts:
            keyed = keyed if keyed is not None else []
            keyed.append((item.id, turn, fmt))
        turns.append(turn)
    for owner, turn, fmt in keyed or ():
        for key in fmt.key_texts:
            text = texts.get((owner, key))
            if text is None:
                turn.pop(key, None)
            else:
                turn[key] = text
    fields = conversation.fields
    at = conversation.messages_at
    if at < 0:
        return {**fields, "messages": turns}
    keys = list(fields)
    return {**{k: fields[k] for k in keys[:at]}, "messages": turns, **{k: fields[k] for k in keys[at:]}}


def _item_turn(item: Item, fmt: TurnFormat | None) -> dict[str, Any]:
    if type(item) is TextTurn:
        raw = item.fmt.raw
        if raw is not None and (item.fmt.parsed is None or _as_read(item.fmt.parsed, raw)):
            return raw  # never built as a message, or built and still as read
        return _turn_of(item.message(), item.fmt)
    message: Message = item  # type: ignore[assignment]
    return _turn_of(message, fmt)


def _turn_of(message: Message, fmt: TurnFormat | None) -> dict[str, Any]:
    if fmt is None:
        return _new_turn(message)
    if fmt.parsed is message and fmt.raw is not None and _as_read(message, fmt.raw):
        return fmt.raw  # unchanged, and written back as it was read (copy on write)
    source = fmt.source
    turn = dict(source)
    if ROLES[fmt.role] != message.role:
        turn["role"] = message.role
    invocations = message.tool_invocations
    if message.role == "tool" and invocations:
        part = invocations[0]
        text = _tool_text(message, part, fmt.tool_text)
        if text != fmt.tool_text:
            turn["content"] = _tool_content(text, fmt)
        if part.tool_call_id != source.get("tool_call_id"):
            turn["tool_call_id"] = part.tool_call_id
        return turn
    content = _content_of(message, fmt)
    if content is _ABSENT:
        turn.pop("content", None)
    else:
        turn["content"] = content
    _write_calls(turn, message, invocations, fmt)
    return turn


def _new_turn(message: Message) -> dict[str, Any]:
    """The turn of a message a processor added (no turn was read for it)."""
    turn: dict[str, Any] = {"role": message.role}
    invocations = message.tool_invocations
    if message.role == "tool" and invocations:
        turn["content"] = _tool_text(message, invocations[0], None)
        turn["tool_call_id"] = invocations[0].tool_call_id
        return turn
    turn["content"] = message.text
    calls = [p for p in invocations if p.state == "call" or message.role == "assistant"]
    if calls:
        turn["tool_calls"] = [_tool_call_of(p, None) for p in calls]
    return turn


def _as_read(message: Message, raw: dict[str, Any]) -> bool:
    """Whether a text turn's message still says what ``raw`` says: the same object is no proof, as a
    processor may have edited it in place (a part's text, its role, parts added)."""
    if message.role != ROLES[raw["role"]] or message.content.content is not None:
        return False
    parts = message.content.parts
    if len(parts) != 1:
        return False
    part = parts[0]
    return type(part) is TextPart and part.text == raw["content"]


def _tool_text(message: Message, part: ToolInvocationPart, original: str | None) -> str:
    """A tool turn's text: whichever of its result and its flattened text a processor changed."""
    result = part.result if isinstance(part.result, str) else json.dumps(part.result, ensure_ascii=False)
    text = message.text
    if result == original and text != original:
        return text
    return result


def _tool_content(text: str, fmt: TurnFormat) -> Any:
    """A changed tool turn's ``content``: the text, or the parts as read with their texts replaced."""
    if fmt.content_kind != "parts":
        return text
    items: list[Any] = fmt.source["content"]
    at = [i for i, item in enumerate(items) if item["type"] == "text"]
    if not at:
        return [{"type": "text", "text": text}, *items]
    out = list(items)
    for i, piece in zip(at, _split([items[i]["text"] for i in at], text), strict=True):
        if piece != items[i]["text"]:
            out[i] = {**items[i], "text": piece}
    return out


def _split(pieces: list[str], new: str) -> list[str]:
    """``new``, a changed ``"".join(pieces)``, cut into as many pieces: the text before the first
    change and after the last stays in the pieces it was in; the changed span goes into the piece
    where it starts."""
    old = "".join(pieces)
    limit = min(len(old), len(new))
    prefix = 0
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    out: list[str] = []
    start = end_old = 0
    for index, piece in enumerate(pieces):
        end_old += len(piece)
        if index == len(pieces) - 1:
            end = len(new)
        elif end_old <= prefix:
            end = end_old
        elif end_old >= len(old) - suffix:
            end = end_old + len(new) - len(old)
        else:
            end = len(new) - suffix
        end = max(end, start)
        out.append(new[start:end])
        start = end
    return out


def _content_of(message: Message, fmt: TurnFormat) -> Any:
    kind = fmt.content_kind
    if kind == "parts":
        return _parts_content(message, fmt.source["content"])
    if kind != "text" and not message.text and not message.content.content:
        return None if kind == "null" else _ABSENT
    return message.text


def _parts_content(message: Message, items: list[Any]) -> list[Any]:
    """A ``content`` list: the parts as read, each with only its text or URL replaced when a processor
    changed it; built anew when the processors changed which parts there are."""
    parts = [
        p
        for p in message.content.parts
        if isinstance(p, TextPart) or (isinstance(p, ImagePart) and p.url is not None)
    ]
    if len(parts) != len(items) or any(
        isinstance(part, TextPart) != (item["type"] == "text")
        for part, item in zip(parts, items, strict=True)
    ):
        return [_new_part(part) for part in parts]
    out: list[Any] | None = None
    for index, (part, item) in enumerate(zip(parts, items, strict=True)):
        new = _patched(item, part)
        if new is not item:
            out = out if out is not None else list(items)
            out[index] = new
    return items if out is None else out


def _patched(item: Mapping[str, Any], part: TextPart | ImagePart) -> Mapping[str, Any]:
    """A content part as read, with the text or URL ``part`` now holds."""
    if isinstance(part, TextPart):
        return item if item["text"] == part.text else {**item, "text": part.text}
    image = item["image_url"]
    if isinstance(image, Mapping):
        return item if image.get("url") == part.url else {**item, "image_url": {**image, "url": part.url}}
    return item if image == part.url else {**item, "image_url": part.url}


def _new_part(part: TextPart | ImagePart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    return {"type": "image_url", "image_url": {"url": part.url}}


def _write_calls(
    turn: dict[str, Any], message: Message, invocations: list[ToolInvocationPart], fmt: TurnFormat
) -> None:
    """Set ``turn``'s ``tool_calls`` (and legacy ``function_call``) from the message's calls."""
    legacy = fmt.function_call
    calls = [
        p
        for p in invocations
        if (p.state == "call" or message.role == "assistant")
        and (legacy is None or p.tool_call_id != legacy.call_id)
    ]
    if calls:
        written = [_tool_call_of(p, _call_as_read(fmt.calls, i, p)) for i, p in enumerate(calls)]
        source = turn.get("tool_calls")
        if type(source) is list and len(source) == len(written):
            unchanged = all(a is b for a, b in zip(written, source, strict=True))
            turn["tool_calls"] = source if unchanged else written
        else:
            turn["tool_calls"] = written
    elif turn.get("tool_calls"):
        turn["tool_calls"] = []  # a processor removed them
    if legacy is not None:
        part = next((p for p in invocations if p.tool_call_id == legacy.call_id), None)
        if part is None:
            turn.pop("function_call", None)
        else:
            turn["function_call"] = _function_of(part, legacy, legacy.source)


def _call_as_read(calls: list[TurnCall], index: int, part: ToolInvocationPart) -> TurnCall | None:
    """The call ``part`` was read from: the one at its place, else the one with its id."""
    if index < len(calls) and calls[index].call_id == part.tool_call_id:
        return calls[index]
    return next((call for call in calls if call.call_id == part.tool_call_id), None)


def _tool_call_of(part: ToolInvocationPart, written: TurnCall | None) -> Mapping[str, Any]:
    if written is None:
        arguments = json.dumps(part.args, ensure_ascii=False)
        return {
            "id": part.tool_call_id,
            "type": "function",
            "function": {"name": part.tool_name, "arguments": arguments},
        }
    source = written.source
    function = _function_of(part, written, source["function"])
    if function is source["function"] and part.tool_call_id == source["id"]:
        return source
    return {**source, "id": part.tool_call_id, "function": function}


def _function_of(
    part: ToolInvocationPart, written: TurnCall, function: Mapping[str, Any]
) -> Mapping[str, Any]:
    """A call's function object as read, with the name and arguments ``part`` now holds."""
    if written.parsed == part.args:  # the arguments as written (a string stays that string)
        return function if function.get("name") == part.tool_name else {**function, "name": part.tool_name}
    arguments: Any = part.args
    if isinstance(written.arguments, str):
        arguments = json.dumps(part.args, ensure_ascii=False)
    return {**function, "name": part.tool_name, "arguments": arguments}

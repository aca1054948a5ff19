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
a ``tool`` message holding one ``tool-invocation`` part with ``state="result"`` (its result is the turn's
text; the call's arguments are the assistant turn's, not repeated). With ``key_texts``, the text a turn
holds under :data:`~procflow._chat.conversation.KEY_TEXTS` (``reasoning_content``, ``refusal``) becomes a
message of its own right after the turn's, and a legacy ``function_call`` a tool-invocation part.

Everything a processor did not change is written back as it was read (see :mod:`procflow._chat.records`):
the record's other keys, each turn's unknown keys and key order, the other keys of content parts and
tool calls, images in tool turns.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypeGuard

from procflow._chat.conversation import KEY_TEXTS, ROLES, Conversation, TurnCall, TurnFormat
from procflow._chat.json_input import JsonInputError, decode_json, describe
from procflow._chat.records import conversation_to_record
from procflow._chat.turns import Item, TextTurn
from procflow._messages.message import Message, Role
from procflow.errors import ProcflowError

__all__ = ["Conversation", "ConversationFormatError", "conversation_to_record", "parse_conversation"]

_ROLE_NAMES = "system, developer, user, assistant, tool"


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


def _is_mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    # Decoded JSON objects are dicts: the exact type test spares the ABC check on every turn.
    return type(value) is dict or isinstance(value, Mapping)


def parse_conversation(record: Any, *, line: int = 0, key_texts: bool = False) -> Conversation:
    """Build a :class:`Conversation` from one decoded JSON record.

    Args:
        record: The decoded JSON line.
        line: Its 1-based line number (0 when not read from a file).
        key_texts: Also give the processors the text a turn holds under other keys, to check and
            change: ``reasoning_content`` and ``refusal`` (each a message of the turn's role, with the id
            ``turn-i.KEY``, placed right after the turn's message) and a legacy ``function_call`` (a
            tool-invocation part, as a tool call is). ``procflow run`` does; the gateway, which never
            sends those keys on, does not.

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
    conversation = Conversation(fields={k: v for k, v in record.items() if k != "messages"}, line=line)
    keys = list(record)
    if keys[-1] != "messages":  # written back where it was
        conversation.messages_at = keys.index("messages")
    calls: dict[str, str] = {}
    for index, turn in enumerate(turns):
        try:
            # Ids follow the turn's index, so reports that name a message (tripwire metadata, redaction
            # reports) point at messages[i] of the input, the same on every run.
            message, fmt = _parse_turn(turn, calls, f"turn-{index}", key_texts)
        except ConversationFormatError as exc:
            raise ConversationFormatError(_at(f"messages[{index}]", exc.problem), line=line) from None
        conversation.items.append(message)
        conversation.formats[message.id] = fmt
        for key in fmt.key_texts:
            text = _key_text(message.id, key, fmt)
            conversation.items.append(text)
            conversation.formats[text.id] = text.fmt
    return conversation


def _at(path: str, problem: str) -> str:
    """``problem`` of a field inside ``path``: ``messages[0].content: ...`` or ``messages[0]: ...``."""
    return f"{path}{problem}" if problem.startswith((".", "[")) else f"{path}: {problem}"


_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}")


def _label(value: str) -> str:
    """A short keyword-like value (a role, a part type) quoted; anything else only by its length."""
    return repr(value) if _NAME.fullmatch(value) else describe(value)


def _parse_turn(
    turn: Any, calls: dict[str, str], message_id: str, key_texts: bool
) -> tuple[Item, TurnFormat]:
    if not _is_mapping(turn):
        raise ConversationFormatError(f"expected a turn object, got {describe(turn)}")
    role = turn.get("role")
    if not isinstance(role, str):
        problem = "is missing" if "role" not in turn else f"must be a string, not {describe(role)}"
        raise ConversationFormatError(f".role: {problem}; use one of {_ROLE_NAMES}")
    if role not in ROLES:
        raise ConversationFormatError(f".role: unknown role {_label(role)}; use one of {_ROLE_NAMES}")
    keyed = _keyed_texts(turn, role) if key_texts and len(turn) > 2 else ()
    legacy = key_texts and role == "assistant" and "function_call" in turn
    content = turn.get("content")
    if type(content) is str and role != "tool" and "tool_calls" not in turn and not legacy:
        return _text_turn(turn, role, content, message_id, keyed)
    parts, content_kind = _parse_content(content, "content" in turn)
    fmt = TurnFormat(role=role, content_kind=content_kind, source=turn, key_texts=keyed)
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
            fmt.calls.append(TurnCall(call["id"], call, raw, dict(part["args"])))
            calls[part["tool_call_id"]] = part["tool_name"]
            parts.append(part)
    if legacy:
        _parse_function_call(turn["function_call"], f"{message_id}.function_call", parts, fmt)
    return _message(message_id, ROLES[role], parts, None), fmt


def _keyed_texts(turn: Mapping[str, Any], role: str) -> tuple[str, ...]:
    """The keys of :data:`KEY_TEXTS` holding a text in ``turn`` (a tool turn's are left as they are)."""
    if role == "tool":
        return ()
    return tuple(key for key in KEY_TEXTS if type(turn.get(key)) is str)


def _key_text(owner: str, key: str, owner_fmt: TurnFormat) -> TextTurn:
    """The text turn holding ``owner``'s text under ``key``: a message of the owner's role."""
    fmt = TurnFormat(role=owner_fmt.role, content_kind="text", source={}, owner=owner, key=key)
    return TextTurn(f"{owner}.{key}", ROLES[owner_fmt.role], owner_fmt.source[key], fmt)


def _text_turn(
    turn: Mapping[str, Any], role: str, text: str, message_id: str, keyed: tuple[str, ...]
) -> tuple[TextTurn, TurnFormat]:
    """The most common turn, ``{"role": ..., "content": "text"}`` (other keys kept as they are); its
    message is built when first needed."""
    fmt = TurnFormat(role=role, content_kind="text", source=turn, key_texts=keyed)
    if type(turn) is dict and not keyed:  # written back as read while unchanged
        fmt.raw = turn
    return TextTurn(message_id, ROLES[role], text, fmt), fmt


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
    """A tool call's part, and its ``arguments`` as written (``None`` when absent)."""
    function = call.get("function") if _is_mapping(call) else None
    if not _is_mapping(function) or not isinstance(call.get("id"), str):
        raise ConversationFormatError(
            "a tool call needs {'id': ..., 'type': 'function', 'function': {'name': ..., 'arguments': ...}}"
        )
    return _parse_function(function, call["id"]), function.get("arguments")


def _parse_function(function: Mapping[str, Any], call_id: str) -> dict[str, Any]:
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
    return {"type": "tool-invocation", "tool_call_id": call_id, "tool_name": name, "args": parsed}


def _parse_function_call(function: Any, call_id: str, parts: list[dict[str, Any]], fmt: TurnFormat) -> None:
    """A legacy ``function_call`` (``{"name": ..., "arguments": ...}``), read as a tool call is."""
    if not _is_mapping(function):
        raise ConversationFormatError(
            ".function_call: must be {'name': ..., 'arguments': ...}, not " + describe(function)
        )
    try:
        part = _parse_function(function, call_id)
    except ConversationFormatError as exc:
        raise ConversationFormatError(exc.problem.replace(".function.", ".function_call.", 1)) from None
    fmt.function_call = TurnCall(call_id, function, function.get("arguments"), dict(part["args"]))
    parts.append(part)


def _parse_tool_turn(
    turn: Mapping[str, Any], parts: list[dict[str, Any]], calls: dict[str, str], message_id: str
) -> Message:
    call_id = turn.get("tool_call_id")
    if not isinstance(call_id, str):
        raise ConversationFormatError(
            ".tool_call_id: a tool turn needs 'tool_call_id' naming the assistant's tool call"
        )
    written = turn.get("name")
    name = calls.get(call_id) or (written if isinstance(written, str) and written else "unknown")
    text = "".join(p["text"] for p in parts if p["type"] == "text")
    # The call's arguments are not repeated here: they are the assistant turn's, checked (and counted)
    # there; a copy in the result would be checked and reported again though never written out.
    result = {
        "type": "tool-invocation",
        "tool_call_id": call_id,
        "tool_name": name,
        "state": "result",
        "result": text,
    }
    # The result is also the message's flattened text, so text processors (redaction, normalisation)
    # check what a tool returned like any other text the conversation carries.
    return _message(message_id, "tool", [result], text)

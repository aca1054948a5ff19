"""A conversation read from the common chat format, and how each of its turns was written."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from procflow._chat.turns import Item, as_message
from procflow._messages.message import Message, Role

__all__ = ["KEY_TEXTS", "ROLES", "Conversation", "TurnCall", "TurnFormat"]

ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
}
"""The roles of the format, and the procflow role of each."""

KEY_TEXTS = ("reasoning_content", "refusal")
"""The keys of a turn (other than ``content``) that hold text of the turn: the model's reasoning, and
the refusal it gave instead of an answer."""


@dataclass(frozen=True, slots=True)
class TurnCall:
    """One tool call as read: its id, the call object (a legacy ``function_call``: the function object),
    its ``arguments`` (``None`` when the key is absent) and the arguments as parsed (a copy: a call whose
    arguments are unchanged is written back as read)."""

    call_id: str
    source: Mapping[str, Any]
    arguments: Any
    parsed: dict[str, Any]


@dataclass(slots=True)
class TurnFormat:
    """How one turn was written, so it is written back the same way: everything the processors did not
    change stays as it was read.

    Attributes:
        role: The role as written (``developer`` is a system message written back as ``developer``).
        content_kind: ``"text"``, ``"null"``, ``"parts"`` or ``"absent"``.
        source: The turn as read; written back with only what the processors changed replaced.
        tool_text: A tool turn's text as read (its result).
        calls: The assistant's tool calls as read, in order.
        function_call: A legacy ``function_call`` as read (its part's id is ``turn-i.function_call``).
        key_texts: The keys of :data:`KEY_TEXTS` this turn's text messages hold (see ``owner``).
        owner: For the message holding the text of another turn's key: that turn's message id.
        key: For that message: the key (``reasoning_content``, ``refusal``).
        raw: A text turn as read: written back as it is while its message still says what was read;
            ``parsed`` is that message.
    """

    role: str
    content_kind: str
    source: Mapping[str, Any]
    tool_text: str | None = None
    calls: list[TurnCall] = field(default_factory=list)
    function_call: TurnCall | None = None
    key_texts: tuple[str, ...] = ()
    owner: str | None = None
    key: str | None = None
    raw: dict[str, Any] | None = None
    parsed: Message | None = None


@dataclass(slots=True)
class Conversation:
    """One conversation read from a JSONL line.

    Attributes:
        fields: The record's keys other than ``messages`` (``id``, ``metadata``, …), written back as they are.
        line: The 1-based line number the conversation came from (0 when not read from a file).
        items: The turns in order: messages, and plain text turns not built as messages until needed.
        messages_at: Where ``messages`` was among the record's keys (``-1``: last), to write it there.
    """

    fields: dict[str, Any] = field(default_factory=dict)
    line: int = 0
    messages_at: int = -1
    formats: dict[str, TurnFormat] = field(default_factory=dict, repr=False)
    items: list[Item] = field(default_factory=list, repr=False)

    @property
    def messages(self) -> list[Message]:
        """The turns as procflow messages, in order (text turns built on first use)."""
        return [as_message(item) for item in self.items]

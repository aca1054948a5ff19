"""Plain text turns, kept as read until something needs them as messages.

Most stored turns are ``{"role": ..., "content": "text"}``. Building a pydantic :class:`Message` for each
costs more than reading it; ``procflow run`` with the bundled guard looks only at their text, and writes
the unchanged ones back as read. A :class:`TextTurn` is such a turn, not yet a message: :meth:`message`
builds it (once; the same object every time), exactly as ``Message.model_validate`` would.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, overload

from procflow._messages._building import text_message
from procflow._messages.message import Message, Role

if TYPE_CHECKING:
    from procflow._chat.conversation import TurnFormat

__all__ = ["Item", "TextTurn", "TurnView", "as_message", "items_of"]


class TextTurn:
    """A turn holding one text: its message id, role and text, and how it was written."""

    __slots__ = ("_message", "fmt", "id", "role", "text")

    def __init__(self, message_id: str, role: Role, text: str, fmt: TurnFormat) -> None:
        self.id = message_id
        self.role: Role = role
        self.text = text
        self.fmt = fmt
        self._message: Message | None = None

    def message(self) -> Message:
        """The turn as a message: one text part (built on the first call)."""
        message = self._message
        if message is None:
            message = self._message = text_message(self.id, self.role, self.text)
            if self.fmt.raw is not None:
                self.fmt.parsed = message
        return message

    def with_text(self, text: str) -> Message:
        """A new message for this turn holding ``text`` instead (what a processor's copy would be)."""
        return text_message(self.id, self.role, text)

    def __repr__(self) -> str:
        return f"TextTurn({self.id!r}, {self.role!r}, {len(self.text)} characters)"


Item = Message | TextTurn


def as_message(item: Item) -> Message:
    """``item`` as a message (a text turn built on first use)."""
    return item.message() if type(item) is TextTurn else item  # type: ignore[return-value]


class TurnView(Sequence[Message]):
    """The messages of a conversation, some of them text turns not built yet: a read-only sequence of
    messages (each built when it is read), equal to the list of those messages."""

    __slots__ = ("items",)

    def __init__(self, items: list[Item]) -> None:
        self.items = items

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return [as_message(item) for item in self.items[index]]
        return as_message(self.items[index])

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Message]:
        return (as_message(item) for item in self.items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TurnView):
            return list(self) == list(other)
        return isinstance(other, list) and list(self) == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(list(self))


def items_of(value: Any) -> list[Item] | None:
    """The items of a :class:`TurnView` (``None`` for any other sequence)."""
    return value.items if type(value) is TurnView else None

"""The live conversation of one request: messages tagged by source, system messages and signals."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from procflow._error_rules import format_validation_error
from procflow._messages._copying import clone_message
from procflow._messages._to_prompt import answered_calls, message_to_prompt
from procflow._messages.message import Message, MessageContent, SignalInfo
from procflow._messages.parts import Part, TextPart
from procflow._messages.prompt import Prompt, PromptMessage, PromptText
from procflow.errors import ConfigurationError

__all__ = ["MessageInput", "MessageList", "Source", "UIMessage"]

Source = Literal["input", "memory", "response", "context"]
"""Where a message came from: the caller's new input, recalled memory, the model's response, or context
added by processors."""

MessageInput: TypeAlias = Message | str | Mapping[str, Any]
"""What :meth:`MessageList.add` accepts: a message, a plain string (a user message) or a dict."""


class UIMessage(BaseModel):
    """A message as a user interface shows it: role, parts and metadata (signals hidden by default)."""

    model_config = ConfigDict(extra="allow")

    id: str
    role: Literal["user", "assistant", "system", "signal"]
    parts: list[Part] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime | None = None


_EXAMPLE = "{'role': 'user', 'content': 'Hi'}"


def _coerce(message: MessageInput) -> Message:
    if isinstance(message, Message):
        return message
    if isinstance(message, str):
        return Message.user(message)
    if not isinstance(message, Mapping):
        raise ConfigurationError(
            f"a message must be a string, a Message or a mapping such as {_EXAMPLE}, got a "
            f"{type(message).__name__}"
        )
    data = dict(message)
    content = data.get("content")
    if isinstance(content, str):
        data["content"] = {"parts": [{"type": "text", "text": content}], "content": None}
    try:
        return Message.model_validate(data)
    except ValidationError as exc:
        raise ConfigurationError(
            f"invalid message ({format_validation_error(exc)}); a message looks like {_EXAMPLE}"
        ) from None


class MessageList:
    """The messages of one request, each tagged with its :data:`Source`, plus system messages.

    Untagged system messages are the agent's instructions and what processors set; tagged system
    messages (``tag="memory"``, …) belong to the framework and survive a processor replacing the untagged
    ones. Signals are ``role="signal"`` messages; transient signals live outside the stored messages and
    are sent for the current call only.
    """

    __slots__ = (
        "_memory_count",
        "_messages",
        "_positions",
        "_sources",
        "_system",
        "_tagged",
        "_transient",
        "resource_id",
        "thread_id",
    )

    def __init__(
        self,
        messages: Iterable[MessageInput] = (),
        *,
        source: Source = "input",
        thread_id: str | None = None,
        resource_id: str | None = None,
    ) -> None:
        self._messages: list[Message] = []
        self._sources: dict[str, Source] = {}
        # id -> index in _messages, rebuilt lazily after a change that shifts positions, so lookups
        # and replacements are O(1) and a hook's returned list is applied in O(messages), not O(n²).
        self._positions: dict[str, int] | None = {}
        self._memory_count = 0  # memory messages always come first
        self._system: list[Message] = []
        self._tagged: dict[str, list[Message]] = {}
        self._transient: dict[str, Message] = {}
        self.thread_id = thread_id
        self.resource_id = resource_id
        self.add(list(messages), source=source)

    # -- adding and removing -------------------------------------------------------------------------

    def add(self, messages: MessageInput | Iterable[MessageInput], source: Source = "input") -> list[Message]:
        """Add messages under ``source`` and return them as stored.

        A message whose id is already present replaces the stored one in place (keeping its position and
        source). ``system`` messages go to the untagged system messages. Memory messages are placed
        before every non-memory message, so recalled history always precedes the new turn.
        """
        single = isinstance(messages, Message | str | Mapping)
        items: list[MessageInput] = [messages] if single else list(messages)  # type: ignore[list-item, arg-type]
        added: list[Message] = []
        for item in items:
            message = _coerce(item)
            if message.role == "system":
                self._system.append(message)
            elif message.id in self._sources:
                self._messages[self._index_of(message.id)] = message
            else:
                self._insert(message, source)
            added.append(message)
        return added

    def _insert(self, message: Message, source: Source) -> None:
        if source == "memory" and self._memory_count < len(self._messages):
            self._messages.insert(self._memory_count, message)
            self._positions = None
        else:
            if self._positions is not None:
                self._positions[message.id] = len(self._messages)
            self._messages.append(message)
        if source == "memory":
            self._memory_count += 1
        self._sources[message.id] = source

    def _index_of(self, message_id: str) -> int:
        positions = self._positions
        if positions is None:
            positions = self._positions = {m.id: i for i, m in enumerate(self._messages)}
        return positions[message_id]

    def remove_by_ids(self, ids: Iterable[str]) -> list[Message]:
        """Remove the messages with these ids (system messages and transient signals too); return them."""
        wanted = set(ids)
        removed = [m for m in self._messages if m.id in wanted] if wanted & self._sources.keys() else []
        if removed:
            self._messages = [m for m in self._messages if m.id not in wanted]
            for message in removed:
                if self._sources.pop(message.id) == "memory":
                    self._memory_count -= 1
            self._positions = None
        kept_system = [m for m in self._system if m.id not in wanted]
        removed.extend(m for m in self._system if m.id in wanted)
        self._system = kept_system
        for key in [k for k, m in self._transient.items() if m.id in wanted]:
            removed.append(self._transient.pop(key))
        return removed

    def replace(self, message: Message) -> bool:
        """Replace the stored message with the same id; return whether one was found."""
        if message.id not in self._sources:
            return False
        self._messages[self._index_of(message.id)] = message
        return True

    def replace_messages(self, messages: Iterable[Message], *, scope: Iterable[Message]) -> None:
        """Make ``messages`` authoritative over ``scope``: scope ids missing from it are removed.

        Returned messages keep their stored source and position; new ones are added with the source of
        the scope (``input`` when the scope was empty).
        """
        scope_list = list(scope)
        default: Source = self._sources.get(scope_list[0].id, "input") if scope_list else "input"
        messages = list(messages)
        keep = {m.id for m in messages}
        self.remove_by_ids([m.id for m in scope_list if m.id not in keep])
        system_ids = {m.id for m in self._system}
        for message in messages:
            if message.role == "system":
                if message.id not in system_ids:
                    self._system.append(message)
                    system_ids.add(message.id)
            elif message.id in self._sources:
                self._messages[self._index_of(message.id)] = message
            else:
                self._insert(message, default)

    def clear(self) -> None:
        """Remove every non-system message and transient signal."""
        self._messages.clear()
        self._sources.clear()
        self._transient.clear()
        self._positions = {}
        self._memory_count = 0

    # -- views ---------------------------------------------------------------------------------------

    @property
    def all(self) -> list[Message]:
        """Every non-system message, in conversation order (a new list of the stored objects)."""
        return list(self._messages)

    @property
    def input(self) -> list[Message]:
        """The messages of the caller's new input."""
        return [m for m in self._messages if self._sources[m.id] == "input"]

    @property
    def response(self) -> list[Message]:
        """The messages the model produced in this request."""
        return [m for m in self._messages if self._sources[m.id] == "response"]

    @property
    def memory(self) -> list[Message]:
        """The messages recalled from memory."""
        return [m for m in self._messages if self._sources[m.id] == "memory"]

    def by_source(self, source: Source) -> list[Message]:
        """The messages added under ``source``."""
        return [m for m in self._messages if self._sources[m.id] == source]

    def source_of(self, message_id: str) -> Source | None:
        """The source a stored message was added under, or ``None`` when it is not stored."""
        return self._sources.get(message_id)

    def get(self, message_id: str) -> Message | None:
        """The stored message with this id, or ``None``."""
        if message_id not in self._sources:
            return None
        return self._messages[self._index_of(message_id)]

    def __len__(self) -> int:
        return len(self._messages)

    def __contains__(self, message_id: object) -> bool:
        return message_id in self._sources

    # -- system messages -----------------------------------------------------------------------------

    @property
    def system_messages(self) -> list[Message]:
        """Untagged system messages followed by the tagged ones (in tag order)."""
        out = list(self._system)
        for messages in self._tagged.values():
            out.extend(messages)
        return out

    @property
    def untagged_system_messages(self) -> list[Message]:
        """The untagged system messages (instructions and what processors set)."""
        return list(self._system)

    def tagged_system_messages(self, tag: str) -> list[Message]:
        """The system messages added under ``tag``."""
        return list(self._tagged.get(tag, []))

    def add_system(self, message: Message | str, *, tag: str | None = None) -> Message:
        """Add a system message, untagged or under ``tag``."""
        msg = Message.system(message) if isinstance(message, str) else message
        if msg.role != "system":
            msg = msg.model_copy(update={"role": "system"})
        if tag is None:
            self._system.append(msg)
        else:
            self._tagged.setdefault(tag, []).append(msg)
        return msg

    def set_system_messages(self, messages: Iterable[Message | str]) -> None:
        """Replace the untagged system messages; tagged ones stay."""
        self._system = [Message.system(m) if isinstance(m, str) else m for m in messages]

    def clear_system_messages(self, *, tag: str | None = None) -> None:
        """Remove the untagged system messages, or those under ``tag``."""
        if tag is None:
            self._system = []
        else:
            self._tagged.pop(tag, None)

    # -- signals -------------------------------------------------------------------------------------

    def add_signal(
        self,
        contents: str,
        *,
        signal: SignalInfo,
        key: str | None = None,
        source: Source = "input",
    ) -> Message:
        """Add a signal message; a transient one replaces an earlier transient signal with the same key."""
        message = Message(
            role="signal",
            content=MessageContent(parts=[TextPart(text=contents)]),
            signal=signal,
        )
        if signal.transient:
            self._transient.pop(key or message.id, None)
            self._transient[key or message.id] = message
        else:
            self._insert(message, source)
        return message

    @property
    def transient_signals(self) -> list[Message]:
        """The transient signals for the current call, oldest first."""
        return list(self._transient.values())

    def clear_transient_signals(self) -> None:
        """Drop every transient signal."""
        self._transient.clear()

    # -- conversions ---------------------------------------------------------------------------------

    def to_prompt(self, *, include_system: bool = True) -> Prompt:
        """Convert to the provider-neutral prompt.

        System messages come first; each assistant message is split at tool results so that every tool
        call is followed by a ``tool`` message carrying its result; a call whose result is in a later
        ``tool`` message (a replayed OpenAI-style conversation) is sent as a call, answered there; tool
        calls that never got a result are left out (providers reject unanswered calls); signals become
        user messages rendered as ``<tag attr="…">contents</tag>``; transient signals come last.
        """
        prompt: Prompt = []
        if include_system:
            for message in self.system_messages:
                text = message.text
                if text:
                    prompt.append(PromptMessage(role="system", content=[PromptText(text=text)]))
        answered = answered_calls(self._messages)
        for message in self._messages:
            prompt.extend(message_to_prompt(message, answered))
        for message in self._transient.values():
            prompt.extend(message_to_prompt(message))
        return prompt

    def to_ui_messages(self, *, include_signals: bool = False) -> list[UIMessage]:
        """Convert to UI messages; signals are hidden unless ``include_signals``."""
        out: list[UIMessage] = []
        for message in self._messages:
            if message.role == "signal" and not include_signals:
                continue
            if message.role == "tool":
                continue
            parts = list(message.content.parts)
            if not parts and message.content.content:
                parts = [TextPart(text=message.content.content)]
            out.append(
                UIMessage(
                    id=message.id,
                    role=message.role,
                    parts=parts,
                    metadata=dict(message.content.metadata),
                    created_at=message.created_at,
                )
            )
        return out

    def copy(self) -> MessageList:
        """Return an independent copy (messages deep-copied), for branches that must not share edits."""
        clone = MessageList(thread_id=self.thread_id, resource_id=self.resource_id)
        clone._messages = [clone_message(m) for m in self._messages]
        clone._sources = dict(self._sources)
        clone._positions = None
        clone._memory_count = self._memory_count
        clone._system = [clone_message(m) for m in self._system]
        clone._tagged = {k: [clone_message(m) for m in v] for k, v in self._tagged.items()}
        clone._transient = {k: clone_message(m) for k, m in self._transient.items()}
        return clone

    def __repr__(self) -> str:
        return f"MessageList({len(self._messages)} messages, {len(self.system_messages)} system)"

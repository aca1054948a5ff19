"""The stored message: role, typed parts, a flattened text fallback and metadata."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from procflow._messages.parts import Part, TextPart, ToolInvocationPart

__all__ = ["Message", "MessageContent", "Role", "SignalInfo", "new_id"]

Role = Literal["user", "assistant", "system", "tool", "signal"]
"""Who a message is from; ``signal`` messages carry context for the model, hidden from UI messages."""


def new_id(prefix: str = "msg") -> str:
    """Return a fresh random identifier such as ``msg_3f2a…``."""
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


def _now() -> datetime:
    return datetime.now(UTC)


class MessageContent(BaseModel):
    """What a message says: its parts, the flattened text fallback and free-form metadata.

    ``content`` mirrors the seed's ``content.content``: a plain string kept for older readers. Text
    processors must look at both the text parts and this fallback.
    """

    model_config = ConfigDict(extra="allow")

    format: int = 2
    parts: list[Part] = Field(default_factory=list)
    content: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class SignalInfo(BaseModel):
    """How a ``signal`` message is rendered to the model: ``<tag_name attr="…">contents</tag_name>``."""

    type: str = "reactive"
    tag_name: str = "system-reminder"
    attributes: dict[str, str] = Field(default_factory=dict)
    transient: bool = False


class Message(BaseModel):
    """One message of a conversation, as stored and as processors see it."""

    model_config = ConfigDict(extra="allow")

    id: str = Field(default_factory=new_id)
    role: Role
    content: MessageContent = Field(default_factory=MessageContent)
    created_at: datetime = Field(default_factory=_now)
    thread_id: str | None = None
    resource_id: str | None = None
    signal: SignalInfo | None = None

    @classmethod
    def from_text(cls, role: Role, text: str, **fields: Any) -> Message:
        """Build a message holding one text part."""
        return cls(role=role, content=MessageContent(parts=[TextPart(text=text)]), **fields)

    @classmethod
    def user(cls, text: str, **fields: Any) -> Message:
        """Build a user message holding ``text``."""
        return cls.from_text("user", text, **fields)

    @classmethod
    def assistant(cls, text: str, **fields: Any) -> Message:
        """Build an assistant message holding ``text``."""
        return cls.from_text("assistant", text, **fields)

    @classmethod
    def system(cls, text: str, **fields: Any) -> Message:
        """Build a system message holding ``text``."""
        return cls.from_text("system", text, **fields)

    @property
    def text(self) -> str:
        """The message's text: its text parts joined, or the flattened fallback when it has none."""
        texts = [p.text for p in self.content.parts if isinstance(p, TextPart)]
        if texts:
            return "".join(texts)
        return self.content.content or ""

    @property
    def metadata(self) -> dict[str, Any]:
        """The message's metadata (stored at ``content.metadata``, as in the seed)."""
        return self.content.metadata

    @property
    def tool_invocations(self) -> list[ToolInvocationPart]:
        """The tool-invocation parts of this message, in order."""
        return [p for p in self.content.parts if isinstance(p, ToolInvocationPart)]

    def with_text(self, text: str) -> Message:
        """Return a copy whose text parts are replaced by one text part holding ``text``.

        Non-text parts keep their places; the new text takes the place of the first text part.
        """
        parts: list[Part] = []
        placed = False
        for part in self.content.parts:
            if isinstance(part, TextPart):
                if not placed:
                    parts.append(TextPart(text=text))
                    placed = True
            else:
                parts.append(part)
        if not placed:
            parts.append(TextPart(text=text))
        fallback = text if self.content.content is not None else None
        content = self.content.model_copy(update={"parts": parts, "content": fallback})
        return self.model_copy(update={"content": content})

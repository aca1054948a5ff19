"""The provider-neutral prompt: what a model provider receives for one call.

:meth:`MessageList.to_prompt` builds it; ``process_llm_request`` processors may rewrite it for one call;
providers translate it to their wire format.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Prompt",
    "PromptFile",
    "PromptMessage",
    "PromptPart",
    "PromptReasoning",
    "PromptText",
    "PromptToolCall",
    "PromptToolResult",
    "prompt_text",
]


class _PromptBase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class PromptText(_PromptBase):
    """Text in a prompt message."""

    type: Literal["text"] = "text"
    text: str


class PromptReasoning(_PromptBase):
    """Reasoning the model produced earlier, replayed to providers that accept it."""

    type: Literal["reasoning"] = "reasoning"
    text: str
    signature: str | None = None


class PromptFile(_PromptBase):
    """A file or image: inline base64 ``data`` or a ``url``."""

    type: Literal["file"] = "file"
    media_type: str
    data: str | None = None
    url: str | None = None
    filename: str | None = None


class PromptToolCall(_PromptBase):
    """A tool call made by the assistant."""

    type: Literal["tool-call"] = "tool-call"
    tool_call_id: str
    tool_name: str
    args: dict[str, Any] = Field(default_factory=dict)


class PromptToolResult(_PromptBase):
    """The result of a tool call, sent back in a ``tool`` message."""

    type: Literal["tool-result"] = "tool-result"
    tool_call_id: str
    tool_name: str
    result: Any = None
    is_error: bool = False


PromptPart = Annotated[
    PromptText | PromptReasoning | PromptFile | PromptToolCall | PromptToolResult,
    Field(discriminator="type"),
]
"""One part of a prompt message, told apart by its ``type``."""


class PromptMessage(_PromptBase):
    """One prompt message: a role and its content parts.

    ``system`` messages hold text parts only; ``user`` messages text and files; ``assistant`` messages
    text, reasoning, files and tool calls; ``tool`` messages the results of the previous tool calls.
    """

    role: Literal["system", "user", "assistant", "tool"]
    content: list[PromptPart]

    @property
    def text(self) -> str:
        """The text parts joined."""
        return "".join(p.text for p in self.content if isinstance(p, PromptText))


Prompt = list[PromptMessage]
"""The provider-neutral prompt a model is sent: a list of prompt messages."""


def prompt_text(prompt: Prompt) -> str:
    """Return every text of a prompt joined with newlines (for counting and logging)."""
    return "\n".join(m.text for m in prompt)

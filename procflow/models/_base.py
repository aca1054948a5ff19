"""The ``LanguageModel`` protocol every provider (and the scripted test model) implements."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from procflow._messages.chunk import Chunk
from procflow._messages.prompt import Prompt
from procflow._messages.results import FinishReason, ToolCall, Usage
from procflow._tools._tool import ToolSpec

__all__ = ["LanguageModel", "ModelRequest", "ModelResponse", "ToolChoice"]

ToolChoice = Literal["auto", "none", "required"] | str
"""``auto`` (default), ``none``, ``required``, or the name of one tool the model must call."""


@dataclass(slots=True)
class ModelRequest:
    """One call to a model: the prompt plus call settings."""

    prompt: Prompt
    tools: list[ToolSpec] = field(default_factory=list)
    tool_choice: ToolChoice | None = None
    response_format: dict[str, Any] | None = None
    temperature: float | None = None
    max_output_tokens: int | None = None
    provider_options: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class ModelResponse:
    """A whole (non-streamed) model answer."""

    text: str = ""
    reasoning_text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: FinishReason = "stop"
    usage: Usage = field(default_factory=Usage)
    raw: Any = None
    reasoning_signature: str | None = None
    """The provider's signature of the reasoning (Anthropic thinking), needed to replay it later."""


@runtime_checkable
class LanguageModel(Protocol):
    """A chat model. ``stream()`` yields procflow chunks — the same chunks whatever the provider:

    ``text-delta`` ``{"text"}``, ``reasoning-delta`` ``{"text"}``, ``tool-call``
    ``{"tool_call_id", "tool_name", "args"}`` (arguments fully assembled), and one final ``finish``
    ``{"finish_reason", "usage": Usage}``; optionally ``response-metadata`` ``{"id", "model_id"}``, and
    a ``reasoning-delta`` with a ``"signature"`` (and empty text) when the provider signs its reasoning.
    Failures raise :class:`~procflow.errors.APICallError`, after any chunks already received.
    """

    @property
    def provider(self) -> str:
        """The provider name, e.g. ``"openai"``."""
        ...

    @property
    def model_id(self) -> str:
        """The provider's model id, e.g. ``"gpt-5-mini"``."""
        ...

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Return the whole answer for ``request``."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        """Stream the answer for ``request`` as chunks."""
        ...

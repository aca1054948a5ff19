"""What the fake provider answers (scripted replies) and what it records (requests)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["FakeReply", "FakeToolCall", "RecordedRequest", "Responder"]


@dataclass(frozen=True, slots=True)
class FakeToolCall:
    """A tool call the fake model makes; ``id`` defaults to ``call_<n>`` / ``toolu_<n>``."""

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True, slots=True)
class FakeReply:
    """One scripted answer, rendered in the wire format of the endpoint that was called.

    Attributes:
        text: The answer text, streamed in pieces of ``chunk_size`` characters.
        reasoning: Reasoning text (``reasoning_content`` for OpenAI, a signed thinking block for Anthropic).
        tool_calls: Tool calls; their JSON arguments are streamed in pieces too.
        finish_reason: procflow's name for it; defaults to ``tool-calls`` with tool calls, else ``stop``.
        input_tokens, output_tokens, cached_input_tokens: The usage reported.
        status: HTTP status; 400 and above sends the provider's error body instead of an answer.
        error_message, error_type, error_code: The error body's fields (type defaults by status).
        headers: Extra response headers, e.g. ``{"Retry-After": "2"}``.
        body: A raw body sent as is with ``status`` (for malformed or unusual answers), as
            ``application/json`` unless ``headers`` set a ``Content-Type``.
        delay: Seconds to wait before answering and between streamed events.
        first_delay: Seconds to wait before answering instead of ``delay`` (a model's time to the
            first token, then ``delay`` between events); ``None`` waits ``delay``.
        break_after: Drop the connection after this many content events of a stream.
        malformed_after: Send an event that is not JSON after this many content events.
        error_after: Send the provider's in-stream error event after this many content events.
    """

    text: str = ""
    reasoning: str = ""
    tool_calls: Sequence[FakeToolCall] = ()
    finish_reason: Literal["stop", "length", "tool-calls", "content-filter"] | None = None
    input_tokens: int = 10
    output_tokens: int = 5
    cached_input_tokens: int = 0
    chunk_size: int = 4
    status: int = 200
    error_message: str | None = None
    error_type: str | None = None
    error_code: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    body: str | None = None
    delay: float = 0.0
    first_delay: float | None = None
    break_after: int | None = None
    malformed_after: int | None = None
    error_after: int | None = None

    @classmethod
    def error(
        cls,
        status: int,
        message: str | None = None,
        *,
        error_type: str | None = None,
        error_code: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> FakeReply:
        """An HTTP error answer, e.g. ``FakeReply.error(429, headers={"Retry-After": "0"})``."""
        return cls(
            status=status,
            error_message=message,
            error_type=error_type,
            error_code=error_code,
            headers=dict(headers or {}),
        )

    @classmethod
    def tool_call(
        cls, name: str, args: Mapping[str, Any] | None = None, *, id: str | None = None
    ) -> FakeReply:
        """An answer that calls one tool."""
        return cls(tool_calls=[FakeToolCall(name, dict(args or {}), id)])


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """A request the fake server received."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        """The body parsed as JSON, or ``None`` when it is not JSON."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None


Responder = Callable[[RecordedRequest], FakeReply]
"""Builds a reply from the request, for answers that depend on what was sent."""

"""What a model step and a whole generation produce: usage, tool calls and results, step records."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from procflow._messages.chunk import Chunk
from procflow._messages.message import Message

__all__ = ["FinishReason", "OutputResult", "StepResult", "ToolCall", "ToolResult", "Usage"]

FinishReason = Literal[
    "stop", "length", "content-filter", "tool-calls", "error", "other", "tripwire", "aborted", "unknown"
]
"""Why a step or a generation ended. ``other`` marks a tripwire stop; ``tripwire`` a step rejected for
good by ``process_output_step`` (or a processor retry that could not be granted); ``aborted`` a
cancellation by the caller."""


@dataclass(slots=True)
class Usage:
    """Token usage of one call or a sum of calls; counts are never negative."""

    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cached_input_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            self.cached_input_tokens + other.cached_input_tokens,
        )

    def to_dict(self) -> dict[str, int]:
        """Return a JSON-ready dict including ``total_tokens``."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "cached_input_tokens": self.cached_input_tokens,
        }


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call the model asked for."""

    tool_call_id: str
    tool_name: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of one executed tool call.

    ``model_output`` is what the model was shown instead of ``result``, when the tool declares a
    ``to_model_output`` (``None``: the model saw ``result``).
    """

    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    result: Any
    is_error: bool = False
    model_output: Any = None


@dataclass(slots=True)
class StepResult:
    """One model step of the agent loop: what the model said, which tools ran, how it ended."""

    step_number: int
    text: str = ""
    reasoning_text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_results: list[ToolResult] = field(default_factory=list)
    finish_reason: FinishReason = "unknown"
    usage: Usage = field(default_factory=Usage)
    chunks: list[Chunk] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    from_cache: bool = False


@dataclass(slots=True)
class OutputResult:
    """The whole generation as ``process_output_result`` sees it."""

    text: str = ""
    usage: Usage = field(default_factory=Usage)
    finish_reason: FinishReason = "unknown"
    steps: list[StepResult] = field(default_factory=list)

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Every tool call of every step."""
        return [call for step in self.steps for call in step.tool_calls]

    @property
    def tool_results(self) -> list[ToolResult]:
        """Every tool result of every step."""
        return [res for step in self.steps for res in step.tool_results]

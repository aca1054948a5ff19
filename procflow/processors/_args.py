"""The typed argument object of every hook, and the result types hooks may return.

Results may be returned as these dataclasses or, seed-style, as plain dicts with the same keys
(``{"messages": [...], "system_messages": [...]}``). Args objects are valid for the duration of the
call only: the stream phase reuses one object per processor across chunks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from procflow._messages.chunk import Chunk
from procflow._messages.message import Message
from procflow._messages.message_list import MessageList
from procflow._messages.prompt import Prompt
from procflow._messages.request_context import RequestContext
from procflow._messages.results import FinishReason, OutputResult, StepResult, ToolCall, ToolResult, Usage
from procflow._messages.writer import StreamWriter
from procflow.processors._base import AbortFn, SignalSender

if TYPE_CHECKING:
    from procflow._tools._tool import Tool
    from procflow.models._base import LanguageModel

__all__ = [
    "MessagesResult",
    "ProcessAPIErrorArgs",
    "ProcessAPIErrorResult",
    "ProcessInputArgs",
    "ProcessInputResult",
    "ProcessInputStepArgs",
    "ProcessInputStepResult",
    "ProcessLLMRequestArgs",
    "ProcessLLMRequestResult",
    "ProcessLLMResponseArgs",
    "ProcessOutputResultArgs",
    "ProcessOutputStepArgs",
    "ProcessOutputStreamArgs",
    "ProcessorArgs",
    "StreamResult",
]


@dataclass(slots=True, kw_only=True)
class ProcessorArgs:
    """What every hook receives.

    Attributes:
        abort: ``abort(reason, retry=False, metadata=None)`` raises a tripwire for this processor.
        state: This processor's dict for the whole request, shared by all its hooks.
        retry_count: Consecutive processor retries so far in this request (0 on the first try).
        request_context: The per-request key/value store.
        message_list: The live message list of the request.
        writer: Emits custom ``data-*`` chunks to the stream consumer (``None`` outside a stream).
        send_signal: Adds a signal (``<system-reminder>…``) message for the model.
        processor_id: The id of the processor being called.
    """

    abort: AbortFn
    state: dict[str, Any]
    retry_count: int
    request_context: RequestContext
    message_list: MessageList
    writer: StreamWriter | None
    send_signal: SignalSender
    processor_id: str


@dataclass(slots=True, kw_only=True)
class ProcessInputArgs(ProcessorArgs):
    """``process_input``: the new input messages (history is in ``message_list``).

    ``system_messages`` are the untagged system messages; tagged ones are in ``message_list``.
    """

    messages: list[Message]
    system_messages: list[Message]


@dataclass(slots=True, kw_only=True)
class ProcessInputStepArgs(ProcessorArgs):
    """``process_input_step``: all messages and the step's settings, as earlier processors left them."""

    messages: list[Message]
    system_messages: list[Message]
    step_number: int
    steps: list[StepResult]
    model: LanguageModel | str | None
    tools: dict[str, Tool]
    tool_choice: str | None
    provider_options: dict[str, Any]


@dataclass(slots=True, kw_only=True)
class ProcessLLMRequestArgs(ProcessorArgs):
    """``process_llm_request``: the final provider prompt of this call (rewrites are transient)."""

    prompt: Prompt
    model: LanguageModel | None
    step_number: int
    steps: list[StepResult]
    tools: dict[str, Tool]


@dataclass(slots=True, kw_only=True)
class ProcessLLMResponseArgs(ProcessorArgs):
    """``process_llm_response``: the chunks of a finished step, ending with a ``finish`` chunk (its finish
    reason and usage); ``from_cache`` when they were replayed.

    A model call a stream processor tripped comes here too (the provider billed it): its chunks end with
    the ``tripwire`` chunk, then a ``finish`` chunk of reason ``tripwire`` whose ``usage`` is ``None``
    when the stream was cut before the model reported it. ``dropped_chunks`` counts the step's first
    chunks missing from ``chunks`` (``stream_history`` keeps only the last ones); 0 when it is whole.
    """

    chunks: list[Chunk]
    model: LanguageModel | None
    step_number: int
    steps: list[StepResult]
    from_cache: bool
    dropped_chunks: int
    prompt: Prompt


@dataclass(slots=True, kw_only=True)
class ProcessOutputStreamArgs(ProcessorArgs):
    """``process_output_stream``: one chunk (``part``) and every chunk received so far this stream."""

    part: Chunk
    stream_parts: list[Chunk]


@dataclass(slots=True, kw_only=True)
class ProcessOutputStepArgs(ProcessorArgs):
    """``process_output_step``: after each model step, with the step's text and tool calls."""

    messages: list[Message]
    system_messages: list[Message]
    step_number: int
    steps: list[StepResult]
    text: str
    finish_reason: FinishReason
    tool_calls: list[ToolCall]
    tool_results: list[ToolResult]
    usage: Usage


@dataclass(slots=True, kw_only=True)
class ProcessOutputResultArgs(ProcessorArgs):
    """``process_output_result``: the response messages and the whole generation's result."""

    messages: list[Message]
    result: OutputResult


@dataclass(slots=True, kw_only=True)
class ProcessAPIErrorArgs(ProcessorArgs):
    """``process_api_error``: the provider error of the last model call and the live messages."""

    error: Exception
    messages: list[Message]
    step_number: int
    steps: list[StepResult]


@dataclass(slots=True, kw_only=True)
class ProcessInputResult:
    """Replace the messages of the phase and the untagged system messages."""

    messages: list[Message] | None = None
    system_messages: list[Message | str] | None = None


@dataclass(slots=True, kw_only=True)
class ProcessInputStepResult:
    """Per-step overrides; every field left ``None`` keeps its current value."""

    model: LanguageModel | str | None = None
    tools: dict[str, Tool] | None = None
    tool_choice: str | None = None
    messages: list[Message] | None = None
    system_messages: list[Message | str] | None = None
    provider_options: dict[str, Any] | None = None


@dataclass(slots=True, kw_only=True)
class ProcessLLMRequestResult:
    """Rewrite the prompt for this call, or answer instead of the model with ``chunks``."""

    prompt: Prompt | None = None
    chunks: list[Chunk] | None = None


@dataclass(slots=True, kw_only=True)
class ProcessAPIErrorResult:
    """``retry=True`` re-issues the model call (after the hook may have mended ``message_list``)."""

    retry: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)


MessagesResult: TypeAlias = (
    Sequence[Message | Mapping[str, Any]] | MessageList | ProcessInputResult | Mapping[str, Any] | None
)
"""What the message hooks may return: nothing, a list of messages (authoritative), the live
``message_list`` itself, or messages plus system messages."""

StreamResult: TypeAlias = Chunk | Sequence[Chunk] | None
"""What ``process_output_stream`` may return: the chunk (changed or not), several chunks, or ``None``."""

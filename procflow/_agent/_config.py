"""What one agent call is configured with, resolved from the agent and the call's options."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias, TypedDict

from procflow._agent._assembly import PrepareStep, Processors
from procflow._agent.memory import MemoryProcessors
from procflow._agent.output import GenerateResult
from procflow._messages.message_list import MessageInput
from procflow._messages.request_context import RequestContext
from procflow._runner.pipeline import PipelineCache
from procflow._tools._tool import Tool
from procflow.models._base import LanguageModel

__all__ = [
    "CALL_OPTION_NAMES",
    "DEFAULT_API_ERROR_RETRIES",
    "RETRY_FEEDBACK_KEY",
    "CallOptions",
    "MemoryOptions",
    "OnFinish",
    "RunConfig",
]

DEFAULT_API_ERROR_RETRIES = 10
"""Cap on re-issued model calls after provider errors when ``max_processor_retries`` is not set."""

RETRY_FEEDBACK_KEY = "procflow:processor-retry"
"""Key of the transient signal that carries a rejected step's reason to the retried call."""

OnFinish: TypeAlias = Callable[[GenerateResult], "Awaitable[None] | None"]
"""Called once with the result when a call ends (completed, stopped by a tripwire, or aborted)."""


MemoryOptions = Mapping[str, str | None]
"""A call's ``memory=`` option: ``{"thread": "THREAD_ID", "resource": "USER_ID"}`` (resource optional)."""


class CallOptions(TypedDict, total=False):
    """The options of one call, the same for ``Agent.stream``, ``generate`` and ``generate_sync``.

    Every key is optional; type-check a wrapper of your own with ``**options: Unpack[CallOptions]``.

    Attributes:
        max_steps: Model steps at most (default 5); each tool round trip is one step, retries are not.
        request_context: Per-request values processors (and processor factories) read.
        input_processors: Replace the agent's input processors for this call only (memory and framework
            processors still run around them); likewise ``output_processors`` and ``error_processors``.
        output_processors: See ``input_processors``.
        error_processors: See ``input_processors``.
        max_processor_retries: Replace the agent's retry cap for this call.
        prepare_step: A ``process_input_step`` hook as a function, run after the input processors.
        tool_choice: ``"auto"``, ``"none"``, ``"required"`` or a tool name.
        on_finish: Called with the :class:`GenerateResult` when the call ends — completed, stopped by a
            tripwire, or aborted by cancellation (it then runs shielded, so keep it short).
        memory: ``{"thread": ..., "resource": ...}``: the conversation this call belongs to; stored in
            the request context under ``THREAD_ID_KEY`` and ``RESOURCE_ID_KEY`` (resource optional).
        stream_history: Bound what a long stream keeps: stream processors see at least the last N
            chunks (at most 2N) in ``args.stream_parts``, and each step's ``StepResult.chunks`` keeps
            its last N chunks (text, tool calls and messages are complete either way). ``None``
            (default) keeps every chunk. Processors that need the whole history keep their own state.
    """

    max_steps: int
    request_context: RequestContext | Mapping[str, Any] | None
    input_processors: Processors | None
    output_processors: Processors | None
    error_processors: Processors | None
    max_processor_retries: int | None
    prepare_step: PrepareStep | None
    tool_choice: str | None
    on_finish: OnFinish | None
    memory: MemoryOptions | None
    stream_history: int | None


CALL_OPTION_NAMES = frozenset(CallOptions.__optional_keys__)
"""The keys :class:`CallOptions` allows, to refuse a misspelt option at run time too."""


@dataclass(slots=True)
class RunConfig:
    """Everything one call needs, resolved from the agent and the call's options."""

    messages: list[MessageInput]
    instructions: list[str]
    model: LanguageModel | str
    resolve_model: Callable[[LanguageModel | str], LanguageModel]
    tools: dict[str, Tool]
    request_context: RequestContext
    input_processors: Processors
    output_processors: Processors
    error_processors: Processors
    memory: MemoryProcessors | None
    prepare_step: PrepareStep | None
    max_steps: int
    max_processor_retries: int | None
    tool_choice: str | None
    on_finish: OnFinish | None
    pipelines: PipelineCache
    stream_history: int | None = None

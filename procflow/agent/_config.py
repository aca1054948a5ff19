"""What one agent call is configured with, resolved from the agent and the call's options."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeAlias

from procflow.agent._assembly import PrepareStep, Processors
from procflow.agent.memory import MemoryProcessors
from procflow.agent.output import GenerateResult
from procflow.engine.pipeline import PipelineCache
from procflow.messages.message_list import MessageInput
from procflow.messages.request_context import RequestContext
from procflow.models.base import LanguageModel
from procflow.tools.tool import Tool

__all__ = ["DEFAULT_API_ERROR_RETRIES", "RETRY_FEEDBACK_KEY", "OnFinish", "RunConfig"]

DEFAULT_API_ERROR_RETRIES = 10
"""Cap on re-issued model calls after provider errors when ``max_processor_retries`` is not set."""

RETRY_FEEDBACK_KEY = "procflow:processor-retry"
"""Key of the transient signal that carries a rejected step's reason to the retried call."""

OnFinish: TypeAlias = Callable[[GenerateResult], "Awaitable[None] | None"]
"""Called once with the result when a call ends (completed, stopped by a tripwire, or aborted)."""


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

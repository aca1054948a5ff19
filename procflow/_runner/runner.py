"""The phase runner: runs a pipeline's hooks for each message phase with the seeds' semantics."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from procflow._logging import is_tracing, log
from procflow._messages.chunk import Chunk
from procflow._messages.message import Message
from procflow._messages.prompt import Prompt
from procflow._messages.results import OutputResult, StepResult
from procflow._messages.tripwire import TripWire
from procflow._runner.context import RunContext, report_tripwire
from procflow._runner.pipeline import BoundHook, ProcessorPipeline
from procflow._runner.results import apply_messages_result, coerce_prompt
from procflow.errors import ModelError, ProcessorFailedError, ProcessorResultError, ProcflowError
from procflow.processors._args import (
    ProcessAPIErrorArgs,
    ProcessAPIErrorResult,
    ProcessInputArgs,
    ProcessInputStepArgs,
    ProcessInputStepResult,
    ProcessLLMRequestArgs,
    ProcessLLMRequestResult,
    ProcessLLMResponseArgs,
    ProcessorArgs,
    ProcessOutputResultArgs,
    ProcessOutputStepArgs,
)

if TYPE_CHECKING:
    from procflow._tools._tool import Tool
    from procflow.models._base import LanguageModel

__all__ = ["LLMRequestOutcome", "PhaseRunner", "StepSettings", "call_hook", "hook_failed"]


def hook_failed(hook: BoundHook, hook_name: str, exc: Exception) -> None:
    """Apply the processor's failure policy to ``exc``, raised by one of its hooks.

    Logs ``processor_failed`` with the processor id, the hook and the exception's type — never its
    text, which may quote the content being checked. Then fails closed (raises
    :class:`~procflow.errors.ProcessorFailedError`: the content is withheld and the call stops) unless
    the processor declares ``fail_open = True``, in which case it returns and the caller lets the
    content pass that processor unchanged. procflow's own errors other than model errors (a misuse of
    its API inside the hook: a bad chunk type, signal name or configuration) are re-raised as they are,
    whatever the processor declares: they are bugs to fix, and their messages quote no content.
    """
    if isinstance(exc, ProcessorFailedError):
        raise exc  # an inner processor's failure (a workflow's step), already logged and judged
    log.warning(
        "processor_failed",
        processor_id=hook.processor_id,
        hook=hook_name,
        error_type=type(exc).__name__,
        fail_open=hook.fail_open,
    )
    if isinstance(exc, ProcflowError) and not isinstance(exc, ModelError):
        raise exc  # procflow's own misuse errors say what to fix and never quote content
    if not hook.fail_open:
        raise ProcessorFailedError(hook.processor_id, hook_name, exc) from None


async def call_hook(hook: BoundHook, args: Any, ctx: RunContext) -> Any:
    """Call one hook, timing it; on a tripwire fire ``on_violation`` once and re-raise.

    Any other exception goes through :func:`hook_failed`: the call stops with
    :class:`~procflow.errors.ProcessorFailedError`, or — for a ``fail_open`` processor — the hook
    counts as having returned ``None`` (no change).
    """
    if not is_tracing():
        try:
            return await hook.fn(args) if hook.is_async else hook.fn(args)
        except TripWire as tripwire:
            await report_tripwire(hook.processor, hook.processor_id, tripwire)
            raise
        except Exception as exc:
            hook_failed(hook, hook.name, exc)
            return None
    started = time.perf_counter()
    try:
        result = await hook.fn(args) if hook.is_async else hook.fn(args)
    except TripWire as tripwire:
        await report_tripwire(hook.processor, hook.processor_id, tripwire)
        raise
    except Exception as exc:
        hook_failed(hook, hook.name, exc)
        return None
    log.debug(
        "processor_finished",
        processor_id=hook.processor_id,
        hook=hook.name,
        duration_ms=round((time.perf_counter() - started) * 1000, 3),
    )
    return result


@dataclass(slots=True)
class StepSettings:
    """The settings of one model step, as ``process_input_step`` processors leave them."""

    step_number: int
    model: LanguageModel | str | None = None
    tools: dict[str, Tool] = field(default_factory=dict)
    tool_choice: str | None = None
    provider_options: dict[str, Any] = field(default_factory=dict)
    steps: list[StepResult] = field(default_factory=list)


@dataclass(slots=True)
class LLMRequestOutcome:
    """The prompt to send, or the chunks a processor answered with instead of the model."""

    prompt: Prompt
    chunks: list[Chunk] | None = None
    answered_by: str | None = None


_A = TypeVar("_A", bound=ProcessorArgs)
_new = object.__new__


def _args(cls: type[_A], hook: BoundHook, ctx: RunContext) -> _A:
    """A new ``cls`` with the fields every hook shares set; the caller sets the phase's own fields.

    Made without the dataclass ``__init__``: matching a dozen keywords costs more than the rest of a
    trivial hook's call. The phases set every remaining field (``tests/test_runner_args.py`` checks).
    """
    args: _A = _new(cls)
    args.state, args.send_signal = ctx.hook_env(hook.processor_id, hook.processor)
    args.abort = hook.abort
    args.retry_count = ctx.retry_count
    args.request_context = ctx.request_context
    args.message_list = ctx.message_list
    args.writer = ctx.writer
    args.processor_id = hook.processor_id
    return args


class PhaseRunner:
    """Runs the message phases of one :class:`ProcessorPipeline` for one request."""

    __slots__ = ("ctx", "pipeline")

    def __init__(self, pipeline: ProcessorPipeline, ctx: RunContext) -> None:
        self.pipeline = pipeline
        self.ctx = ctx

    async def run_input(self) -> None:
        """``process_input``: each processor sees the new input messages; results rewrite them."""
        ctx = self.ctx
        ml = ctx.message_list
        for hook in self.pipeline.phase("process_input"):
            scope = ml.input
            args = _args(ProcessInputArgs, hook, ctx)
            args.messages = scope
            args.system_messages = ml.untagged_system_messages
            result = await call_hook(hook, args, ctx)
            if result is not None:
                apply_messages_result(
                    ml, result, scope=scope, processor_id=hook.processor_id, hook="process_input"
                )

    async def run_input_step(self, settings: StepSettings) -> StepSettings:
        """``process_input_step``: overrides accumulate so later processors see earlier ones."""
        ctx = self.ctx
        ml = ctx.message_list
        for hook in self.pipeline.phase("process_input_step"):
            scope = ml.all
            args = _args(ProcessInputStepArgs, hook, ctx)
            args.messages = scope
            args.system_messages = ml.untagged_system_messages
            args.step_number = settings.step_number
            args.steps = settings.steps
            args.model = settings.model
            args.tools = dict(settings.tools)
            args.tool_choice = settings.tool_choice
            args.provider_options = dict(settings.provider_options)
            result = await call_hook(hook, args, ctx)
            _apply_step_result(settings, result, scope, ctx, hook)
        return settings

    async def run_llm_request(self, prompt: Prompt, settings: StepSettings) -> LLMRequestOutcome:
        """``process_llm_request``: rewrite this call's prompt, or answer instead of the model."""
        ctx = self.ctx
        outcome = LLMRequestOutcome(prompt=prompt)
        model = settings.model if not isinstance(settings.model, str) else None
        for hook in self.pipeline.phase("process_llm_request"):
            args = _args(ProcessLLMRequestArgs, hook, ctx)
            args.prompt = outcome.prompt
            args.model = model
            args.step_number = settings.step_number
            args.steps = settings.steps
            args.tools = settings.tools
            result = await call_hook(hook, args, ctx)
            if result is None:
                continue
            if isinstance(result, Mapping):
                result = ProcessLLMRequestResult(prompt=result.get("prompt"), chunks=result.get("chunks"))
            if isinstance(result, ProcessLLMRequestResult):
                if result.prompt is not None:
                    outcome.prompt = coerce_prompt(result.prompt, hook.processor_id)
                if result.chunks is not None:
                    outcome.chunks = list(result.chunks)
                    outcome.answered_by = hook.processor_id
                    return outcome
            elif isinstance(result, list):
                outcome.prompt = coerce_prompt(result, hook.processor_id)
            else:
                raise ProcessorResultError(
                    hook.processor_id,
                    "process_llm_request",
                    f"returned {type(result).__name__}; return None, a prompt (list of PromptMessage) or "
                    "ProcessLLMRequestResult(prompt=..., chunks=...)",
                )
        return outcome

    async def run_llm_response(
        self,
        chunks: list[Chunk],
        settings: StepSettings,
        *,
        prompt: Prompt,
        from_cache: bool,
        dropped_chunks: int,
    ) -> None:
        """``process_llm_response``: side effects once a step's chunks are collected."""
        ctx = self.ctx
        model = settings.model if not isinstance(settings.model, str) else None
        for hook in self.pipeline.phase("process_llm_response"):
            args = _args(ProcessLLMResponseArgs, hook, ctx)
            args.chunks = chunks
            args.model = model
            args.step_number = settings.step_number
            args.steps = settings.steps
            args.from_cache = from_cache
            args.dropped_chunks = dropped_chunks
            args.prompt = prompt
            await call_hook(hook, args, ctx)

    async def run_output_step(self, step: StepResult, steps: list[StepResult]) -> None:
        """``process_output_step``: validate each model step; may abort with ``retry=True``.

        A returned non-empty list is authoritative over all messages; an empty list — the seed's
        validators' ``return []`` — means "no change".
        """
        ctx = self.ctx
        ml = ctx.message_list
        for hook in self.pipeline.phase("process_output_step"):
            scope = ml.all
            args = _args(ProcessOutputStepArgs, hook, ctx)
            args.messages = scope
            args.system_messages = ml.untagged_system_messages
            args.step_number = step.step_number
            args.steps = steps
            args.text = step.text
            args.finish_reason = step.finish_reason
            args.tool_calls = list(step.tool_calls)
            args.tool_results = list(step.tool_results)
            args.usage = step.usage
            result = await call_hook(hook, args, ctx)
            if isinstance(result, Sequence) and not isinstance(result, str) and len(result) == 0:
                continue
            apply_messages_result(
                ml, result, scope=scope, processor_id=hook.processor_id, hook="process_output_step"
            )

    async def run_output_result(self, result: OutputResult) -> None:
        """``process_output_result``: rewrite the response messages once, on the final result."""
        ctx = self.ctx
        ml = ctx.message_list
        for hook in self.pipeline.phase("process_output_result"):
            scope = ml.response
            args = _args(ProcessOutputResultArgs, hook, ctx)
            args.messages = scope
            args.result = result
            returned = await call_hook(hook, args, ctx)
            if returned is not None:
                apply_messages_result(
                    ml, returned, scope=scope, processor_id=hook.processor_id, hook="process_output_result"
                )

    async def run_api_error(self, error: Exception, settings: StepSettings) -> str | None:
        """``process_api_error``: return the id of the first processor asking to retry, else ``None``."""
        ctx = self.ctx
        ml = ctx.message_list
        for hook in self.pipeline.phase("process_api_error"):
            args = _args(ProcessAPIErrorArgs, hook, ctx)
            args.error = error
            args.messages = ml.all
            args.step_number = settings.step_number
            args.steps = settings.steps
            result = await call_hook(hook, args, ctx)
            if isinstance(result, Mapping):
                result = ProcessAPIErrorResult(retry=bool(result.get("retry", False)))
            if isinstance(result, ProcessAPIErrorResult) and result.retry:
                return hook.processor_id
            if result is not None and not isinstance(result, ProcessAPIErrorResult):
                raise ProcessorResultError(
                    hook.processor_id,
                    "process_api_error",
                    f"returned {type(result).__name__}; return None or {{'retry': True}}",
                )
        return None


def _apply_step_result(
    settings: StepSettings, result: Any, scope: list[Message], ctx: RunContext, hook: BoundHook
) -> None:
    if result is None:
        return
    if isinstance(result, Mapping):
        unknown = set(result) - {
            "model",
            "tools",
            "tool_choice",
            "messages",
            "system_messages",
            "provider_options",
        }
        if unknown:
            raise ProcessorResultError(
                hook.processor_id,
                "process_input_step",
                f"returned unknown keys {sorted(unknown)}; allowed: model, tools, tool_choice, messages, "
                "system_messages, provider_options",
            )
        result = ProcessInputStepResult(**result)
    if not isinstance(result, ProcessInputStepResult):
        raise ProcessorResultError(
            hook.processor_id,
            "process_input_step",
            f"returned {type(result).__name__}; return None, a dict of overrides or ProcessInputStepResult",
        )
    if result.model is not None:
        settings.model = result.model
    if result.tools is not None:
        settings.tools = dict(result.tools)
    if result.tool_choice is not None:
        settings.tool_choice = result.tool_choice
    if result.provider_options is not None:
        settings.provider_options = {**settings.provider_options, **result.provider_options}
    if result.messages is not None or result.system_messages is not None:
        apply_messages_result(
            ctx.message_list,
            {"messages": result.messages, "system_messages": result.system_messages},
            scope=scope,
            processor_id=hook.processor_id,
            hook="process_input_step",
        )

"""A processor workflow as a processor: an adapter over its plan, one hook per phase its steps implement.

Each message-phase hook builds the phase-tagged :class:`ProcessorStepSchema` over the live request, runs
the plan and hands the outcome back the way a plain processor's return value is applied — in all eight
phases, the LLM request/response and API-error ones included. The workflow's own per-request ``state``
*is* the state of its inner processors: one dict per inner processor id, kept for the whole request, so
their state persists across phases and stream chunks exactly as when they are listed directly. A
tripwire inside was already reported by the phase runner for the inner processor (``on_violation``
fired, ``processor_id`` set); it is re-raised as is, so the agent emits the same ``tripwire`` chunk and
``result.tripwire`` as for the plain processor.

When the plan holds only processor steps, selections and such nested workflows and tracing is off, no
user code can read step records, so the plan runs lean (:func:`procflow._engine.executor.run_lean`):
the same stages, runs of processor steps fused into one phase runner, no records or events.

The stream phase never runs the plan per chunk: the plan's stages are compiled once into stream parts
(:func:`procflow._engine._stages.stream_chain`), and ``open_output_stream`` opens them per stream.
"""

from __future__ import annotations

import inspect
from typing import Any

from procflow._engine._stages import stream_chain
from procflow._engine._stream_parts import BranchPart, ForkPart, ProcessorsPart, StreamChain, StreamEnv
from procflow._engine.executor import execute_plan, run_lean
from procflow._engine.graph import iter_processor_steps
from procflow._engine.plan import PlanNode, WorkflowPlan
from procflow._engine.run_state import RunState
from procflow._logging import is_tracing
from procflow._messages.chunk import Chunk
from procflow._messages.message import Message
from procflow._messages.message_list import MessageList
from procflow._messages.results import OutputResult, StepResult
from procflow._runner.context import RunContext
from procflow._runner.pipeline import processor_id_of
from procflow._runner.runner import StepSettings
from procflow.errors import ConfigurationError, ProcessorResultError
from procflow.processors._args import (
    MessagesResult,
    ProcessAPIErrorArgs,
    ProcessAPIErrorResult,
    ProcessInputArgs,
    ProcessInputStepArgs,
    ProcessInputStepResult,
    ProcessLLMRequestArgs,
    ProcessLLMRequestResult,
    ProcessLLMResponseArgs,
    ProcessOutputResultArgs,
    ProcessOutputStepArgs,
    ProcessOutputStreamArgs,
    StreamResult,
)
from procflow.processors._tool_results import has_tool_results, is_on_tool_results_only
from procflow.workflows._processor_data import PHASE_HOOKS, ProcessorPhase, ProcessorStepSchema, inner_context

__all__ = ["ProcessorAdapter"]

_MESSAGE_PHASES: frozenset[ProcessorPhase] = frozenset(
    {"input", "input_step", "output_stream", "output_step", "output_result"}
)
"""Phases a plain step gives a workflow on its own (the model-call phases need an inner processor)."""


def _has_plain_steps(plan: WorkflowPlan) -> bool:
    for stage in plan.stages:
        for node in stage.nodes:
            if node.kind == "step" or (node.subplan is not None and _has_plain_steps(node.subplan)):
                return True
    return False


class _Hook:
    """A hook the adapter has only when something inside runs in its phase (``None`` otherwise)."""

    __slots__ = ("impl", "phase")

    def __init__(self, phase: ProcessorPhase | None, impl: str) -> None:
        self.phase = phase
        self.impl = impl

    def __get__(self, obj: ProcessorAdapter | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        wanted = obj.wants_flush if self.phase is None else self.phase in obj.phases
        return getattr(obj, self.impl) if wanted else None


class ProcessorAdapter:
    """What makes a committed workflow with ``ProcessorStepSchema`` in and out a processor over its plan.

    It has the hooks of the phases its steps implement (``None`` for the others, so processor lists
    skip it there); plain steps add the five message and stream phases. A workflow with other schemas
    takes part in no phase.

    Attributes:
        plan: The plan the hooks run.
        phases: The phases it takes part in.
        wants_flush: Whether an inner stream processor holds chunks back until the end of the stream.
        process_data_parts: Whether ``data-*`` chunks reach it (when any inner processor asks for them).
        output_stream_problem: Why the workflow cannot guard an output stream (``None``: it can): a
            processor that withholds text until its verdict sits in a parallel branch whose stream output
            ``select`` drops (the kept branch releases the text before that verdict), or in a
            ``.branch`` case (each chunk is routed on its own, so it would see only some of a
            sentence). An agent refuses the workflow among its ``output_processors``; as an input
            processor it is fine.
        processor_steps: ``(path, processor)`` for every processor step inside, at any depth, in
            definition order; ``path`` leads from this workflow's id to the step's id through the nested
            workflows, parallel blocks and branches it sits in (``("outer", "inner", "parallel:0",
            "processor:pii-detector")``). An agent refuses a step with none of the hooks of the list
            the workflow is in (the workflow has them from its other steps, so the step would be
            skipped in silence).
    """

    id: str
    plan: WorkflowPlan
    phases: frozenset[ProcessorPhase]
    wants_flush: bool
    process_data_parts: bool
    output_stream_problem: str | None = None
    processor_steps: tuple[tuple[tuple[str, ...], Any], ...] = ()
    _stream: StreamChain | None
    _step_on_tool_results: bool = False

    process_input = _Hook("input", "_input")
    process_input_step = _Hook("input_step", "_input_step")
    process_llm_request = _Hook("llm_request", "_llm_request")
    process_llm_response = _Hook("llm_response", "_llm_response")
    process_output_stream = _Hook("output_stream", "_output_stream")
    flush_output_stream = _Hook(None, "_flush_output_stream")
    process_output_step = _Hook("output_step", "_output_step")
    process_output_result = _Hook("output_result", "_output_result")
    process_api_error = _Hook("api_error", "_api_error")

    def _adapt(self, plan: WorkflowPlan, *, is_processor: bool) -> None:
        if not is_processor:
            self.phases, self.wants_flush, self.process_data_parts, self._stream = (
                frozenset(),
                False,
                False,
                None,
            )
            return
        self.processor_steps = tuple(iter_processor_steps(plan))
        processors = [processor for _, processor in self.processor_steps]
        plain = _has_plain_steps(plan)
        self.phases = frozenset(
            phase
            for phase, hook in PHASE_HOOKS.items()
            if (plain and phase in _MESSAGE_PHASES)
            or any(callable(getattr(p, hook, None)) for p in processors)
        )
        self._step_on_tool_results = not plain and all(
            p._step_on_tool_results if isinstance(p, ProcessorAdapter) else is_on_tool_results_only(hook)
            for p in processors
            if callable(hook := getattr(p, "process_input_step", None))
        )
        self.wants_flush = any(callable(getattr(p, "flush_output_stream", None)) for p in processors)
        self.process_data_parts = any(bool(getattr(p, "process_data_parts", False)) for p in processors)
        self._stream = stream_chain(plan.stages) if "output_stream" in self.phases else None
        problems = _stream_problems(self._stream) if self._stream is not None else []
        if problems:
            pid, why = problems[0]
            self.output_stream_problem = (
                f"workflow {self.id!r} cannot guard an output stream: {pid!r} holds text back until its "
                f"verdict, but {why}"
            )

    async def _run(self, data: ProcessorStepSchema, hook: str) -> ProcessorStepSchema:
        plan = self.plan
        if plan.lean and not is_tracing():
            run = RunState(plan.id, request_context=data.context.request_context, lean=True)
            out = await run_lean(plan, data, run)
        else:
            result = await execute_plan(plan, data, request_context=data.context.request_context)
            if result.error is not None:
                raise result.error
            out = result.output
        if not isinstance(out, ProcessorStepSchema):
            raise ProcessorResultError(
                self.id,
                hook,
                f"the workflow returned a {type(out).__name__}; end it with a processor step, "
                ".map(select(...)) or .map(merge_branches()) so it returns ProcessorStepSchema",
            )
        return out

    # -- message phases --------------------------------------------------------------------------

    async def _input(self, args: ProcessInputArgs) -> MessagesResult:
        ctx = inner_context(args)
        out = await self._run(ProcessorStepSchema(phase="input", context=ctx), "process_input")
        return _messages_result(out, args)

    async def _input_step(self, args: ProcessInputStepArgs) -> ProcessInputStepResult:
        if self._step_on_tool_results and not has_tool_results(args.message_list.response):
            return ProcessInputStepResult()  # every inner hook would change nothing: no run
        settings = StepSettings(
            step_number=args.step_number,
            model=args.model,
            tools=dict(args.tools),
            tool_choice=args.tool_choice,
            provider_options=dict(args.provider_options),
            steps=args.steps,
        )
        data = ProcessorStepSchema(
            phase="input_step", context=inner_context(args), settings=settings, steps=args.steps
        )
        out = await self._run(data, "process_input_step")
        final = out.settings or settings
        result = ProcessInputStepResult(
            model=final.model,
            tools=final.tools,
            tool_choice=final.tool_choice,
            provider_options=final.provider_options,
        )
        if out.message_list is not args.message_list:
            system: list[Message | str] = list(out.system_messages)
            result.messages, result.system_messages = out.messages, system
        return result

    async def _llm_request(self, args: ProcessLLMRequestArgs) -> ProcessLLMRequestResult | None:
        settings = StepSettings(
            step_number=args.step_number, model=args.model, tools=dict(args.tools), steps=args.steps
        )
        data = ProcessorStepSchema(
            phase="llm_request",
            context=inner_context(args),
            settings=settings,
            steps=args.steps,
            prompt=args.prompt,
        )
        out = await self._run(data, "process_llm_request")
        prompt = out.prompt if out.prompt is not args.prompt else None
        if prompt is None and out.answer is None:
            return None
        return ProcessLLMRequestResult(prompt=prompt, chunks=out.answer)

    async def _llm_response(self, args: ProcessLLMResponseArgs) -> None:
        settings = StepSettings(step_number=args.step_number, model=args.model, steps=args.steps)
        data = ProcessorStepSchema(
            phase="llm_response",
            context=inner_context(args),
            settings=settings,
            steps=args.steps,
            chunks=args.chunks,
            prompt=args.prompt,
            from_cache=args.from_cache,
            dropped_chunks=args.dropped_chunks,
        )
        await self._run(data, "process_llm_response")

    async def _api_error(self, args: ProcessAPIErrorArgs) -> ProcessAPIErrorResult | None:
        settings = StepSettings(step_number=args.step_number, steps=args.steps)
        data = ProcessorStepSchema(
            phase="api_error",
            context=inner_context(args),
            settings=settings,
            steps=args.steps,
            error=args.error,
        )
        out = await self._run(data, "process_api_error")
        return ProcessAPIErrorResult(retry=True) if out.retry_by is not None else None

    async def _output_step(self, args: ProcessOutputStepArgs) -> MessagesResult:
        step = StepResult(
            step_number=args.step_number,
            text=args.text,
            tool_calls=list(args.tool_calls),
            tool_results=list(args.tool_results),
            finish_reason=args.finish_reason,
            usage=args.usage,
        )
        data = ProcessorStepSchema(
            phase="output_step", context=inner_context(args), step=step, steps=args.steps
        )
        return _messages_result(await self._run(data, "process_output_step"), args)

    async def _output_result(self, args: ProcessOutputResultArgs) -> MessagesResult:
        data = ProcessorStepSchema(phase="output_result", context=inner_context(args), result=args.result)
        return _messages_result(await self._run(data, "process_output_result"), args)

    # -- stream phase ----------------------------------------------------------------------------

    async def commit_llm_run(self, state: dict[str, Any], result: OutputResult) -> None:
        """The run succeeded: inner processors that write only then (a response cache) may write now.

        ``state`` is this workflow's per-request state, which holds one dict per inner processor.
        """
        ctx = RunContext(message_list=MessageList(), states=state)
        for _, processor in self.processor_steps:
            commit = getattr(processor, "commit_llm_run", None)
            if callable(commit):
                done = commit(ctx.state_for(processor_id_of(processor), processor), result)
                if inspect.isawaitable(done):
                    await done

    def open_output_stream(self, args: ProcessOutputStreamArgs) -> _StreamSession:
        """Open the compiled per-chunk dispatch for one stream (called by the stream runner)."""
        assert self._stream is not None
        return _StreamSession(self, args)

    async def _output_stream(self, args: ProcessOutputStreamArgs) -> StreamResult:
        raise ConfigurationError(
            f"workflow {self.id!r} keeps per-stream state, so its stream hook runs through a stream runner "
            "(an agent, or procflow.testing.run_output_stream), not by calling process_output_stream directly"
        )

    async def _flush_output_stream(self, args: ProcessOutputStreamArgs) -> StreamResult:
        return await self._output_stream(args)


def _holders(chain: StreamChain, attribute: str) -> list[str]:
    """Ids of the processors in ``chain`` (at any depth) whose ``attribute`` is true."""
    found: list[str] = []
    for part in chain.parts:
        if isinstance(part, ProcessorsPart):
            found += [processor_id_of(p) for p in part.processors if getattr(p, attribute, False)]
        elif isinstance(part, ForkPart):
            found += [pid for branch in part.branches for pid in _holders(branch, attribute)]
        elif isinstance(part, BranchPart):
            found += [pid for _, branch in part.chains for pid in _holders(branch, attribute)]
    return found


_DROPPED = (
    "sits in a parallel branch whose stream output select(...) drops, so the kept branch releases that "
    "text first; run it in sequence (.then) before or after the parallel block, or select its branch"
)
_ROUTED = (
    "sits in a .branch(...) case, which routes each stream chunk on its own, so it would judge some "
    "chunks of a sentence and let the others pass, out of order; run it in sequence (.then) instead"
)


def _stream_problems(chain: StreamChain) -> list[tuple[str, str]]:
    """``(processor id, why)`` for each holder placed where its hold cannot protect the stream."""
    found: list[tuple[str, str]] = []
    for part in chain.parts:
        if isinstance(part, ForkPart):
            for index, branch in enumerate(part.branches):
                dropped = part.join is None and index != part.keep
                if dropped:
                    found += [(pid, _DROPPED) for pid in _holders(branch, "stops_output_stream")]
                else:
                    found += _stream_problems(branch)
        elif isinstance(part, BranchPart):
            found += [(pid, _ROUTED) for _, c in part.chains for pid in _holders(c, "holds_output_stream")]
    return found


def _messages_result(out: ProcessorStepSchema, args: Any) -> MessagesResult:
    if out.message_list is args.message_list:
        return None
    return {"messages": out.messages, "system_messages": out.system_messages}


def _wrap(env_ctx: Any) -> Any:
    def wrap(items: list[Chunk]) -> ProcessorStepSchema:
        return ProcessorStepSchema(phase="output_stream", context=env_ctx, chunks=items)

    return wrap


def _unwrap(value: Any, node: PlanNode) -> list[Chunk]:
    if not isinstance(value, ProcessorStepSchema):
        raise ProcessorResultError(
            node.id, "process_output_stream", f"returned a {type(value).__name__}; return ProcessorStepSchema"
        )
    return value.chunks


class _StreamSession:
    """One stream through a processor workflow: its parts opened once, the retry count kept in step."""

    __slots__ = ("env", "retry_count", "root")

    def __init__(self, workflow: ProcessorAdapter, args: ProcessOutputStreamArgs) -> None:
        ctx = inner_context(args)
        run = RunState(workflow.id, request_context=ctx.request_context)
        self.env = StreamEnv(ctx, run, wrap=_wrap(ctx), unwrap=_unwrap)
        assert workflow._stream is not None
        self.root = workflow._stream.open(self.env)
        self.retry_count = args.retry_count

    async def process(self, args: ProcessOutputStreamArgs) -> StreamResult:
        """Run one chunk through the dispatch."""
        if args.retry_count != self.retry_count:
            self.retry_count = args.retry_count
            self.env.set_retry_count(args.retry_count)
        out = await self.root.push([args.part])
        return out[0] if len(out) == 1 else (out or None)

    async def flush(self, args: ProcessOutputStreamArgs) -> StreamResult:
        """End of stream (or of an attempt thrown away for a retry): what the inner processors held back."""
        if args.retry_count != self.retry_count:
            self.retry_count = args.retry_count
            self.env.set_retry_count(args.retry_count)
        return await self.root.flush() or None

"""A processor workflow as a processor: one hook per phase its processors implement.

Each hook builds the phase-tagged :class:`ProcessorStepData` over the live request, runs the graph, and
hands the outcome back the way a plain processor's return value is applied. Inner processors keep one
state dict each for the whole request (kept inside the workflow's own per-request ``state``), so their
state persists across phases and stream chunks. A tripwire inside was already reported by the phase
runner for the inner processor (``on_violation`` fired, ``processor_id`` set); it is re-raised as is, so
the agent emits the same ``tripwire`` chunk and ``result.tripwire`` as for the plain processor.

The stream phase never runs the graph per chunk: :mod:`procflow.workflows.stream_dispatch` compiles a
direct per-chunk dispatch once, at commit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from procflow.engine.context import RunContext
from procflow.engine.executor import execute_plan
from procflow.engine.graph import iter_processors
from procflow.engine.plan import WorkflowPlan, stage_nodes
from procflow.engine.runner import StepSettings
from procflow.errors import ProcessorResultError
from procflow.messages.message import Message
from procflow.messages.results import StepResult
from procflow.processors.args import (
    MessagesResult,
    ProcessInputArgs,
    ProcessInputStepArgs,
    ProcessInputStepResult,
    ProcessOutputResultArgs,
    ProcessOutputStepArgs,
)
from procflow.workflows.processor_data import ProcessorStepData, inner_context
from procflow.workflows.stream_dispatch import compile_stream, stream_hooks

if TYPE_CHECKING:
    from procflow.workflows.workflow import Workflow

__all__ = ["install_processor_hooks"]


def _has_plain_steps(plan: WorkflowPlan) -> bool:
    for stage in plan.stages:
        for node in stage_nodes(stage):
            if node.kind == "step" or (node.subplan is not None and _has_plain_steps(node.subplan)):
                return True
    return False


def install_processor_hooks(workflow: Workflow) -> None:
    """Give ``workflow`` the hooks of the phases its processors implement (all of them with plain steps)."""
    plan = workflow.plan
    processors = [processor for _, processor in iter_processors(plan)]
    plain = _has_plain_steps(plan)

    def wants(hook: str) -> bool:
        return plain or any(callable(getattr(p, hook, None)) for p in processors)

    if wants("process_input"):
        workflow.process_input = _input_hook(workflow)
    if wants("process_input_step"):
        workflow.process_input_step = _input_step_hook(workflow)
    if wants("process_output_step"):
        workflow.process_output_step = _output_step_hook(workflow)
    if wants("process_output_result"):
        workflow.process_output_result = _output_result_hook(workflow)
    if wants("process_output_stream"):
        spec = compile_stream(plan)
        workflow.process_output_stream, flush = stream_hooks(workflow.id, spec)
        if any(callable(getattr(p, "flush_output_stream", None)) for p in processors):
            workflow.flush_output_stream = flush
    workflow.process_data_parts = any(bool(getattr(p, "process_data_parts", False)) for p in processors)


async def _run(workflow: Workflow, data: ProcessorStepData, hook: str) -> ProcessorStepData:
    result = await execute_plan(workflow.plan, data, request_context=data.context.request_context)
    if result.error is not None:
        raise result.error
    out = result.output
    if not isinstance(out, ProcessorStepData):
        raise ProcessorResultError(
            workflow.id,
            hook,
            f"the workflow returned a {type(out).__name__}; end it with a processor step, "
            ".map(select(...)) or .map(merge_branches()) so it returns ProcessorStepSchema",
        )
    return out


def _messages_result(out: ProcessorStepData, ctx: RunContext) -> MessagesResult:
    if out.message_list is ctx.message_list:
        return None
    return {"messages": out.messages, "system_messages": out.system_messages}


def _input_hook(workflow: Workflow) -> Any:
    async def process_input(args: ProcessInputArgs) -> MessagesResult:
        ctx = inner_context(args)
        out = await _run(workflow, ProcessorStepData(phase="input", context=ctx), "process_input")
        return _messages_result(out, ctx)

    return process_input


def _input_step_hook(workflow: Workflow) -> Any:
    async def process_input_step(args: ProcessInputStepArgs) -> ProcessInputStepResult:
        ctx = inner_context(args)
        settings = StepSettings(
            step_number=args.step_number,
            model=args.model,
            tools=dict(args.tools),
            tool_choice=args.tool_choice,
            provider_options=dict(args.provider_options),
            steps=args.steps,
        )
        data = ProcessorStepData(phase="input_step", context=ctx, settings=settings, steps=args.steps)
        out = await _run(workflow, data, "process_input_step")
        final = out.settings or settings
        result = ProcessInputStepResult(
            model=final.model,
            tools=final.tools,
            tool_choice=final.tool_choice,
            provider_options=final.provider_options,
        )
        if out.message_list is not ctx.message_list:
            system: list[Message | str] = list(out.system_messages)
            result.messages, result.system_messages = out.messages, system
        return result

    return process_input_step


def _output_step_hook(workflow: Workflow) -> Any:
    async def process_output_step(args: ProcessOutputStepArgs) -> MessagesResult:
        ctx = inner_context(args)
        step = StepResult(
            step_number=args.step_number,
            text=args.text,
            tool_calls=list(args.tool_calls),
            tool_results=list(args.tool_results),
            finish_reason=args.finish_reason,
            usage=args.usage,
        )
        data = ProcessorStepData(phase="output_step", context=ctx, step=step, steps=args.steps)
        out = await _run(workflow, data, "process_output_step")
        return _messages_result(out, ctx)

    return process_output_step


def _output_result_hook(workflow: Workflow) -> Any:
    async def process_output_result(args: ProcessOutputResultArgs) -> MessagesResult:
        ctx = inner_context(args)
        data = ProcessorStepData(phase="output_result", context=ctx, result=args.result)
        out = await _run(workflow, data, "process_output_result")
        return _messages_result(out, ctx)

    return process_output_result

"""``ProcessorStepSchema``: the phase-tagged value processor steps pass along a workflow."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from procflow._messages.chunk import Chunk
from procflow._messages.message import Message
from procflow._messages.message_list import MessageInput, MessageList
from procflow._messages.prompt import Prompt
from procflow._messages.request_context import RequestContext
from procflow._messages.results import OutputResult, StepResult
from procflow._runner.context import RunContext
from procflow._runner.runner import StepSettings
from procflow.processors._args import ProcessorArgs
from procflow.processors._base import HookName

__all__ = ["PHASE_HOOKS", "ProcessorPhase", "ProcessorStepSchema", "inner_context"]

ProcessorPhase = Literal[
    "input",
    "input_step",
    "llm_request",
    "llm_response",
    "output_stream",
    "output_step",
    "output_result",
    "api_error",
]
"""The agent phase a processor workflow is called in (one per processor hook)."""

PHASE_HOOKS: Mapping[ProcessorPhase, HookName] = {
    "input": "process_input",
    "input_step": "process_input_step",
    "llm_request": "process_llm_request",
    "llm_response": "process_llm_response",
    "output_stream": "process_output_stream",
    "output_step": "process_output_step",
    "output_result": "process_output_result",
    "api_error": "process_api_error",
}
"""The processor hook each phase calls."""


def inner_context(args: ProcessorArgs) -> RunContext:
    """The run context a processor workflow's inner processors see: the live request, with the
    workflow's own ``args.state`` holding one state dict per inner processor, by processor id."""
    return RunContext(
        message_list=args.message_list,
        request_context=args.request_context,
        states=args.state,
        retry_count=args.retry_count,
        writer=args.writer,
    )


def _copy_chunk(chunk: Chunk) -> Chunk:
    return Chunk(chunk.type, dict(chunk.payload), chunk.transient)


@dataclass(slots=True, kw_only=True)
class ProcessorStepSchema:
    """What a processor step receives and returns: the phase, the live request, the phase's extras.

    The seed's processor step schema: pass it as ``input_schema`` / ``output_schema`` of a workflow (or
    step) that runs processors. Every processor step calls its processor's hook for ``phase`` (or
    passes the value through when the processor has none), editing ``message_list`` just as a plain
    processor in the agent would.

    Attributes:
        phase: The phase (``"input"``, ``"output_stream"``, …): one per processor hook.
        context: The request: message list, request context, per-processor state, retry count, writer.
        settings: For ``input_step``, ``llm_request``, ``llm_response`` and ``api_error``: the model
            step's settings (step number, model, tools, tool choice, options, steps so far).
        chunks: For ``output_stream``: the chunks going through (one on the way in; what came out
            after). For ``llm_response``: the finished step's chunks.
        step: For ``output_step``: the model step just finished.
        steps: For ``input_step`` / ``output_step``: the model steps so far.
        result: For ``output_result``: the whole generation's result.
        prompt: For ``llm_request``: the provider prompt (steps may replace it); for ``llm_response``:
            the prompt that was sent.
        answer: For ``llm_request``: chunks a processor answered with instead of the model (later
            processor steps then do nothing, as in a processor list).
        answered_by: The id of the processor that answered.
        from_cache: For ``llm_response``: whether the chunks were replayed instead of generated.
        dropped_chunks: For ``llm_response``: how many of the step's first chunks ``chunks`` lacks
            (``stream_history`` keeps only the last ones).
        error: For ``api_error``: the provider's error.
        retry_by: For ``api_error``: the id of the processor that asked to re-issue the call (later
            processor steps then do nothing).
    """

    __fast_schema__: ClassVar[bool] = True
    __processor_schema__: ClassVar[bool] = True
    __schema_name__: ClassVar[str] = "ProcessorStepSchema"

    phase: ProcessorPhase
    context: RunContext
    settings: StepSettings | None = None
    chunks: list[Chunk] = field(default_factory=list)
    step: StepResult | None = None
    steps: list[StepResult] = field(default_factory=list)
    result: OutputResult | None = None
    prompt: Prompt | None = None
    answer: list[Chunk] | None = None
    answered_by: str | None = None
    from_cache: bool = False
    dropped_chunks: int = 0
    error: Exception | None = None
    retry_by: str | None = None

    @property
    def message_list(self) -> MessageList:
        """The message list this value carries (a branch's own copy inside a parallel block)."""
        return self.context.message_list

    @property
    def messages(self) -> list[Message]:
        """The phase's messages: input for ``input``, response for ``output_result``, else all."""
        ml = self.context.message_list
        if self.phase == "input":
            return ml.input
        if self.phase == "output_result":
            return ml.response
        return ml.all

    @property
    def system_messages(self) -> list[Message]:
        """The untagged system messages."""
        return self.context.message_list.untagged_system_messages

    @property
    def request_context(self) -> RequestContext:
        """The per-request key/value store."""
        return self.context.request_context

    @property
    def part(self) -> Chunk | None:
        """For ``output_stream``: the first chunk (the one going in, before any step ran)."""
        return self.chunks[0] if self.chunks else None

    @property
    def text(self) -> str:
        """The text of the ``text-delta`` chunks (stream phase), else of the phase's messages."""
        if self.phase == "output_stream":
            return "".join(c.text or "" for c in self.chunks if c.type == "text-delta")
        return "\n".join(m.text for m in self.messages)

    def fork_branch(self, node: Any = None) -> ProcessorStepSchema:
        """Return a copy for one parallel branch, so branches never see each other's edits.

        The message list (messages deep-copied), settings and chunks are copied; request context,
        processor state and writer stay shared. A step that does nothing in this phase gets ``self``.
        """
        handles = getattr(getattr(node, "source", None), "handles", None)
        if handles is not None and not handles(self.phase):
            return self
        ctx = self.context
        settings = self.settings
        if settings is not None:
            settings = StepSettings(
                step_number=settings.step_number,
                model=settings.model,
                tools=dict(settings.tools),
                tool_choice=settings.tool_choice,
                provider_options=dict(settings.provider_options),
                steps=settings.steps,
            )
        return ProcessorStepSchema(
            phase=self.phase,
            context=RunContext(
                message_list=ctx.message_list.copy(),
                request_context=ctx.request_context,
                states=ctx.states,
                retry_count=ctx.retry_count,
                writer=ctx.writer,
            ),
            settings=settings,
            chunks=[_copy_chunk(c) for c in self.chunks],
            step=self.step,
            steps=self.steps,
            result=self.result,
            prompt=list(self.prompt) if self.prompt is not None else None,
            answer=self.answer,
            answered_by=self.answered_by,
            from_cache=self.from_cache,
            dropped_chunks=self.dropped_chunks,
            error=self.error,
            retry_by=self.retry_by,
        )

    # -- building one by hand (tests, step.run) ------------------------------------------------------

    @classmethod
    def for_input(
        cls,
        messages: Iterable[MessageInput],
        *,
        system_messages: Iterable[Message | str] = (),
        history: Iterable[MessageInput] = (),
        request_context: RequestContext | None = None,
        states: dict[str, dict[str, Any]] | None = None,
    ) -> ProcessorStepSchema:
        """Input-phase data: ``messages`` as the new input (strings become user messages)."""
        ctx = _context(messages, "input", system_messages, history, request_context, states)
        return cls(phase="input", context=ctx)

    @classmethod
    def for_input_step(
        cls,
        messages: Iterable[MessageInput],
        *,
        step_number: int = 0,
        model: Any = None,
        tools: dict[str, Any] | None = None,
        tool_choice: str | None = None,
        system_messages: Iterable[Message | str] = (),
        request_context: RequestContext | None = None,
        states: dict[str, dict[str, Any]] | None = None,
    ) -> ProcessorStepSchema:
        """Input-step-phase data for model step ``step_number`` with the given settings."""
        ctx = _context(messages, "input", system_messages, (), request_context, states)
        settings = StepSettings(
            step_number=step_number, model=model, tools=dict(tools or {}), tool_choice=tool_choice
        )
        return cls(phase="input_step", context=ctx, settings=settings, steps=settings.steps)

    @classmethod
    def for_output_stream(
        cls,
        chunks: Iterable[Chunk | str],
        *,
        request_context: RequestContext | None = None,
        states: dict[str, dict[str, Any]] | None = None,
    ) -> ProcessorStepSchema:
        """Stream-phase data holding ``chunks`` (strings become ``text-delta`` chunks)."""
        ctx = _context((), "response", (), (), request_context, states)
        items = [Chunk.text_delta(c) if isinstance(c, str) else c for c in chunks]
        return cls(phase="output_stream", context=ctx, chunks=items)

    @classmethod
    def for_output_step(
        cls,
        messages: Iterable[MessageInput],
        *,
        text: str | None = None,
        step_number: int = 0,
        request_context: RequestContext | None = None,
        states: dict[str, dict[str, Any]] | None = None,
    ) -> ProcessorStepSchema:
        """Output-step-phase data: response ``messages`` (strings become assistant messages)."""
        ctx = _context(messages, "response", (), (), request_context, states)
        last = ctx.message_list.all[-1].text if len(ctx.message_list) else ""
        step = StepResult(step_number=step_number, text=last if text is None else text)
        return cls(phase="output_step", context=ctx, step=step, steps=[step])

    @classmethod
    def for_output_result(
        cls,
        messages: Iterable[MessageInput],
        *,
        result: OutputResult | None = None,
        request_context: RequestContext | None = None,
        states: dict[str, dict[str, Any]] | None = None,
    ) -> ProcessorStepSchema:
        """Output-result-phase data: response ``messages`` (strings become assistant messages)."""
        ctx = _context(messages, "response", (), (), request_context, states)
        if result is None:
            result = OutputResult(
                text="\n".join(m.text for m in ctx.message_list.response), finish_reason="stop"
            )
        return cls(phase="output_result", context=ctx, result=result)


def _context(
    messages: Iterable[MessageInput],
    source: Literal["input", "response"],
    system_messages: Iterable[Message | str],
    history: Iterable[MessageInput],
    request_context: RequestContext | None,
    states: dict[str, dict[str, Any]] | None,
) -> RunContext:
    ml = MessageList()
    ml.add(list(history), source="memory")
    items = list(messages)
    if source == "response":
        items = [Message.assistant(m) if isinstance(m, str) else m for m in items]
    ml.add(items, source=source)
    for system in system_messages:
        ml.add_system(system)
    return RunContext(
        message_list=ml,
        request_context=request_context if request_context is not None else RequestContext(),
        states=states if states is not None else {},
    )

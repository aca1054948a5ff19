"""Run one processor's hook alone, on given messages or chunks, and get the result or the tripwire."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from procflow._messages.chunk import Chunk
from procflow._messages.message import Message
from procflow._messages.message_list import MessageInput, MessageList
from procflow._messages.prompt import Prompt
from procflow._messages.request_context import RequestContext
from procflow._messages.results import OutputResult, StepResult
from procflow._messages.tripwire import TripWire, TripwireInfo
from procflow._runner.context import RunContext
from procflow._runner.pipeline import ProcessorPipeline
from procflow._runner.runner import PhaseRunner, StepSettings
from procflow._runner.stream import StreamRunner

__all__ = [
    "HookOutcome",
    "run_api_error",
    "run_input",
    "run_input_step",
    "run_llm_request",
    "run_output_result",
    "run_output_step",
    "run_output_stream",
]


@dataclass(slots=True)
class HookOutcome:
    """What running one hook produced.

    Attributes:
        messages: The phase's messages afterwards (input, all, or response messages).
        system_messages: The system messages afterwards.
        tripwire: The tripwire raised, if any (the hook's other outputs are then partial).
        chunks: For the stream phase, the chunks that came out, in order.
        state: The processor's state dict after the call(s).
        message_list: The live message list, for further inspection.
        settings: For ``process_input_step``, the step settings after the call.
        prompt: For ``process_llm_request``, the prompt after the call.
        answer: For ``process_llm_request``, chunks the processor answered with instead of the model.
        retry: For ``process_api_error``, whether the processor asked to re-issue the call.
    """

    messages: list[Message] = field(default_factory=list)
    system_messages: list[Message] = field(default_factory=list)
    tripwire: TripwireInfo | None = None
    chunks: list[Chunk] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    message_list: MessageList = field(default_factory=MessageList)
    settings: StepSettings | None = None
    prompt: Prompt | None = None
    answer: list[Chunk] | None = None
    retry: bool = False

    @property
    def text(self) -> str:
        """The text of the resulting messages, or of the emitted text chunks for a stream run."""
        if self.chunks:
            return "".join(c.text or "" for c in self.chunks if c.type == "text-delta")
        return "\n".join(m.text for m in self.messages)


def _setup(
    processor: Any,
    messages: Iterable[MessageInput],
    *,
    source: str,
    system_messages: Iterable[Message | str] = (),
    history: Iterable[MessageInput] = (),
    response: Iterable[MessageInput] = (),
    request_context: RequestContext | None = None,
    state: dict[str, Any] | None = None,
    retry_count: int = 0,
) -> tuple[PhaseRunner, RunContext]:
    ml = MessageList()
    ml.add(list(history), source="memory")
    ml.add(list(messages), source="response" if source == "response" else "input")
    ml.add(list(response), source="response")
    for system in system_messages:
        ml.add_system(system)
    ctx = RunContext(
        message_list=ml, request_context=request_context or RequestContext(), retry_count=retry_count
    )
    pid = getattr(processor, "id", "")
    if state is not None and isinstance(pid, str):
        ctx.states[pid] = state
    return PhaseRunner(ProcessorPipeline.build([processor]), ctx), ctx


def _outcome(ctx: RunContext, processor: Any, messages: list[Message], **extra: Any) -> HookOutcome:
    pid = getattr(processor, "id", "")
    return HookOutcome(
        messages=messages,
        system_messages=ctx.message_list.system_messages,
        state=ctx.states.get(pid, {}),
        message_list=ctx.message_list,
        **extra,
    )


async def run_input(processor: Any, messages: Iterable[MessageInput], **options: Any) -> HookOutcome:
    """Run ``process_input`` on ``messages`` (strings become user messages).

    Options: ``system_messages``, ``history`` (memory messages), ``response`` (messages the model
    produced earlier in this request), ``request_context``, ``state``.
    """
    runner, ctx = _setup(processor, messages, source="input", **options)
    tripwire: TripwireInfo | None = None
    try:
        await runner.run_input()
    except TripWire as exc:
        tripwire = exc.info()
    return _outcome(ctx, processor, ctx.message_list.input, tripwire=tripwire)


async def run_input_step(
    processor: Any, messages: Iterable[MessageInput], *, step_number: int = 0, **options: Any
) -> HookOutcome:
    """Run ``process_input_step`` for one step; ``outcome.settings`` holds the resulting overrides."""
    settings = StepSettings(
        step_number=step_number,
        model=options.pop("model", None),
        tools=options.pop("tools", {}),
        tool_choice=options.pop("tool_choice", None),
        steps=options.pop("steps", []),
    )
    runner, ctx = _setup(processor, messages, source="input", **options)
    tripwire: TripwireInfo | None = None
    try:
        await runner.run_input_step(settings)
    except TripWire as exc:
        tripwire = exc.info()
    return _outcome(ctx, processor, ctx.message_list.all, tripwire=tripwire, settings=settings)


async def run_llm_request(processor: Any, messages: Iterable[MessageInput], **options: Any) -> HookOutcome:
    """Run ``process_llm_request`` on the prompt built from ``messages``.

    Options: ``step_number``, ``model``, ``tools``, ``steps`` (earlier step records), plus those of
    :func:`run_input`.
    """
    settings = StepSettings(
        step_number=options.pop("step_number", 0),
        model=options.pop("model", None),
        tools=options.pop("tools", {}),
        steps=options.pop("steps", []),
    )
    runner, ctx = _setup(processor, messages, source="input", **options)
    tripwire: TripwireInfo | None = None
    prompt: Prompt = ctx.message_list.to_prompt()
    answer: list[Chunk] | None = None
    try:
        outcome = await runner.run_llm_request(prompt, settings)
        prompt, answer = outcome.prompt, outcome.chunks
    except TripWire as exc:
        tripwire = exc.info()
    return _outcome(ctx, processor, ctx.message_list.all, tripwire=tripwire, prompt=prompt, answer=answer)


async def run_output_stream(
    processor: Any, chunks: Iterable[Chunk | str], *, flush: bool = True, **options: Any
) -> HookOutcome:
    """Run ``process_output_stream`` over ``chunks`` (strings become ``text-delta`` chunks).

    With ``flush`` (default), ``flush_output_stream`` runs at the end, as the agent does when a stream
    ends. A tripwire stops the run; ``outcome.chunks`` then holds what was emitted before it.
    """
    runner, ctx = _setup(processor, [], source="response", **options)
    stream = StreamRunner(runner.pipeline, ctx)
    out: list[Chunk] = []
    tripwire: TripwireInfo | None = None
    try:
        for item in chunks:
            out.extend(await stream.push(Chunk.text_delta(item) if isinstance(item, str) else item))
        if flush:
            out.extend(await stream.flush())
    except TripWire as exc:
        tripwire = exc.info()
    return _outcome(ctx, processor, [], tripwire=tripwire, chunks=out)


async def run_output_step(
    processor: Any,
    messages: Iterable[MessageInput],
    *,
    text: str | None = None,
    step: StepResult | None = None,
    **options: Any,
) -> HookOutcome:
    """Run ``process_output_step`` after one step whose text is ``text`` (default: the last message's)."""
    msgs = list(messages)
    runner, ctx = _setup(processor, msgs, source="response", **options)
    if step is None:
        all_messages = ctx.message_list.all
        step = StepResult(
            step_number=0, text=text if text is not None else (all_messages[-1].text if msgs else "")
        )
    tripwire: TripwireInfo | None = None
    try:
        await runner.run_output_step(step, [step])
    except TripWire as exc:
        tripwire = exc.info()
    return _outcome(ctx, processor, ctx.message_list.all, tripwire=tripwire)


async def run_output_result(
    processor: Any, messages: Sequence[MessageInput], *, result: OutputResult | None = None, **options: Any
) -> HookOutcome:
    """Run ``process_output_result`` on ``messages`` (strings become assistant messages)."""
    msgs = [Message.assistant(m) if isinstance(m, str) else m for m in messages]
    runner, ctx = _setup(processor, msgs, source="response", **options)
    if result is None:
        result = OutputResult(text="\n".join(m.text for m in ctx.message_list.response), finish_reason="stop")
    tripwire: TripwireInfo | None = None
    try:
        await runner.run_output_result(result)
    except TripWire as exc:
        tripwire = exc.info()
    return _outcome(ctx, processor, ctx.message_list.response, tripwire=tripwire)


async def run_api_error(
    processor: Any,
    error: Exception,
    messages: Iterable[MessageInput] = (),
    *,
    step_number: int = 0,
    **options: Any,
) -> HookOutcome:
    """Run ``process_api_error`` for ``error``; ``outcome.retry`` says whether a retry was asked for.

    Options as for :func:`run_input`; pass the same ``state`` dict to several calls to play one request.
    """
    runner, ctx = _setup(processor, messages, source="input", **options)
    tripwire: TripwireInfo | None = None
    retry = False
    try:
        retry = await runner.run_api_error(error, StepSettings(step_number=step_number)) is not None
    except TripWire as exc:
        tripwire = exc.info()
    return _outcome(ctx, processor, ctx.message_list.all, tripwire=tripwire, retry=retry)

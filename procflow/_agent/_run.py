"""One agent call: the loop over its model steps, as an async generator of chunks driven by its consumer.

Each model step (:mod:`procflow._agent._step`) returns how it ended as a value (:class:`StepEnd`); the
loop here reads it to continue, retry the step, complete the call or stop on a tripwire.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator
from contextlib import aclosing

import anyio

from procflow._agent._assembly import build_pipelines
from procflow._agent._collector import StepCollector
from procflow._agent._config import RETRY_FEEDBACK_KEY, RunConfig
from procflow._agent._events import finish_chunk, step_finish_chunk
from procflow._agent._step import ModelStep, StepEnd
from procflow._agent._writer import ChunkWriter, PendingChunks
from procflow._agent.output import AgentResponse, GenerateResult
from procflow._logging import log
from procflow._messages.chunk import Chunk
from procflow._messages.message import SignalInfo
from procflow._messages.message_list import MessageList
from procflow._messages.results import FinishReason, OutputResult, StepResult, Usage
from procflow._messages.tripwire import TripWire, TripwireInfo
from procflow._runner.context import RunContext
from procflow._runner.pipeline import processor_id_of
from procflow._runner.runner import PhaseRunner
from procflow._runner.stream import StreamRunner
from procflow.models._base import LanguageModel

__all__ = ["AgentRun"]


class AgentRun:
    """The state of one ``generate()``/``stream()`` call (one request) and its loop over model steps.

    The steps (:class:`~procflow._agent._step.ModelStep`) read and update the call's state here: the
    message list, the pending ``data-*`` chunks, the accepted steps and usage, and :attr:`open_id`,
    the response message of the step being judged (dropped if the step is rejected or the call halts).
    """

    inputs: PhaseRunner
    outputs: PhaseRunner
    llm: PhaseRunner
    errors: PhaseRunner
    stream: StreamRunner

    def __init__(self, config: RunConfig) -> None:
        context = config.request_context
        ml = MessageList(thread_id=context.thread_id, resource_id=context.resource_id)
        ml.set_system_messages(config.instructions)
        ml.add(config.messages, source="input")
        self.config = config
        self.ml = ml
        self.pending: PendingChunks = []
        self.ctx = RunContext(message_list=ml, request_context=context, writer=ChunkWriter(self.pending))
        self.steps: list[StepResult] = []
        self.usage = Usage()
        self.result: GenerateResult | None = None
        self.finish_reason: FinishReason = "unknown"
        self.open_id: str | None = None
        self._tripwire: TripwireInfo | None = None
        self._feedback_id: str | None = None
        self._models: dict[str, LanguageModel] = {}

    async def events(self) -> AsyncGenerator[Chunk, None]:
        """Run the call, yielding each chunk for the consumer; the loop advances as it is iterated."""
        tripwire: TripWire | None = None
        try:
            try:
                await self._setup()
                await self.inputs.run_input()
                for chunk in await self.drain():
                    yield chunk
                number = 0
                while True:
                    step = ModelStep(self, number)
                    begun = await step.begin()
                    if isinstance(begun, StepEnd):
                        end = begun
                    else:
                        for chunk in begun:
                            yield chunk
                        async with aclosing(step.call()) as call:
                            async for chunk in call:
                                yield chunk
                        end = await step.finish()
                    for chunk in end.chunks:
                        yield chunk
                    if end.next == "retry":
                        continue
                    if end.next != "continue" or number + 1 >= self.config.max_steps:
                        break
                    number += 1
                if end.next != "halt":
                    for chunk in await self._complete():
                        yield chunk
            except TripWire as exc:
                tripwire = exc
            if tripwire is not None:
                for chunk in await self._halt(tripwire, "other"):
                    yield chunk
        except BaseException as exc:
            await self._abandon(exc)
            raise

    async def _setup(self) -> None:
        config, ctx, pending = self.config, self.ctx, self.pending
        pipelines = await build_pipelines(
            request_context=ctx.request_context,
            input_processors=config.input_processors,
            output_processors=config.output_processors,
            error_processors=config.error_processors,
            memory=config.memory,
            prepare_step=config.prepare_step,
            cache=config.pipelines,
        )
        self.inputs = PhaseRunner(pipelines.input, ctx)
        self.outputs = PhaseRunner(pipelines.output, ctx)
        self.llm = PhaseRunner(pipelines.llm, ctx)
        self.errors = PhaseRunner(pipelines.errors, ctx)
        self.stream = StreamRunner(
            pipelines.output,
            ctx,
            writer_for=lambda i: ChunkWriter(pending, i + 1),
            history=config.stream_history,
        )

    # -- retries and endings ---------------------------------------------------------------------------

    async def reject(self, tripwire: TripWire, reason: FinishReason, step: StepResult | None) -> StepEnd:
        """A step was rejected: retry it with feedback when allowed, else end the call (``halt``)."""
        if self.open_id is not None:
            self.ml.remove_by_ids([self.open_id])
            self.open_id = None
        if not self._may_retry(tripwire):
            return StepEnd(await self._halt(tripwire, "tripwire" if tripwire.retry else reason), "halt")
        if step is None:
            return StepEnd([], "retry")
        discarded = tripwire.info().to_dict()
        finish = step_finish_chunk(step.step_number, step.finish_reason, step.usage, discarded)
        return StepEnd(await self.through(finish), "retry")

    def _may_retry(self, tripwire: TripWire) -> bool:
        cap = self.config.max_processor_retries
        if not tripwire.retry or cap is None or self.ctx.retry_count >= cap:
            return False
        self.bump_retry()
        log.debug("processor_retry", processor_id=tripwire.processor_id, retry_count=self.ctx.retry_count)
        # Transient: the feedback concerns a response that is being dropped, so it goes to the retried
        # call only — never into memory — and a second rejection replaces it instead of stacking up.
        signal = SignalInfo(attributes={"processor": tripwire.processor_id or "unknown"}, transient=True)
        self._feedback_id = self.ml.add_signal(tripwire.reason, signal=signal, key=RETRY_FEEDBACK_KEY).id
        return True

    def bump_retry(self) -> None:
        """Count one more retry (of a rejected step or a failed model call)."""
        self.ctx.retry_count += 1
        self.stream.set_retry_count(self.ctx.retry_count)

    def accept(self) -> None:
        """A step passed its judgement: reset the retry count and drop the retry feedback it was given."""
        if self.ctx.retry_count:
            self.ctx.retry_count = 0
            self.stream.set_retry_count(0)
        if self._feedback_id is not None:
            self.ml.remove_by_ids([self._feedback_id])
            self._feedback_id = None

    async def _halt(self, tripwire: TripWire, reason: FinishReason) -> list[Chunk]:
        """End the call on a tripwire: drop the open step, deliver pending chunks, then ``tripwire``."""
        if self.open_id is not None:
            self.ml.remove_by_ids([self.open_id])
            self.open_id = None
        self._tripwire = tripwire.info()
        out = await self._drain_after(tripwire)
        self._set_result(reason)
        await self._notify()
        out.append(Chunk("tripwire", self._tripwire.to_dict()))
        return out

    async def _drain_after(self, tripwire: TripWire) -> list[Chunk]:
        """Deliver what hooks wrote before the tripwire, still through the stream processors.

        A second tripwire there drops the rest: nothing reaches the consumer unprocessed.
        """
        try:
            return await self.drain()
        except TripWire:
            log.debug("pending_chunks_dropped", processor_id=tripwire.processor_id, dropped=len(self.pending))
            self.pending.clear()
            return []

    async def _complete(self) -> list[Chunk]:
        """``process_output_result`` on the final result, then the ``finish`` chunk."""
        reason = self.finish_reason
        result = OutputResult(text=self._text(), usage=self.usage, finish_reason=reason, steps=self.steps)
        await self.outputs.run_output_result(result)
        out = await self.drain()
        final = self._set_result(reason)
        out.extend(await self.through(finish_chunk(reason, self.usage, final.response.ui_messages)))
        await self._commit(result)
        await self._notify()
        return out

    async def _commit(self, result: OutputResult) -> None:
        """The run succeeded: LLM-hook processors with ``commit_llm_run`` (a cache) may write now."""
        for processor in self.llm.pipeline.processors:
            commit = getattr(processor, "commit_llm_run", None)
            if callable(commit):
                done = commit(self.ctx.state_for(processor_id_of(processor), processor), result)
                if inspect.isawaitable(done):
                    await done

    async def _abandon(self, exc: BaseException) -> None:
        """The call ends by an exception: cancellation (or an early close) is ``aborted``, else ``error``."""
        if self.result is not None:
            return
        if self.open_id is not None:
            self.ml.remove_by_ids([self.open_id])
        aborted = isinstance(exc, GeneratorExit | anyio.get_cancelled_exc_class())
        self._set_result("aborted" if aborted else "error")
        if aborted:
            with anyio.CancelScope(shield=True):
                await self._notify()

    async def _notify(self) -> None:
        callback = self.config.on_finish
        if callback is not None and self.result is not None:
            outcome = callback(self.result)
            if inspect.isawaitable(outcome):
                await outcome

    def _set_result(self, reason: FinishReason) -> GenerateResult:
        response = self.ml.response
        ids = {m.id for m in response}
        ui = [m for m in self.ml.to_ui_messages() if m.id in ids]
        self.result = GenerateResult(
            text=self._text(),
            usage=self.usage,
            finish_reason=reason,
            steps=list(self.steps),
            tripwire=self._tripwire,
            response=AgentResponse(messages=response, ui_messages=ui, message_list=self.ml),
            request_context=self.ctx.request_context,
        )
        return self.result

    # -- helpers ---------------------------------------------------------------------------------------

    def _text(self) -> str:
        return "".join(m.text for m in self.ml.response if m.role == "assistant")

    def resolve_model(self, value: LanguageModel | str | None) -> LanguageModel:
        """The model for ``value`` (``None``: the agent's), resolving each ``"provider/model"`` id once."""
        if value is None:
            value = self.config.model
        if not isinstance(value, str):
            return value
        model = self._models.get(value)
        if model is None:
            model = self._models[value] = self.config.resolve_model(value)
        return model

    async def through(self, chunk: Chunk) -> list[Chunk]:
        """Push a chunk the loop made through the stream processors (and deliver what they wrote)."""
        out = await self.stream.push(chunk) if self.stream.active else [chunk]
        if self.pending:
            out = [*out, *await self.drain()]
        return out

    async def drain(self, collector: StepCollector | None = None) -> list[Chunk]:
        """Deliver the ``data-*`` chunks hooks and tools wrote, through the processors after the writer."""
        out: list[Chunk] = []
        pending, stream = self.pending, self.stream
        while pending:
            start, chunk = pending.pop(0)
            produced = await stream.push(chunk, start=start) if stream.active else [chunk]
            if collector is not None:
                for item in produced:
                    collector.add(item)
            out.extend(produced)
        return out

"""One agent call: the step loop, as an async generator of chunks driven by its consumer."""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable
from contextlib import aclosing
from typing import Any, Literal

import anyio

from procflow._agent._assembly import build_pipelines
from procflow._agent._collector import StepCollector
from procflow._agent._config import DEFAULT_API_ERROR_RETRIES, RETRY_FEEDBACK_KEY, RunConfig
from procflow._agent._events import finish_chunk, step_finish_chunk, step_start_chunk, tool_result_chunk
from procflow._agent._tools import attach_data, execute_tool_calls, is_client_side, record_results
from procflow._agent._writer import ChunkWriter, PendingChunks
from procflow._agent.output import AgentResponse, GenerateResult
from procflow._engine.context import RunContext
from procflow._engine.pipeline import processor_id_of
from procflow._engine.runner import PhaseRunner, StepSettings
from procflow._engine.stream import StreamRunner
from procflow._logging import log
from procflow._messages.chunk import Chunk
from procflow._messages.message import SignalInfo
from procflow._messages.message_list import MessageList
from procflow._messages.prompt import Prompt
from procflow._messages.results import FinishReason, OutputResult, StepResult, ToolResult, Usage
from procflow._messages.tripwire import TripWire, TripwireInfo
from procflow.errors import ModelError
from procflow.models._base import LanguageModel, ModelRequest

__all__ = ["AgentRun"]

_Outcome = Literal["continue", "retry", "stop", "halt"]


async def _tripped(awaitable: Awaitable[Any]) -> TripWire | None:
    try:
        await awaitable
    except TripWire as tripwire:
        return tripwire
    return None


def _replayed_result(chunk: Chunk) -> ToolResult:
    """A ``tool-result`` chunk an answering processor (a cache) supplied, as the step's tool result."""
    p = chunk.payload
    args = p.get("args")
    extra = {"model_output": p["model_output"]} if p.get("model_output") is not None else {}
    return ToolResult(
        str(p.get("tool_call_id", "")),
        str(p.get("tool_name", "")),
        dict(args) if isinstance(args, dict) else {},
        p.get("result"),
        bool(p.get("is_error", False)),
        **extra,
    )


async def _close(stream: AsyncIterator[Chunk]) -> None:
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()


class AgentRun:
    """The state of one ``generate()``/``stream()`` call and its step loop."""

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
        self._tripwire: TripwireInfo | None = None
        self._finish_reason: FinishReason = "unknown"
        self._outcome: _Outcome = "stop"
        self._open_id: str | None = None
        self._feedback_id: str | None = None
        self._models: dict[str, LanguageModel] = {}
        self._collector = StepCollector(keep=config.stream_history)
        self._prompt: Prompt = []
        self._answer: list[Chunk] | None = None
        self._replayed: list[Chunk] = []
        self._request = ModelRequest(prompt=[])

    async def events(self) -> AsyncGenerator[Chunk, None]:
        """Run the call, yielding each chunk for the consumer; the loop advances as it is iterated."""
        tripwire: TripWire | None = None
        try:
            try:
                await self._setup()
                await self.inputs.run_input()
                for chunk in await self._drain():
                    yield chunk
                number = 0
                while True:
                    async with aclosing(self._step(number)) as step:
                        async for chunk in step:
                            yield chunk
                    if self._outcome == "retry":
                        continue
                    if self._outcome != "continue" or number + 1 >= self.config.max_steps:
                        break
                    number += 1
                if self._outcome != "halt":
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

    # -- one step ------------------------------------------------------------------------------------

    async def _step(self, number: int) -> AsyncGenerator[Chunk, None]:
        settings = StepSettings(
            step_number=number,
            model=self._model(None),
            tools=dict(self.config.tools),
            tool_choice=self.config.tool_choice,
            steps=self.steps,
        )
        self._outcome = "stop"
        for chunk in await self._input_step(settings):
            yield chunk
        if self._outcome != "stop":
            return
        model = settings.model = self._model(settings.model)
        while True:
            for chunk in await self._start_call(settings):
                yield chunk
            if self._answer is not None:
                for chunk in self._replay(self._answer):
                    yield chunk
                break
            # The hot path: one iteration per model chunk, kept free of per-chunk allocations.
            failure: ModelError | None = None
            collector, stream = self._collector, model.stream(self._request)
            active, push, add, pending = self.stream.active, self.stream.push, collector.add, self.pending
            try:
                async for raw in stream:
                    if raw.type == "finish":
                        collector.finish(raw)
                    elif active:
                        for chunk in await push(raw):
                            add(chunk)
                            yield chunk
                        if pending:
                            for chunk in await self._drain(collector):
                                yield chunk
                    else:
                        add(raw)
                        yield raw
            except ModelError as error:
                failure = error
            finally:
                await _close(stream)
            if failure is None:
                for chunk in await self._end_stream():
                    yield chunk
                break
            for chunk in await self._recover(failure, settings):
                yield chunk
        for chunk in await self._finish_step(number, settings):
            yield chunk

    async def _input_step(self, settings: StepSettings) -> list[Chunk]:
        """``process_input_step``; a rejection sets the outcome to ``retry`` or ``halt``."""
        rejected = await _tripped(self.inputs.run_input_step(settings))
        out = await self._drain()
        if rejected is not None:
            out.extend(await self._reject(rejected, "other", None))
        return out

    def _replay(self, answer: list[Chunk]) -> list[Chunk]:
        """A processor answered instead of the model: its chunks skip the stream processors."""
        collector = self._collector
        collector.from_cache = True
        out: list[Chunk] = []
        for chunk in answer:
            if chunk.type == "finish":
                collector.finish(chunk)
            elif chunk.type == "tool-result":
                self._replayed.append(chunk)  # the step's tool results: delivered in place of running tools
            else:
                collector.add(chunk)
                out.append(chunk)
        return out

    async def _start_call(self, settings: StepSettings) -> list[Chunk]:
        """Build the prompt, run ``process_llm_request`` and announce the model call."""
        self._collector = StepCollector(keep=self.config.stream_history)
        self._replayed = []
        outcome = await self.llm.run_llm_request(self.ml.to_prompt(), settings)
        self._prompt = outcome.prompt
        self._answer = outcome.chunks
        if outcome.chunks is None:
            self._request = ModelRequest(
                prompt=outcome.prompt,
                tools=[tool.spec() for tool in settings.tools.values()],
                tool_choice=settings.tool_choice,
                provider_options=settings.provider_options,
            )
        return await self._through(step_start_chunk(settings.step_number, self.ctx.retry_count))

    async def _end_stream(self) -> list[Chunk]:
        """Flush what stream processors held back; it belongs to the step."""
        if not self.stream.active:
            return []
        out = await self.stream.flush()
        for chunk in out:
            self._collector.add(chunk)
        if self.pending:
            out.extend(await self._drain(self._collector))
        return out

    async def _recover(self, error: ModelError, settings: StepSettings) -> list[Chunk]:
        """Run ``process_api_error``; re-raise ``error`` unless a processor asks (within the cap) to retry."""
        retry_by = await self.errors.run_api_error(error, settings)
        cap = self.config.max_processor_retries
        if cap is None:
            cap = DEFAULT_API_ERROR_RETRIES
        if retry_by is None or self.ctx.retry_count >= cap:
            raise error
        self._bump_retry()
        log.debug("api_error_retry", processor_id=retry_by, retry_count=self.ctx.retry_count)
        await self._discard_attempt()
        discarded = {"reason": str(error), "retry": True, "metadata": {}, "processor_id": retry_by}
        return await self._through(step_finish_chunk(settings.step_number, "error", Usage(), discarded))

    async def _discard_attempt(self) -> None:
        """End the broken attempt's stream: what stream processors held back is withheld, not released."""
        if not self.stream.active:
            return
        mark = len(self.pending)
        withheld = await self.stream.discard()
        del self.pending[mark:]  # data chunks written about text nobody will see
        if withheld:
            log.debug("stream_attempt_discarded", withheld_chunks=withheld)

    async def _finish_step(self, number: int, settings: StepSettings) -> list[Chunk]:
        """Judge the finished step (``process_llm_response``, ``process_output_step``), then run its tools."""
        collector = self._collector
        message = collector.message()
        self.ml.add(message, source="response")
        self._open_id = message.id
        step = collector.step_result(number, message)
        self.usage = self.usage + step.usage
        out: list[Chunk] = []
        if not collector.from_cache:
            finish = Chunk("finish", {"finish_reason": step.finish_reason, "usage": step.usage.to_dict()})
            chunks = [*step.chunks, finish]
            await self.llm.run_llm_response(chunks, settings, prompt=self._prompt, from_cache=False)
            out.extend(await self._drain())
        rejected = await _tripped(self.outputs.run_output_step(step, [*self.steps, step]))
        out.extend(await self._drain())
        self._attach(message.id, out)
        if rejected is not None:
            return out + await self._reject(rejected, "tripwire", step)
        self._accept()
        # The step stays open (``_open_id``) until its last chunk passed the stream processors: a
        # tripwire on a tool's data chunk, a tool result or the step-finish chunk drops it whole.
        if collector.from_cache:
            out.extend(self._replay_tools(step, message.id))
        else:
            out.extend(await self._run_tools(step, settings, message.id))
        out.extend(await self._through(step_finish_chunk(number, step.finish_reason, step.usage)))
        self.steps.append(step)
        self._open_id = None
        done = not step.tool_calls or len(step.tool_results) < len(step.tool_calls)
        self._outcome = "stop" if done else "continue"
        self._finish_reason = step.finish_reason
        return out

    async def _run_tools(self, step: StepResult, settings: StepSettings, message_id: str) -> list[Chunk]:
        """Execute the step's tool calls (except client-side ones) and emit their results."""
        runnable = [c for c in step.tool_calls if not is_client_side(c, settings.tools)]
        if not runnable:
            return []
        results = await execute_tool_calls(
            runnable, settings.tools, request_context=self.ctx.request_context, writer=self.ctx.writer
        )
        step.tool_results = results
        message = self.ml.get(message_id)
        if message is not None:
            record_results(message, results)
            step.messages = [message]
        out = await self._drain()
        for result in results:
            out.extend(await self._through(tool_result_chunk(result)))
        self._attach(message_id, out)
        return out

    def _replay_tools(self, step: StepResult, message_id: str) -> list[Chunk]:
        """A cached step: its tool results come from the cache; no tool runs again."""
        chunks, self._replayed = self._replayed, []
        results = [_replayed_result(chunk) for chunk in chunks]
        if results:
            step.tool_results = results
            message = self.ml.get(message_id)
            if message is not None:
                record_results(message, results)
                step.messages = [message]
        return chunks

    def _attach(self, message_id: str, chunks: list[Chunk]) -> None:
        message = self.ml.get(message_id)
        if message is not None:
            attach_data(message, chunks)

    # -- retries and endings ---------------------------------------------------------------------------

    async def _reject(self, tripwire: TripWire, reason: FinishReason, step: StepResult | None) -> list[Chunk]:
        """A step was rejected: retry it with feedback when allowed, else end the call."""
        if self._open_id is not None:
            self.ml.remove_by_ids([self._open_id])
            self._open_id = None
        if self._may_retry(tripwire):
            self._outcome = "retry"
            if step is None:
                return []
            discarded = tripwire.info().to_dict()
            return await self._through(
                step_finish_chunk(step.step_number, step.finish_reason, step.usage, discarded)
            )
        self._outcome = "halt"
        return await self._halt(tripwire, "tripwire" if tripwire.retry else reason)

    def _may_retry(self, tripwire: TripWire) -> bool:
        cap = self.config.max_processor_retries
        if not tripwire.retry or cap is None or self.ctx.retry_count >= cap:
            return False
        self._bump_retry()
        log.debug("processor_retry", processor_id=tripwire.processor_id, retry_count=self.ctx.retry_count)
        # Transient: the feedback concerns a response that is being dropped, so it goes to the retried
        # call only — never into memory — and a second rejection replaces it instead of stacking up.
        signal = SignalInfo(attributes={"processor": tripwire.processor_id or "unknown"}, transient=True)
        self._feedback_id = self.ml.add_signal(tripwire.reason, signal=signal, key=RETRY_FEEDBACK_KEY).id
        return True

    def _bump_retry(self) -> None:
        self.ctx.retry_count += 1
        self.stream.set_retry_count(self.ctx.retry_count)

    def _accept(self) -> None:
        if self.ctx.retry_count:
            self.ctx.retry_count = 0
            self.stream.set_retry_count(0)
        if self._feedback_id is not None:
            self.ml.remove_by_ids([self._feedback_id])
            self._feedback_id = None

    async def _halt(self, tripwire: TripWire, reason: FinishReason) -> list[Chunk]:
        """End the call on a tripwire: drop the open step, deliver pending chunks, then ``tripwire``."""
        if self._open_id is not None:
            self.ml.remove_by_ids([self._open_id])
            self._open_id = None
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
            return await self._drain()
        except TripWire:
            log.debug("pending_chunks_dropped", processor_id=tripwire.processor_id, dropped=len(self.pending))
            self.pending.clear()
            return []

    async def _complete(self) -> list[Chunk]:
        """``process_output_result`` on the final result, then the ``finish`` chunk."""
        reason = self._finish_reason
        result = OutputResult(text=self._text(), usage=self.usage, finish_reason=reason, steps=self.steps)
        await self.outputs.run_output_result(result)
        out = await self._drain()
        final = self._set_result(reason)
        out.extend(await self._through(finish_chunk(reason, self.usage, final.response.ui_messages)))
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
        if self._open_id is not None:
            self.ml.remove_by_ids([self._open_id])
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

    def _model(self, value: LanguageModel | str | None) -> LanguageModel:
        if value is None:
            value = self.config.model
        if not isinstance(value, str):
            return value
        model = self._models.get(value)
        if model is None:
            model = self._models[value] = self.config.resolve_model(value)
        return model

    async def _through(self, chunk: Chunk) -> list[Chunk]:
        """Push a chunk the loop made through the stream processors (and deliver what they wrote)."""
        out = await self.stream.push(chunk) if self.stream.active else [chunk]
        if self.pending:
            out = [*out, *await self._drain()]
        return out

    async def _drain(self, collector: StepCollector | None = None) -> list[Chunk]:
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

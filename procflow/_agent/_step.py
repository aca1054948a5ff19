"""One model step of an agent call: ``process_input_step``, the model call, the judgement, the tools.

A model step is one model call in the agent loop (made again in place when a processor retries an API
error) and the tool calls it made; a workflow's steps are another thing (see ``docs/architecture.md``,
"Words"). Each part that can end the step returns a :class:`StepEnd` saying what the loop does next;
only the model call itself is a generator, and it never decides.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from procflow._agent._collector import StepCollector
from procflow._agent._config import DEFAULT_API_ERROR_RETRIES
from procflow._agent._events import step_finish_chunk, step_start_chunk, tool_result_chunk
from procflow._agent._tools import attach_data, execute_tool_calls, is_client_side, record_results
from procflow._logging import log
from procflow._messages.chunk import Chunk
from procflow._messages.prompt import Prompt
from procflow._messages.results import StepResult, ToolResult, Usage
from procflow._messages.tripwire import TripWire
from procflow._runner.runner import StepSettings
from procflow.errors import ModelError
from procflow.models._base import LanguageModel, ModelRequest

if TYPE_CHECKING:
    from procflow._agent._run import AgentRun

__all__ = ["ModelStep", "Next", "StepEnd"]

Next = Literal["continue", "retry", "stop", "halt"]
"""What the loop does after a step: ``continue`` with the next step (the step's tools ran), ``retry``
the step (a processor rejected it and sent feedback), ``stop`` and complete the call, or ``halt``: a
tripwire ended the call, which is not completed."""


@dataclass(frozen=True, slots=True)
class StepEnd:
    """How a step ended: the chunks its ending produced, and what the loop does next."""

    chunks: list[Chunk]
    next: Next


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


class ModelStep:
    """One model step of the loop: its settings, and the state of its current model call.

    Used in this order: :meth:`begin` (``process_input_step``; may end the step), :meth:`call` (the
    model's chunks, through the stream processors), :meth:`finish` (the step's judgement and tools).
    """

    __slots__ = (
        "_answer",
        "_collector",
        "_prompt",
        "_replayed",
        "_request",
        "model",
        "number",
        "run",
        "settings",
    )

    def __init__(self, run: AgentRun, number: int) -> None:
        self.run = run
        self.number = number
        self.model: LanguageModel = run.resolve_model(None)
        self.settings = StepSettings(
            step_number=number,
            model=self.model,
            tools=dict(run.config.tools),
            tool_choice=run.config.tool_choice,
            steps=run.steps,
        )
        self._collector = StepCollector(keep=run.config.stream_history)
        self._prompt: Prompt = []
        self._answer: list[Chunk] | None = None
        self._replayed: list[Chunk] = []
        self._request = ModelRequest(prompt=[])

    async def begin(self) -> list[Chunk] | StepEnd:
        """``process_input_step``: the chunks to deliver before the model call, or the step's end."""
        run = self.run
        rejected = await _tripped(run.inputs.run_input_step(self.settings))
        out = await run.drain()
        if rejected is not None:
            end = await run.reject(rejected, "other", None)
            return StepEnd([*out, *end.chunks], end.next)
        self.model = self.settings.model = run.resolve_model(self.settings.model)
        return out

    async def call(self) -> AsyncGenerator[Chunk, None]:
        """Call the model, again for each API error a processor retries, yielding each processed chunk.

        An answer a processor supplied (a cache hit) streams in the model's place, through the same
        stream processors: a guard judges a replayed answer as it judged the model's.
        """
        run, model = self.run, self.model
        while True:
            for chunk in await self._start_call():
                yield chunk
            active, answer = run.stream.active, self._answer
            if answer is not None:
                self._collector.from_cache = True
                if not active:  # nothing to process them: delivered as stored, no async step per chunk
                    for chunk in self._replay(answer):
                        yield chunk
                    return
            # The hot path: one iteration per model chunk, kept free of per-chunk allocations.
            failure: ModelError | None = None
            tripped: TripWire | None = None
            collector = self._collector
            stream = model.stream(self._request) if answer is None else self._replayed_stream(answer)
            push, add, pending = run.stream.push, collector.add, run.pending
            try:
                async for raw in stream:
                    if raw.type == "finish":
                        collector.finish(raw)
                    elif active:
                        for chunk in await push(raw):
                            add(chunk)
                            yield chunk
                        if pending:
                            for chunk in await run.drain(collector):
                                yield chunk
                    else:
                        add(raw)
                        yield raw
            except ModelError as error:
                failure = error
            except TripWire as tripwire:
                tripped = tripwire
            finally:
                await _close(stream)
            if tripped is not None:
                await self._count_tripped(tripped)
                raise tripped
            if failure is None:
                for chunk in await self._end_stream():
                    yield chunk
                return
            for chunk in await self._recover(failure):
                yield chunk

    async def _replayed_stream(self, answer: list[Chunk]) -> AsyncGenerator[Chunk, None]:
        """A processor's answer as the model's stream: what the loop reads in place of the model's.

        The answer's ``tool-result`` chunks (the step's tool results) are set aside: :meth:`finish`
        delivers them in place of running the tools.
        """
        replayed = self._replayed
        for chunk in answer:
            if chunk.type == "tool-result":
                replayed.append(chunk)
            else:
                yield chunk

    def _replay(self, answer: list[Chunk]) -> list[Chunk]:
        """A processor's answer when no stream processor runs: collected, and delivered as stored."""
        collector = self._collector
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

    async def _start_call(self) -> list[Chunk]:
        """Build the prompt, run ``process_llm_request`` and announce the model call."""
        run, settings = self.run, self.settings
        self._collector = StepCollector(keep=run.config.stream_history)
        self._replayed = []
        outcome = await run.llm.run_llm_request(run.ml.to_prompt(), settings)
        self._prompt = outcome.prompt
        self._answer = outcome.chunks
        if outcome.chunks is None:
            self._request = ModelRequest(
                prompt=outcome.prompt,
                tools=[tool.spec() for tool in settings.tools.values()],
                tool_choice=settings.tool_choice,
                provider_options=settings.provider_options,
            )
        return await run.through(step_start_chunk(settings.step_number, run.ctx.retry_count))

    async def _end_stream(self) -> list[Chunk]:
        """Flush what stream processors held back; it belongs to the step."""
        run = self.run
        if not run.stream.active:
            return []
        try:
            out = await run.stream.flush()
            for chunk in out:
                self._collector.add(chunk)
            if run.pending:
                out.extend(await run.drain(self._collector))
        except TripWire as tripwire:
            await self._count_tripped(tripwire)
            raise
        return out

    async def _count_tripped(self, tripwire: TripWire) -> None:
        """A stream processor tripped the model call: what the provider billed for it counts all the same.

        The usage the model reported joins the run's usage, and ``process_llm_response`` (a cost guard)
        sees the chunks that passed, then the ``tripwire`` chunk and a ``finish`` chunk of reason
        ``tripwire`` whose usage is ``None`` when the stream was cut before the model reported it. A
        tripwire a hook raises here is dropped: the call already ends on this one. A replayed answer (a
        cache hit) was billed by no one: nothing is counted.
        """
        run, collector = self.run, self._collector
        if collector.from_cache:
            return  # a replayed answer: no model call was billed
        run.usage = run.usage + collector.usage
        usage = collector.usage.to_dict() if collector.finished else None
        chunks = [
            *collector.kept(),
            Chunk("tripwire", tripwire.info().to_dict()),
            Chunk("finish", {"finish_reason": "tripwire", "usage": usage}),
        ]
        response = run.llm.run_llm_response(
            chunks, self.settings, prompt=self._prompt, from_cache=False, dropped_chunks=collector.dropped
        )
        again = await _tripped(response)
        if again is not None:
            log.debug("tripwire_dropped", processor_id=again.processor_id, hook="process_llm_response")

    async def _recover(self, error: ModelError) -> list[Chunk]:
        """Run ``process_api_error``; re-raise ``error`` unless a processor asks (within the cap) to retry."""
        run = self.run
        retry_by = await run.errors.run_api_error(error, self.settings)
        cap = run.config.max_processor_retries
        if cap is None:
            cap = DEFAULT_API_ERROR_RETRIES
        if retry_by is None or run.ctx.retry_count >= cap:
            raise error
        run.bump_retry()
        log.debug("api_error_retry", processor_id=retry_by, retry_count=run.ctx.retry_count)
        await self._discard_attempt()
        discarded = {"reason": str(error), "retry": True, "metadata": {}, "processor_id": retry_by}
        return await run.through(step_finish_chunk(self.number, "error", Usage(), discarded))

    async def _discard_attempt(self) -> None:
        """End the broken attempt's stream: what stream processors held back is withheld, not released."""
        run = self.run
        if not run.stream.active:
            return
        mark = len(run.pending)
        withheld = await run.stream.discard()
        del run.pending[mark:]  # data chunks written about text nobody will see
        if withheld:
            log.debug("stream_attempt_discarded", withheld_chunks=withheld)

    async def finish(self) -> StepEnd:
        """Judge the finished step (``process_llm_response``, ``process_output_step``), then run its tools."""
        run, collector = self.run, self._collector
        message = collector.message()
        run.ml.add(message, source="response")
        run.open_id = message.id
        step = collector.step_result(self.number, message)
        run.usage = run.usage + step.usage
        out: list[Chunk] = []
        if not collector.from_cache:
            finish = Chunk("finish", {"finish_reason": step.finish_reason, "usage": step.usage.to_dict()})
            chunks = [*step.chunks, finish]
            await run.llm.run_llm_response(
                chunks, self.settings, prompt=self._prompt, from_cache=False, dropped_chunks=collector.dropped
            )
            out.extend(await run.drain())
        rejected = await _tripped(run.outputs.run_output_step(step, [*run.steps, step]))
        out.extend(await run.drain())
        self._attach(message.id, out)
        if rejected is not None:
            end = await run.reject(rejected, "tripwire", step)
            return StepEnd([*out, *end.chunks], end.next)
        run.accept()
        # The step stays open (``open_id``) until its last chunk passed the stream processors: a
        # tripwire on a tool's data chunk, a tool result or the step-finish chunk drops it whole.
        if collector.from_cache:
            out.extend(await self._replay_tools(step, message.id))
        else:
            out.extend(await self._run_tools(step, message.id))
        out.extend(await run.through(step_finish_chunk(self.number, step.finish_reason, step.usage)))
        run.steps.append(step)
        run.open_id = None
        run.finish_reason = step.finish_reason
        done = not step.tool_calls or len(step.tool_results) < len(step.tool_calls)
        return StepEnd(out, "stop" if done else "continue")

    async def _run_tools(self, step: StepResult, message_id: str) -> list[Chunk]:
        """Execute the step's tool calls (except client-side ones) and emit their results."""
        run, tools = self.run, self.settings.tools
        runnable = [c for c in step.tool_calls if not is_client_side(c, tools)]
        if not runnable:
            return []
        results = await execute_tool_calls(
            runnable, tools, request_context=run.ctx.request_context, writer=run.ctx.writer
        )
        out = await run.drain()  # the data chunks the tools wrote come first
        return await self._deliver(step, message_id, results, map(tool_result_chunk, results), out)

    async def _replay_tools(self, step: StepResult, message_id: str) -> list[Chunk]:
        """A cached step: its tool results come from the cache; no tool runs again.

        The step keeps the results as stored (what the next model call reads, and what its cache key
        is derived from); the consumer gets them through the stream processors, like executed ones.
        """
        chunks, self._replayed = self._replayed, []
        if not chunks:
            return []
        return await self._deliver(step, message_id, [_replayed_result(c) for c in chunks], chunks, [])

    async def _deliver(
        self,
        step: StepResult,
        message_id: str,
        results: list[ToolResult],
        chunks: Iterable[Chunk],
        out: list[Chunk],
    ) -> list[Chunk]:
        """Record the step's tool results (on the step and its message), then pass their ``chunks``
        through the stream processors after ``out``; the chunks released are attached to the message."""
        run = self.run
        step.tool_results = results
        message = run.ml.get(message_id)
        if message is not None:
            record_results(message, results)
            step.messages = [message]
        for chunk in chunks:
            out.extend(await run.through(chunk))
        self._attach(message_id, out)
        return out

    def _attach(self, message_id: str, chunks: list[Chunk]) -> None:
        message = self.run.ml.get(message_id)
        if message is not None:
            attach_data(message, chunks)

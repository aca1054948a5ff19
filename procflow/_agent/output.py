"""What a call returns: :class:`GenerateResult`, and :class:`StreamOutput` for streams."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol

from procflow._messages.chunk import Chunk
from procflow._messages.message import Message
from procflow._messages.message_list import MessageList, UIMessage
from procflow._messages.request_context import STRUCTURED_OUTPUT_KEY, RequestContext
from procflow._messages.results import FinishReason, StepResult, ToolCall, ToolResult, Usage
from procflow._messages.tripwire import TripwireInfo
from procflow.errors import StreamStateError

__all__ = ["AgentResponse", "GenerateResult", "StreamOutput"]


@dataclass(frozen=True, slots=True)
class AgentResponse:
    """The response side of a call.

    Attributes:
        messages: The response messages, as the output processors left them (one assistant message per
            accepted step).
        ui_messages: The same messages for a user interface, with processor-added metadata; signals are
            hidden.
        message_list: The request's whole conversation (instructions, history, input, signals and
            response), for inspection.
    """

    messages: list[Message]
    ui_messages: list[UIMessage]
    message_list: MessageList


@dataclass(frozen=True, slots=True)
class GenerateResult:
    """The outcome of one ``generate()`` or ``stream()`` call.

    Attributes:
        text: The text of the accepted steps, after output processors.
        usage: Tokens of every model call made, including rejected and retried ones.
        finish_reason: ``stop``/``length``/``tool-calls``/… from the model; ``other`` when a tripwire
            stopped the call; ``tripwire`` when ``process_output_step`` rejected a step for good;
            ``aborted`` when the caller cancelled; ``error`` when an exception ended it.
        steps: The accepted model steps, with their tool calls and results.
        tripwire: The tripwire that stopped the call, if any.
        response: The response messages and their UI form.
        request_context: The request's context, as processors left it.
    """

    text: str
    usage: Usage
    finish_reason: FinishReason
    steps: list[StepResult]
    tripwire: TripwireInfo | None
    response: AgentResponse
    request_context: RequestContext

    @property
    def object(self) -> Any:
        """The object a ``StructuredOutputProcessor`` made from the answer (``None`` without one)."""
        return self.request_context.get(STRUCTURED_OUTPUT_KEY)

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Every tool call of every accepted step."""
        return [call for step in self.steps for call in step.tool_calls]

    @property
    def tool_results(self) -> list[ToolResult]:
        """Every tool result of every accepted step."""
        return [result for step in self.steps for result in step.tool_results]

    @property
    def reasoning_text(self) -> str:
        """The reasoning text of every accepted step."""
        return "".join(step.reasoning_text for step in self.steps)


class _Run(Protocol):
    result: GenerateResult | None

    def events(self) -> AsyncGenerator[Chunk, None]: ...


class StreamOutput:
    """A running ``stream()`` call: iterate :attr:`full_stream` (or :attr:`text_stream`) to drive it.

    The call runs lazily, in the consumer's task, as the stream is iterated — there is no background
    task. Once it has finished, ``text``, ``usage``, ``finish_reason``, ``steps``, ``tripwire`` and
    ``response`` hold the outcome; ``await output.consume()`` drives it to the end and returns the
    :class:`GenerateResult`. A stream has one consumer. Use ``async with agent.stream(...) as output:``
    to close the call promptly if you stop iterating early (it then ends as ``aborted``).
    """

    __slots__ = ("_events", "_run", "_taken", "_texts")

    def __init__(self, run: _Run) -> None:
        self._run = run
        self._events = run.events()
        self._taken: str | None = None
        self._texts: AsyncIterator[str] | None = None

    def _take(self, name: str) -> None:
        if self._taken is not None and self._taken != name:
            raise StreamStateError(
                f"this stream is already consumed through {self._taken}; a stream has one consumer. "
                "Read output.text / output.steps after it ends, or await output.consume()"
            )
        self._taken = name

    @property
    def full_stream(self) -> AsyncIterator[Chunk]:
        """Every chunk: ``text-delta``, ``tool-call``, ``tool-result``, ``step-finish``, ``data-*``, …,
        ending with ``finish`` — or with ``tripwire`` when a processor stopped the call."""
        self._take("full_stream")
        return self._events

    @property
    def text_stream(self) -> AsyncIterator[str]:
        """The text deltas of the accepted steps only, each step's once it is accepted.

        A step's text is held until its ``step-finish`` chunk: an attempt thrown away for a retry
        (``step-finish`` with ``discarded``) and a step stopped by a tripwire yield nothing, so the
        joined text is the accepted steps' text. For token-by-token display read :attr:`full_stream`
        and drop an attempt's deltas when its ``step-finish`` carries ``discarded``.
        """
        self._take("text_stream")
        if self._texts is None:
            self._texts = self._text_deltas()
        return self._texts

    async def _text_deltas(self) -> AsyncIterator[str]:
        held: list[str] = []
        async for chunk in self._events:
            kind = chunk.type
            if kind == "text-delta":
                held.append(chunk.payload.get("text") or "")
            elif kind == "step-finish" or kind == "tripwire":
                accepted = kind == "step-finish" and "discarded" not in chunk.payload
                texts, held = held, []
                if accepted:
                    for text in texts:
                        yield text

    async def consume(self) -> GenerateResult:
        """Drive the call to its end (whatever was already read) and return its result."""
        async for _ in self._events:
            pass
        return self.result

    async def aclose(self) -> None:
        """Stop the call now if it is still running (it then ends as ``aborted``)."""
        await self._events.aclose()

    async def __aenter__(self) -> StreamOutput:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    @property
    def finished(self) -> bool:
        """Whether the call has ended (completed, stopped by a tripwire, aborted or failed)."""
        return self._run.result is not None

    @property
    def result(self) -> GenerateResult:
        """The call's result; raises ``StreamStateError`` (a ``RuntimeError``) until the
        stream has been consumed."""
        result = self._run.result
        if result is None:
            raise StreamStateError(
                "the stream has not finished yet: iterate output.full_stream to the end or "
                "await output.consume() first"
            )
        return result

    @property
    def text(self) -> str:
        """The final text (see :attr:`GenerateResult.text`)."""
        return self.result.text

    @property
    def usage(self) -> Usage:
        """Total token usage."""
        return self.result.usage

    @property
    def finish_reason(self) -> FinishReason:
        """Why the call ended."""
        return self.result.finish_reason

    @property
    def steps(self) -> list[StepResult]:
        """The accepted steps."""
        return self.result.steps

    @property
    def tripwire(self) -> TripwireInfo | None:
        """The tripwire that stopped the call, if any."""
        return self.result.tripwire

    @property
    def response(self) -> AgentResponse:
        """The response messages and their UI form."""
        return self.result.response

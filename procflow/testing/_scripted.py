"""A scripted in-process :class:`~procflow.models.LanguageModel` for tests, examples and benchmarks.

Each model call plays the next scripted step: text streamed in chunks, reasoning, tool calls, an error,
a stall (for cancellation tests) and usage. Every :class:`~procflow.models.ModelRequest` received is
recorded, so tests can inspect the prompts the agent sent.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import anyio

from procflow._messages.chunk import Chunk
from procflow._messages.prompt import Prompt, prompt_text
from procflow._messages.results import FinishReason, ToolCall, Usage
from procflow.errors import ProcflowError
from procflow.models._base import ModelRequest, ModelResponse

__all__ = ["ScriptExhaustedError", "ScriptItem", "ScriptedModel", "ScriptedStep"]

ToolCallSpec: TypeAlias = ToolCall | Mapping[str, Any] | tuple[str, Mapping[str, Any]]
"""A scripted tool call: a :class:`ToolCall`, ``("tool_name", {args})`` or
``{"tool_name": ..., "args": ..., "tool_call_id": ...}`` (ids default to ``call_<call>_<index>``)."""


class ScriptExhaustedError(ProcflowError, RuntimeError):
    """The scripted model was called more times than it has steps."""


@dataclass(slots=True)
class ScriptedStep:
    """What one model call answers.

    Attributes:
        text: Answer text, streamed as ``text-delta`` chunks of ``chunk_size`` characters.
        reasoning: Reasoning text, streamed as ``reasoning-delta`` chunks before the answer.
        tool_calls: Tool calls, emitted as ``tool-call`` chunks after the text.
        finish_reason: Defaults to ``"tool-calls"`` when there are tool calls, else ``"stop"``.
        usage: Defaults to word counts (prompt words in, answer words out).
        error: Raised after the step's chunks (at once when it has none): a mid-stream failure.
        chunks: Explicit chunks to stream instead of ``text``/``reasoning``/``tool_calls``.
        stall_after: After this many chunks, wait until cancelled (for cancellation tests).
        chunk_size: Characters per text chunk for this step (default: the model's).
    """

    text: str = ""
    reasoning: str = ""
    tool_calls: Sequence[ToolCallSpec] = ()
    finish_reason: FinishReason | None = None
    usage: Usage | None = None
    error: BaseException | None = None
    chunks: Sequence[Chunk] | None = None
    stall_after: int | None = None
    chunk_size: int | None = None


ScriptItem: TypeAlias = (
    ScriptedStep | str | ToolCall | BaseException | Callable[[ModelRequest], "ScriptedStep | str"]
)
"""One entry of a script: a step, plain text, one tool call, an error to raise, or a function of the
request returning a step or text."""


@dataclass(slots=True)
class _Play:
    chunks: list[Chunk]
    finish_reason: FinishReason
    usage: Usage
    error: BaseException | None
    stall_after: int | None
    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)


class ScriptedModel:
    """A language model that plays a script, one step per call, and records every request.

    Example::

        model = ScriptedModel([ScriptedStep(tool_calls=[("get_weather", {"city": "Paris"})]), "Sunny."])

    Args:
        steps: The script, one item per model call (see :data:`ScriptItem`).
        chunk_size: Characters per ``text-delta`` chunk (default 8).
        repeat_last: Keep answering with the last step once the script is used up (default: raise
            :class:`ScriptExhaustedError`).
        provider: The provider name reported.
        model_id: The model id reported.
    """

    def __init__(
        self,
        steps: Iterable[ScriptItem] = (),
        *,
        chunk_size: int = 8,
        repeat_last: bool = False,
        provider: str = "scripted",
        model_id: str = "scripted-model",
    ) -> None:
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
        self._steps: list[ScriptItem] = list(steps)
        self._chunk_size = chunk_size
        self._repeat_last = repeat_last
        self._provider = provider
        self._model_id = model_id
        self.requests: list[ModelRequest] = []

    @property
    def provider(self) -> str:
        """The provider name (``"scripted"`` unless set)."""
        return self._provider

    @property
    def model_id(self) -> str:
        """The model id (``"scripted-model"`` unless set)."""
        return self._model_id

    @property
    def prompts(self) -> list[Prompt]:
        """The prompt of every call so far, in order."""
        return [request.prompt for request in self.requests]

    @property
    def calls(self) -> int:
        """How many times the model was called."""
        return len(self.requests)

    def add(self, *steps: ScriptItem) -> None:
        """Append steps to the script."""
        self._steps.extend(steps)

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Play the next step as a whole answer."""
        play = self._next(request)
        if play.stall_after is not None:
            await anyio.sleep_forever()
        if play.error is not None:
            raise play.error
        return ModelResponse(
            text=play.text,
            reasoning_text=play.reasoning,
            tool_calls=play.tool_calls,
            finish_reason=play.finish_reason,
            usage=play.usage,
        )

    def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        """Play the next step as a stream of chunks (the request is recorded at once)."""
        return self._stream(self._next(request))

    async def _stream(self, play: _Play) -> AsyncIterator[Chunk]:
        stall = play.stall_after
        for index, chunk in enumerate(play.chunks):
            if index == stall:
                await anyio.sleep_forever()
            yield chunk
        if stall is not None and stall >= len(play.chunks):
            await anyio.sleep_forever()
        if play.error is not None:
            raise play.error
        yield Chunk("finish", {"finish_reason": play.finish_reason, "usage": play.usage})

    def _next(self, request: ModelRequest) -> _Play:
        number = len(self.requests)
        self.requests.append(request)
        if number < len(self._steps):
            item = self._steps[number]
        elif self._repeat_last and self._steps:
            item = self._steps[-1]
        else:
            raise ScriptExhaustedError(
                f"ScriptedModel was called {number + 1} time(s) but its script has {len(self._steps)} "
                "step(s); add steps (model.add(...)) or pass repeat_last=True"
            )
        if callable(item) and not isinstance(item, ScriptedStep | ToolCall | BaseException):
            item = item(request)
        return self._render(_as_step(item), request, number)

    def _render(self, step: ScriptedStep, request: ModelRequest, number: int) -> _Play:
        calls = [_tool_call(spec, number, i) for i, spec in enumerate(step.tool_calls)]
        if step.chunks is not None:
            chunks = list(step.chunks)
            text = "".join(c.text or "" for c in chunks if c.type == "text-delta")
        else:
            chunks = list(_body(step, calls, step.chunk_size or self._chunk_size))
            text = step.text
        usage = step.usage or Usage(
            input_tokens=len(prompt_text(request.prompt).split()),
            output_tokens=len(text.split()) + len(step.reasoning.split()) + len(calls),
        )
        reason: FinishReason = step.finish_reason or ("tool-calls" if calls else "stop")
        return _Play(chunks, reason, usage, step.error, step.stall_after, text, step.reasoning, calls)


def _as_step(item: ScriptedStep | str | ToolCall | BaseException) -> ScriptedStep:
    if isinstance(item, ScriptedStep):
        return item
    if isinstance(item, str):
        return ScriptedStep(text=item)
    if isinstance(item, ToolCall):
        return ScriptedStep(tool_calls=[item])
    if isinstance(item, BaseException):
        return ScriptedStep(error=item)
    raise TypeError(
        f"a script item must be a ScriptedStep, str, ToolCall, exception or a function of the request "
        f"returning a ScriptedStep or str; got {type(item).__name__}"
    )


def _tool_call(spec: ToolCallSpec, number: int, index: int) -> ToolCall:
    default_id = f"call_{number}_{index}"
    if isinstance(spec, ToolCall):
        return spec
    if isinstance(spec, tuple):
        name, args = spec
        return ToolCall(default_id, name, dict(args))
    name = spec.get("tool_name", spec.get("name"))
    if not isinstance(name, str):
        raise TypeError(f"scripted tool call {spec!r} needs a 'tool_name'")
    return ToolCall(str(spec.get("tool_call_id", default_id)), name, dict(spec.get("args") or {}))


def _body(step: ScriptedStep, calls: list[ToolCall], size: int) -> Iterator[Chunk]:
    reasoning, text = step.reasoning, step.text
    for start in range(0, len(reasoning), size):
        yield Chunk("reasoning-delta", {"id": "r0", "text": reasoning[start : start + size]})
    for start in range(0, len(text), size):
        yield Chunk("text-delta", {"id": "0", "text": text[start : start + size]})
    for call in calls:
        yield Chunk(
            "tool-call", {"tool_call_id": call.tool_call_id, "tool_name": call.tool_name, "args": call.args}
        )

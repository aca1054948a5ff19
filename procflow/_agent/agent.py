"""The :class:`Agent`: instructions, a model, tools, and processors around every model call."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Unpack

import anyio

from procflow._agent._assembly import Processors, check_phases, check_processors
from procflow._agent._config import CALL_OPTION_NAMES, CallOptions, MemoryOptions, RunConfig
from procflow._agent._run import AgentRun
from procflow._agent.memory import MemoryProcessors
from procflow._agent.output import GenerateResult, StreamOutput
from procflow._messages.message import Message
from procflow._messages.message_list import MessageInput
from procflow._messages.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY, RequestContext
from procflow._runner.pipeline import PipelineCache
from procflow._tools._tool import Tool, tool
from procflow.errors import ConfigurationError
from procflow.models._base import LanguageModel
from procflow.models._router import resolve_model

__all__ = ["DEFAULT_MAX_STEPS", "Agent"]

DEFAULT_MAX_STEPS = 5
"""Model steps per call unless ``max_steps`` says otherwise (each tool round trip is one step)."""

Messages = MessageInput | Sequence[MessageInput]
"""A call's input: a string (a user message), a :class:`Message`, a message dict, or a list of them."""


class Agent:
    """An LLM agent whose every model call runs through processors.

    Args:
        id: The agent's id.
        model: A :class:`~procflow.models.LanguageModel`, or a ``"provider/model"`` id resolved (once,
            on first use) by :func:`procflow.models.resolve_model`.
        name: A display name (default: ``id``).
        instructions: System instructions, one string or several.
        tools: Tools the model may call: :class:`~procflow._tools.Tool` objects or plain functions
            (wrapped with :func:`~procflow._tools._tool`), as a list or a ``{name: tool}`` mapping.
        input_processors: Run before the model: a list, or a function of the ``RequestContext``
            returning one per request. Memory's input processors run before them.
        output_processors: Run on the model's stream, steps and final result; memory's output
            processors run after them.
        error_processors: Run (after the input and output processors) when the provider rejects a
            call; the built-in :class:`~procflow.processors.PrefillErrorHandler` is always added.
        max_processor_retries: How many consecutive retries processors may ask for with
            ``abort(..., retry=True)``; unset means such requests end the call (``finish_reason ==
            "tripwire"``). Re-issued calls after provider errors are capped by it too, or by 10 when
            it is unset.
        memory: Supplies memory processors per request (see :class:`MemoryProcessors`).

    Raises:
        ConfigurationError: an argument is invalid; the message says how to fix it.
    """

    def __init__(
        self,
        *,
        id: str,
        model: LanguageModel | str,
        name: str | None = None,
        instructions: str | Sequence[str] = (),
        tools: Sequence[Tool | Callable[..., Any]] | Mapping[str, Tool] = (),
        input_processors: Processors = (),
        output_processors: Processors = (),
        error_processors: Processors = (),
        max_processor_retries: int | None = None,
        memory: MemoryProcessors | None = None,
    ) -> None:
        if not isinstance(id, str) or not id:
            raise ConfigurationError("Agent needs a non-empty string id, e.g. Agent(id='support-agent', ...)")
        self.id = id
        self.name = name or id
        self.instructions = [instructions] if isinstance(instructions, str) else list(instructions)
        self.model = _check_model(model)
        self.tools = _tools(tools)
        self.input_processors = check_processors(input_processors, what="input_processors")
        self.output_processors = check_processors(output_processors, what="output_processors")
        self.error_processors = check_processors(error_processors, what="error_processors")
        check_phases(self.input_processors, self.output_processors)
        self.max_processor_retries = _check_retries(max_processor_retries)
        if memory is not None and not isinstance(memory, MemoryProcessors):
            raise ConfigurationError(
                "memory must provide input_processors(request_context) and output_processors(request_context)"
            )
        self.memory = memory
        self._resolved: LanguageModel | None = None
        self._pipelines = PipelineCache()

    def __repr__(self) -> str:
        return f"Agent(id={self.id!r})"

    def stream(self, messages: Messages, **options: Unpack[CallOptions]) -> StreamOutput:
        """Start a call whose chunks you iterate: ``async for chunk in agent.stream(...).full_stream``.

        Nothing runs until the stream is iterated (or ``await output.consume()``); it then runs in the
        consumer's task.

        Args:
            messages: The new input (history comes from memory).
            **options: The call's options (:class:`CallOptions`): ``max_steps``, ``request_context``,
                ``input_processors``, ``output_processors``, ``error_processors``,
                ``max_processor_retries``, ``prepare_step``, ``tool_choice``, ``on_finish``, ``memory``,
                ``stream_history``.

        Raises:
            ConfigurationError: an option is unknown or invalid; the message says how to fix it.
        """
        return StreamOutput(AgentRun(self._run_config(messages, options)))

    async def generate(self, messages: Messages, **options: Unpack[CallOptions]) -> GenerateResult:
        """Run a call to its end and return the result; takes the same options as :meth:`stream`.

        A tripwire never raises: it is ``result.tripwire``. Provider errors no processor recovers from
        raise :class:`~procflow.errors.APICallError`; cancelling the caller's scope propagates as usual.
        """
        return await self.stream(messages, **options).consume()

    def generate_sync(self, messages: Messages, **options: Unpack[CallOptions]) -> GenerateResult:
        """Blocking :meth:`generate` for scripts (runs its own event loop; not from async code)."""
        self._run_config(messages, options)  # refuse bad options here, before an event loop starts
        return anyio.run(functools.partial(self.generate, messages, **options))

    def _run_config(self, messages: Messages, options: CallOptions) -> RunConfig:
        unknown = set(options) - CALL_OPTION_NAMES
        if unknown:
            raise ConfigurationError(
                f"unknown call option(s) {sorted(unknown)}; the options are {sorted(CALL_OPTION_NAMES)}"
            )
        max_steps = options.get("max_steps", DEFAULT_MAX_STEPS)
        if not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1:
            raise ConfigurationError(f"max_steps must be a positive integer, got {max_steps!r}")
        retries = options.get("max_processor_retries")
        inputs = self._pick(options.get("input_processors"), self.input_processors, "input_processors")
        outputs = self._pick(options.get("output_processors"), self.output_processors, "output_processors")
        if inputs is not self.input_processors or outputs is not self.output_processors:
            check_phases(inputs, outputs)
        return RunConfig(
            messages=_messages(messages),
            instructions=self.instructions,
            model=self.model,
            resolve_model=self._resolve_model,
            tools=self.tools,
            request_context=_with_memory(_context(options.get("request_context")), options.get("memory")),
            input_processors=inputs,
            output_processors=outputs,
            error_processors=self._pick(
                options.get("error_processors"), self.error_processors, "error_processors"
            ),
            memory=self.memory,
            prepare_step=options.get("prepare_step"),
            max_steps=max_steps,
            max_processor_retries=self.max_processor_retries if retries is None else _check_retries(retries),
            tool_choice=options.get("tool_choice"),
            on_finish=options.get("on_finish"),
            stream_history=_check_history(options.get("stream_history")),
            pipelines=self._pipelines,
        )

    def _pick(self, override: Processors | None, default: Processors, what: str) -> Processors:
        return default if override is None else check_processors(override, what=what)

    def _resolve_model(self, model: LanguageModel | str) -> LanguageModel:
        if model is not self.model:
            return resolve_model(model)
        if self._resolved is None:
            self._resolved = resolve_model(model)
        return self._resolved


def _check_model(model: Any) -> LanguageModel | str:
    if isinstance(model, str) and model:
        return model
    if isinstance(model, LanguageModel):
        return model
    raise ConfigurationError(
        f"model must be a 'provider/model' id or a LanguageModel (provider, model_id, generate(), "
        f"stream()); got {type(model).__name__}"
    )


def _check_history(value: Any) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
        return value
    raise ConfigurationError(
        f"stream_history must be a positive number of chunks or None (keep every chunk), got {value!r}"
    )


def _check_retries(value: Any) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    raise ConfigurationError(f"max_processor_retries must be a non-negative integer or None, got {value!r}")


def _tools(tools: Sequence[Tool | Callable[..., Any]] | Mapping[str, Tool]) -> dict[str, Tool]:
    items = list(tools.values()) if isinstance(tools, Mapping) else list(tools)
    out: dict[str, Tool] = {}
    for item in items:
        made = item if isinstance(item, Tool) else tool(item) if callable(item) else None
        if made is None:
            raise ConfigurationError(f"tools must be Tool objects or functions; got {type(item).__name__}")
        if made.name in out:
            raise ConfigurationError(
                f"two tools are named {made.name!r}; give one another name (tool(fn, name=...))"
            )
        out[made.name] = made
    return out


def _messages(messages: Messages) -> list[MessageInput]:
    if isinstance(messages, str | Message | Mapping):
        return [messages]
    return list(messages)


def _context(value: RequestContext | Mapping[str, Any] | None) -> RequestContext:
    if isinstance(value, RequestContext):
        return value
    return RequestContext(value)


def _with_memory(context: RequestContext, memory: MemoryOptions | None) -> RequestContext:
    if memory is None:
        return context
    if not isinstance(memory, Mapping) or set(memory) - {"thread", "resource"}:
        raise ConfigurationError(
            "memory must be a mapping like {'thread': 'THREAD_ID', 'resource': 'USER_ID'}; got "
            f"{sorted(memory) if isinstance(memory, Mapping) else type(memory).__name__}"
        )
    for key, name in ((THREAD_ID_KEY, "thread"), (RESOURCE_ID_KEY, "resource")):
        value = memory.get(name)
        if value is not None:
            if not isinstance(value, str) or not value:
                raise ConfigurationError(f"memory[{name!r}] must be a non-empty string")
            context.set(key, value)
    return context

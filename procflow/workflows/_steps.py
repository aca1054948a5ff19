"""Steps: the units a workflow runs — plain function steps and processor steps — and ``create_step``."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any, ClassVar, Generic, Protocol, TypeAlias, TypeVar, overload

from typing_extensions import TypeVar as DefaultTypeVar

from procflow._callables import is_async_callable
from procflow._engine.executor import run_node_alone
from procflow._engine.plan import NodeCall, NodeKind, PlanNode
from procflow._engine.retry import RetryPolicy
from procflow._engine.run_state import RunState, StepContext
from procflow._engine.schemas import make_validator
from procflow._messages.chunk import Chunk
from procflow._messages.message import Message
from procflow._messages.request_context import RequestContext
from procflow._runner.pipeline import ProcessorPipeline, processor_id_of
from procflow._runner.runner import PhaseRunner, StepSettings
from procflow._runner.stream import StreamRunner
from procflow.errors import ConfigurationError, WorkflowRunError
from procflow.processors._base import HOOK_NAMES, Processor
from procflow.workflows._annotations import resolve_schemas
from procflow.workflows._processor_data import PHASE_HOOKS, ProcessorPhase, ProcessorStepSchema

__all__ = [
    "ExecuteFn",
    "FunctionStep",
    "ProcessorStep",
    "Step",
    "coerce_processor_input",
    "create_step",
    "is_async_callable",
]

InT = DefaultTypeVar("InT", contravariant=True, default=Any)
"""What a step takes (``Any`` when not inferred)."""
OutT = DefaultTypeVar("OutT", covariant=True, default=Any)
"""What a step returns (``Any`` when not inferred)."""
_I = DefaultTypeVar("_I", default=Any)
_O = TypeVar("_O")
_S = TypeVar("_S", bound="Step[Any, Any]")

ExecuteFn = Callable[[StepContext[Any]], Any]
"""A step's body: receives the :class:`StepContext`, returns the output (``def`` or ``async def``)."""

ProcessorInput: TypeAlias = "ProcessorStepSchema | str | Iterable[Message | str]"
"""What a processor step or processor workflow runs on: its data, or messages/strings (input phase)."""


class Step(Generic[InT, OutT]):
    """Base of every step: an id, input and output schemas, an optional retry policy.

    ``Step[In, Out]`` takes an ``In`` and returns an ``Out``. Use :func:`create_step` to build one.
    Any step can be run alone with :meth:`run`.
    """

    kind: ClassVar[NodeKind] = "step"

    def __init__(
        self,
        *,
        id: str,
        input_schema: Any = Any,
        output_schema: Any = Any,
        retry: RetryPolicy | None = None,
        description: str | None = None,
    ) -> None:
        if not isinstance(id, str) or not id:
            raise ConfigurationError(
                "a step needs a non-empty string id, e.g. create_step(id='summarise', ...)"
            )
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise ConfigurationError(f"step {id!r}: retry must be a RetryPolicy, got {type(retry).__name__}")
        self.id = id
        self.input_schema = input_schema
        self.output_schema = output_schema
        self.retry = retry
        self.description = description
        self._validate = make_validator(input_schema, id)

    async def _call(self, value: Any, run: RunState, node: PlanNode) -> Any:
        raise NotImplementedError

    def handles(self, phase: ProcessorPhase) -> bool:
        """Whether the step does anything in a processor ``phase`` (plain steps take every phase)."""
        return True

    def to_node(self, *, default_retry: RetryPolicy | None = None) -> PlanNode:
        """The plan node for this step (its own retry policy wins over ``default_retry``)."""
        return PlanNode(
            id=self.id,
            kind=self.kind,
            call=self._call,
            input_schema=self.input_schema,
            output_schema=self.output_schema,
            validate=self._validate,
            retry=self.retry if self.retry is not None else default_retry,
            label=self.id,
            description=self.description,
            source=self,
        )

    async def run(
        self,
        input_data: InT,
        *,
        request_context: RequestContext | None = None,
        results: Mapping[str, Any] | None = None,
        init_data: Any = None,
    ) -> OutT:
        """Run this step alone — input validation and retries included — and return its output.

        Args:
            input_data: The step's input.
            request_context: The request context the step sees.
            results: Outputs of earlier steps, for ``ctx.get_step_result(...)``.
            init_data: What ``ctx.init_data`` returns (default: ``input_data``).

        Raises:
            TripWire: the step stopped on purpose.
            WorkflowRunError: the input does not match the step's input schema.
        """
        output: OutT = await run_node_alone(
            self.to_node(),
            input_data,
            workflow_id=self.id,
            request_context=request_context,
            results=results,
            init_data=init_data,
        )
        return output

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r})"


class FunctionStep(Step[InT, OutT]):
    """A plain step whose body is a function of the :class:`StepContext`.

    ``def f(ctx: StepContext[Order]) -> int`` makes a ``FunctionStep[Order, int]`` whose input schema is
    ``Order`` and output schema ``int``; explicit ``input_schema=``/``output_schema=`` are checked
    against those annotations.
    """

    kind: ClassVar[NodeKind] = "step"

    def __init__(
        self,
        *,
        id: str,
        execute: Callable[[StepContext[InT]], OutT] | Callable[[StepContext[InT]], Awaitable[OutT]],
        input_schema: Any = Any,
        output_schema: Any = Any,
        retry: RetryPolicy | None = None,
        description: str | None = None,
    ) -> None:
        if not callable(execute):
            raise ConfigurationError(f"step {id!r}: execute must be a function taking the step context")
        input_schema, output_schema = resolve_schemas(id, execute, input_schema, output_schema)
        super().__init__(
            id=id,
            input_schema=input_schema,
            output_schema=output_schema,
            retry=retry,
            description=description,
        )
        self.execute = execute
        self._is_async = is_async_callable(execute)

    async def _call(self, value: Any, run: RunState, node: PlanNode) -> Any:
        output: Any = self.execute(StepContext(value, step_id=node.id, run=run))
        if self._is_async or inspect.isawaitable(output):
            output = await output
        return output


class ProcessorStep(Step[ProcessorStepSchema, ProcessorStepSchema]):
    """A processor as a step: id ``processor:<processor id>``, ``ProcessorStepSchema`` in and out.

    In each phase it calls the processor's hook for that phase through the phase runner — the same
    arguments, result handling, tripwire reporting and ``on_violation`` as in the agent — or passes the
    value through when the processor has no such hook.
    """

    kind: ClassVar[NodeKind] = "processor"

    def __init__(self, processor: Any, *, retry: RetryPolicy | None = None) -> None:
        pid = processor_id_of(processor)
        self.processor = processor
        self.processor_id = pid
        self._bind([processor])
        super().__init__(
            id=f"processor:{pid}",
            input_schema=ProcessorStepSchema,
            output_schema=ProcessorStepSchema,
            retry=retry,
            description=getattr(processor, "description", None),
        )

    def _bind(self, processors: list[Any]) -> None:
        self._pipeline = ProcessorPipeline.build(processors)
        self._phases = frozenset(phase for phase, hook in PHASE_HOOKS.items() if self._pipeline.has(hook))
        self._async_phases = frozenset(
            phase
            for phase in self._phases
            if any(hook.is_async for hook in self._pipeline.phase(PHASE_HOOKS[phase]))
        )

    @classmethod
    def chain(cls, nodes: tuple[PlanNode, ...]) -> NodeCall:
        """One call running the processors of consecutive processor nodes in a row, like a processor list."""
        fused = cls.__new__(cls)
        fused._bind([node.processor for node in nodes])
        return fused._call

    def handles(self, phase: ProcessorPhase) -> bool:
        """Whether the processor has the hook of ``phase``."""
        return phase in self._phases

    def to_node(self, *, default_retry: RetryPolicy | None = None) -> PlanNode:
        """The plan node for this step, carrying the processor."""
        node = super().to_node(default_retry=default_retry)
        waits = node.retry is not None and node.retry.initial_delay > 0
        return replace(node, processor=self.processor, inline=None if waits else self._inline)

    def _inline(self, value: Any) -> bool:
        return getattr(value, "phase", None) not in self._async_phases

    async def _call(self, value: Any, run: RunState, node: PlanNode) -> ProcessorStepSchema:
        data: ProcessorStepSchema = value
        phase = data.phase
        if phase not in self._phases:
            return data
        runner = PhaseRunner(self._pipeline, data.context)
        if phase == "input":
            await runner.run_input()
        elif phase == "output_stream":
            data.chunks = await self._stream(data.chunks, data)
        elif phase == "output_step":
            if data.step is None:
                raise _missing(node.id, "step", "for_output_step")
            await runner.run_output_step(data.step, data.steps)
        elif phase == "output_result":
            if data.result is None:
                raise _missing(node.id, "result", "for_output_result")
            await runner.run_output_result(data.result)
        else:
            if data.settings is None:
                raise _missing(node.id, "settings", "for_input_step")
            await _call_model_phase(runner, phase, data, data.settings)
        return data

    async def _stream(self, chunks: list[Chunk], data: ProcessorStepSchema) -> list[Chunk]:
        runner = StreamRunner(self._pipeline, data.context)
        out: list[Chunk] = []
        for chunk in chunks:
            out.extend(await runner.push(chunk))
        return out

    async def run(
        self,
        input_data: ProcessorInput,
        *,
        request_context: RequestContext | None = None,
        results: Mapping[str, Any] | None = None,
        init_data: Any = None,
    ) -> ProcessorStepSchema:
        """Run the processor's hook for the phase of ``input_data`` alone and return the data after it.

        ``input_data`` is a :class:`ProcessorStepSchema` (build one with ``ProcessorStepSchema.for_input``,
        ``for_output_step``, …) or a list of messages/strings, taken as the input phase.
        """
        data: ProcessorStepSchema = coerce_processor_input(input_data, request_context)
        out = await super().run(data, request_context=request_context, results=results, init_data=init_data)
        return out


async def _call_model_phase(
    runner: PhaseRunner, phase: ProcessorPhase, data: ProcessorStepSchema, settings: StepSettings
) -> None:
    """The phases around one model call, with a processor list's semantics (first answer/retry wins)."""
    if phase == "input_step":
        await runner.run_input_step(settings)
    elif phase == "llm_request":
        if data.answer is not None:
            return
        outcome = await runner.run_llm_request(data.prompt or [], settings)
        data.prompt = outcome.prompt
        if outcome.chunks is not None:
            data.answer, data.answered_by = outcome.chunks, outcome.answered_by
    elif phase == "llm_response":
        await runner.run_llm_response(
            data.chunks,
            settings,
            prompt=data.prompt or [],
            from_cache=data.from_cache,
            dropped_chunks=data.dropped_chunks,
        )
    elif phase == "api_error":
        if data.retry_by is not None or data.error is None:
            return
        data.retry_by = await runner.run_api_error(data.error, settings)
    else:
        raise AssertionError(phase)


def coerce_processor_input(value: Any, request_context: RequestContext | None = None) -> Any:
    """Turn a list of messages (or strings) into input-phase :class:`ProcessorStepSchema`; keep others."""
    if isinstance(value, ProcessorStepSchema | bytes | Mapping):
        return value
    if isinstance(value, str):
        return ProcessorStepSchema.for_input([value], request_context=request_context)
    if isinstance(value, Iterable):
        return ProcessorStepSchema.for_input(list(value), request_context=request_context)
    return value


def _missing(step_id: str, what: str, factory: str) -> WorkflowRunError:
    return WorkflowRunError(
        f"the ProcessorStepSchema has no {what} for its phase; "
        f"build it with ProcessorStepSchema.{factory}(...)",
        step_id=step_id,
    )


def _looks_like_processor(obj: Any) -> bool:
    return isinstance(getattr(obj, "id", None), str) and any(
        callable(getattr(obj, name, None)) for name in HOOK_NAMES
    )


class StepDecorator(Protocol):
    """What ``create_step(id=...)`` without ``execute`` returns: apply it to a step function."""

    @overload
    def __call__(self, fn: Callable[[StepContext[_I]], Awaitable[_O]], /) -> FunctionStep[_I, _O]: ...

    @overload
    def __call__(self, fn: Callable[[StepContext[_I]], _O], /) -> FunctionStep[_I, _O]: ...


# A step also has the Processor protocol's id: the step overload comes first and wins.
@overload
def create_step(processor: _S, /, *, retry: RetryPolicy | None = None) -> _S: ...  # type: ignore[overload-overlap]


@overload
def create_step(processor: Processor, /, *, retry: RetryPolicy | None = None) -> ProcessorStep: ...


@overload
def create_step(
    *,
    id: str,
    execute: Callable[[StepContext[_I]], Awaitable[_O]],
    input_schema: Any = ...,
    output_schema: Any = ...,
    retry: RetryPolicy | None = ...,
    description: str | None = ...,
) -> FunctionStep[_I, _O]: ...


@overload
def create_step(
    *,
    id: str,
    execute: Callable[[StepContext[_I]], _O],
    input_schema: Any = ...,
    output_schema: Any = ...,
    retry: RetryPolicy | None = ...,
    description: str | None = ...,
) -> FunctionStep[_I, _O]: ...


@overload
def create_step(
    *,
    id: str | None = ...,
    input_schema: Any = ...,
    output_schema: Any = ...,
    retry: RetryPolicy | None = ...,
    description: str | None = ...,
) -> StepDecorator: ...


def create_step(
    processor: Any = None,
    /,
    *,
    id: str | None = None,
    execute: ExecuteFn | None = None,
    input_schema: Any = Any,
    output_schema: Any = Any,
    retry: RetryPolicy | None = None,
    description: str | None = None,
) -> Any:
    """Build a step, in one of three forms.

    - ``create_step(processor)``: a :class:`ProcessorStep` with id ``processor:<processor id>``
      (a step or committed workflow given here is returned as it is);
    - ``create_step(id=..., execute=fn, input_schema=..., output_schema=...)``: a plain step;
    - ``@create_step(id=..., input_schema=..., output_schema=...)`` on a function: the same, as a
      decorator (the id defaults to the function's name).

    Schemas are types or pydantic models; inputs are validated against ``input_schema`` when the step
    runs. ``execute`` receives the :class:`StepContext` and may be ``def`` or ``async def``. The schemas
    default to the function's annotations (``def f(ctx: StepContext[Order]) -> int``: ``Order`` in,
    ``int`` out), and so do the static types: the result is a ``FunctionStep[Order, int]``.

    Raises:
        ConfigurationError: the arguments match none of the forms.
        WorkflowDefinitionError: an explicit schema disagrees with the function's annotations.
    """
    if processor is not None:
        if isinstance(processor, Step):
            return processor
        if not _looks_like_processor(processor):
            raise ConfigurationError(
                f"create_step() got {processor!r}, which is not a processor (an object with a string id and "
                "a hook such as process_input); for a plain step use create_step(id=..., execute=...)"
            )
        return ProcessorStep(processor, retry=retry)
    if execute is not None:
        if id is None:
            raise ConfigurationError(
                "create_step(execute=...) needs an id, e.g. create_step(id='clean', ...)"
            )
        return FunctionStep(
            id=id,
            execute=execute,
            input_schema=input_schema,
            output_schema=output_schema,
            retry=retry,
            description=description,
        )

    def decorate(fn: Callable[[StepContext[Any]], Any]) -> FunctionStep[Any, Any]:
        return FunctionStep(
            id=id or fn.__name__,
            execute=fn,
            input_schema=input_schema,
            output_schema=output_schema,
            retry=retry,
            description=description if description is not None else inspect.getdoc(fn),
        )

    return decorate

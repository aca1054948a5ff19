"""Assembling one request's processor pipelines from the agent, the call, memory and the framework."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from procflow._agent.memory import MemoryProcessors
from procflow._messages.request_context import RequestContext
from procflow._runner.pipeline import PipelineCache, ProcessorPipeline, processor_id_of
from procflow.errors import ConfigurationError
from procflow.processors._args import ProcessInputStepArgs
from procflow.processors._prefill_error_handler import PrefillErrorHandler

__all__ = [
    "PrepareStep",
    "PrepareStepProcessor",
    "Processors",
    "ProcessorsFactory",
    "RequestPipelines",
    "build_pipelines",
    "check_phases",
    "check_processors",
]

ProcessorsFactory: TypeAlias = Callable[[RequestContext], "Sequence[Any] | Awaitable[Sequence[Any]]"]
"""A function of the request's :class:`RequestContext` returning the processors for that request."""

Processors: TypeAlias = Sequence[Any] | ProcessorsFactory
"""A list of processors, or a (sync or async) factory building one per request."""

PrepareStep: TypeAlias = Callable[[ProcessInputStepArgs], Any]
"""``prepare_step(args)``: a ``process_input_step`` hook as a plain function (sync or async)."""

_LLM_HOOKS = ("process_llm_request", "process_llm_response")
_PREFILL_HANDLER = PrefillErrorHandler()
"""Shared by every request: the handler keeps its per-request data in ``args.state``."""
_ERROR_HOOKS = ("process_api_error",)


_PHASE_HOOKS: dict[str, tuple[str, ...]] = {
    "input_processors": (
        "process_input",
        "process_input_step",
        "process_llm_request",
        "process_llm_response",
    ),
    "output_processors": ("process_output_stream", "process_output_step", "process_output_result"),
}
"""The hooks an agent calls on the processors of each list (``process_api_error`` is called on all)."""


def check_phases(inputs: Processors, outputs: Processors) -> None:
    """Refuse a processor an agent would silently never run, or a workflow that cannot guard a stream.

    A processor among the input processors with none of the input hooks (or the reverse) is an error,
    and so is such a processor step inside a processor workflow (at any depth: the workflow has the
    hooks its other steps have, and skips that one), unless the same object is in the other list too,
    directly or in a workflow there (a pipeline given for both sides, as the CLI does). A processor
    workflow whose ``output_stream_problem`` is set cannot be an output processor.
    """
    if not isinstance(inputs, Sequence) or not isinstance(outputs, Sequence):
        return  # factories: their lists are made per request
    for what, processors, other in (
        ("input_processors", inputs, outputs),
        ("output_processors", outputs, inputs),
    ):
        elsewhere = {id(p) for p in other} | {
            id(step) for p in other for _, step in getattr(p, "processor_steps", ())
        }
        for processor in processors:
            problem = getattr(processor, "output_stream_problem", None)
            if what == "output_processors" and isinstance(problem, str):
                raise ConfigurationError(problem)
            if id(processor) not in elsewhere:
                _check_phase(processor, what, elsewhere)


def _check_phase(processor: Any, what: str, elsewhere: set[int]) -> None:
    wanted = _PHASE_HOOKS[what]
    other = "output_processors" if what == "input_processors" else "input_processors"
    hooks = ", ".join(wanted)
    if not _runs_in(processor, wanted):
        raise ConfigurationError(
            f"processor {processor_id_of(processor)!r} in {what} has none of the hooks an agent calls "
            f"there ({hooks}), so it would never run; move it to {other}"
        )
    for path, step in getattr(processor, "processor_steps", ()):
        if id(step) not in elsewhere and not _runs_in(step, wanted):
            raise ConfigurationError(
                f"step {path[-1]!r} of workflow {processor_id_of(processor)!r} in {what} (at "
                f"{' > '.join(path)}) runs processor {processor_id_of(step)!r}, which has none of the hooks "
                f"an agent calls there ({hooks}), so it would never run while the workflow's other steps "
                f"do; move it out of the workflow to {other} (listed directly or in a workflow there)"
            )


def _runs_in(processor: Any, hooks: tuple[str, ...]) -> bool:
    """Whether an agent calls ``processor`` in a list whose hooks are ``hooks`` (or on API errors)."""
    return any(callable(getattr(processor, hook, None)) for hook in (*hooks, *_ERROR_HOOKS))


def check_processors(value: Any, *, what: str) -> Processors:
    """Validate a processors argument now (a list is built once to check ids and hooks)."""
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        ProcessorPipeline.build(list(value))
        return tuple(value)
    if callable(value):
        return value  # type: ignore[no-any-return]
    raise ConfigurationError(
        f"{what} must be a list of processors or a function of the RequestContext returning one; "
        f"got {type(value).__name__}"
    )


async def _resolve(value: Processors, request_context: RequestContext, *, what: str) -> list[Any]:
    if isinstance(value, Sequence):
        return list(value)
    produced = value(request_context)
    if inspect.isawaitable(produced):
        produced = await produced
    if not isinstance(produced, Sequence) or isinstance(produced, str | bytes):
        raise ConfigurationError(
            f"the {what} factory returned {type(produced).__name__}; it must return a list of processors"
        )
    return list(produced)


class PrepareStepProcessor:
    """Runs a ``prepare_step`` function as a ``process_input_step`` processor (id ``prepare-step``)."""

    id = "prepare-step"

    def __init__(self, fn: PrepareStep) -> None:
        self._fn = fn

    async def process_input_step(self, args: ProcessInputStepArgs) -> Any:
        """Call the function; await it when it is async."""
        result = self._fn(args)
        if inspect.isawaitable(result):
            result = await result
        return result


@dataclass(frozen=True, slots=True)
class RequestPipelines:
    """The pipelines of one request.

    Attributes:
        input: ``[memory] → [yours] → [prepare_step]``: ``process_input`` and ``process_input_step``.
        output: ``[yours] → [memory]``: the stream, output-step and output-result hooks.
        llm: The input processors that implement the LLM request/response hooks (an output
            processor's ``process_llm_request`` would otherwise rewrite — or, for a ``TokenLimiter`` meant
            to cap the answer, trim — the prompt; the seed's cache and limiter are input processors).
        errors: Input, output, then error processors (and the built-in PrefillErrorHandler) that
            implement ``process_api_error``.
    """

    input: ProcessorPipeline
    output: ProcessorPipeline
    llm: ProcessorPipeline
    errors: ProcessorPipeline


async def build_pipelines(
    *,
    request_context: RequestContext,
    input_processors: Processors,
    output_processors: Processors,
    error_processors: Processors,
    memory: MemoryProcessors | None,
    prepare_step: PrepareStep | None,
    cache: PipelineCache,
) -> RequestPipelines:
    """Resolve factories for this request and build its pipelines (framework processors around yours).

    ``cache`` is the agent's own: a pipeline made only of lists given as lists is built once per agent;
    one fed by a factory, memory or ``prepare_step`` (made per request) is rebuilt every request.
    """
    static_in = isinstance(input_processors, Sequence) and memory is None and prepare_step is None
    static_out = isinstance(output_processors, Sequence) and memory is None
    static_all = static_in and static_out and isinstance(error_processors, Sequence)
    # Lists given as tuples (what Agent keeps) cannot change: their pipelines are assembled once.
    sources = (input_processors, output_processors, error_processors)
    frozen = static_all and all(isinstance(s, tuple) for s in sources)
    if frozen:
        known: RequestPipelines | None = cache.recall(sources)
        if known is not None:
            return known
    fresh = ProcessorPipeline.build
    build_in, build_out = (cache.build if static_in else fresh), (cache.build if static_out else fresh)
    build_all = cache.build if static_all else fresh
    inputs = await _resolve(input_processors, request_context, what="input_processors")
    outputs = await _resolve(output_processors, request_context, what="output_processors")
    errors = await _resolve(error_processors, request_context, what="error_processors")
    if memory is not None:
        inputs = [*_not_replaced(memory.input_processors(request_context), inputs), *inputs]
        outputs = [*outputs, *_not_replaced(memory.output_processors(request_context), outputs)]
    if prepare_step is not None:
        inputs.append(PrepareStepProcessor(prepare_step))
    if not any(isinstance(p, PrefillErrorHandler) for p in errors):
        errors.append(_PREFILL_HANDLER)
    pipelines = RequestPipelines(
        input=build_in(inputs),
        output=build_out(outputs),
        llm=build_in(_combine([inputs], _LLM_HOOKS)),
        errors=build_all(_combine([inputs, outputs, errors], _ERROR_HOOKS)),
    )
    if frozen:
        cache.remember(sources, pipelines)
    return pipelines


def _not_replaced(automatic: Sequence[Any], yours: Sequence[Any]) -> list[Any]:
    """Memory's processors, less those whose id one of yours has (yours replaces it, where you put it)."""
    ids = {getattr(p, "id", None) for p in yours}
    return [p for p in automatic if getattr(p, "id", None) not in ids]


def _combine(groups: Iterable[Sequence[Any]], hooks: tuple[str, ...]) -> list[Any]:
    """The processors of ``groups`` in order, each once, that implement one of ``hooks``."""
    seen: set[int] = set()
    out: list[Any] = []
    for group in groups:
        for processor in group:
            if id(processor) in seen or not any(callable(getattr(processor, h, None)) for h in hooks):
                continue
            seen.add(id(processor))
            out.append(processor)
    return out

"""Building a processor pipeline: hooks are found, and sync/async decided, once per processor list."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from procflow._callables import is_async_callable
from procflow.errors import ConfigurationError
from procflow.processors._base import HOOK_NAMES, AbortFn, HookName, Processor, make_abort

__all__ = ["BoundHook", "PipelineCache", "ProcessorPipeline", "processor_id_of"]


def processor_id_of(processor: object) -> str:
    """Return a processor's ``id``, or raise :class:`ConfigurationError` explaining what is missing."""
    pid = getattr(processor, "id", None)
    if not isinstance(pid, str) or not pid:
        raise ConfigurationError(
            f"{processor!r} is not a processor: it needs a non-empty string attribute 'id' "
            "(e.g. id = 'my-processor') and at least one hook such as process_input"
        )
    return pid


@dataclass(slots=True)
class BoundHook:
    """One processor's hook for one phase, with everything decided at build time."""

    processor: Any
    processor_id: str
    fn: Callable[[Any], Any]
    is_async: bool
    data_parts: bool
    abort: AbortFn
    flush: Callable[[Any], Any] | None = None
    flush_is_async: bool = False
    fail_open: bool = False
    name: str = ""


@dataclass(slots=True)
class ProcessorPipeline:
    """An ordered list of processors with each phase's hooks resolved once.

    Processors lacking a phase's hook are left out of that phase here, not skipped per call. Hooks may
    be ``def`` or ``async def``; which one is decided now.
    """

    processors: tuple[Any, ...]
    hooks: dict[HookName, tuple[BoundHook, ...]] = field(default_factory=dict)

    @classmethod
    def build(cls, processors: Sequence[Processor | Any]) -> ProcessorPipeline:
        """Resolve hooks for ``processors``; raise :class:`ConfigurationError` on bad entries.

        Every call builds a new pipeline (there is no process-wide cache); an owner that builds the same
        lists again and again — an agent, per request — keeps its own :class:`PipelineCache`.
        """
        seen: dict[str, int] = {}
        for index, processor in enumerate(processors):
            pid = processor_id_of(processor)
            if pid in seen:
                raise ConfigurationError(
                    f"processors #{seen[pid]} and #{index} share the id {pid!r}; each processor in a "
                    f"pipeline needs its own id (built-ins take id=..., e.g. id='{pid}-2')"
                )
            seen[pid] = index
            if not any(callable(getattr(processor, name, None)) for name in HOOK_NAMES):
                raise ConfigurationError(
                    f"processor {pid!r} has no hook; implement at least one of: {', '.join(HOOK_NAMES)}"
                )
        pipeline = cls(tuple(processors))
        for name in HOOK_NAMES:
            pipeline.hooks[name] = tuple(
                _bind(p, name) for p in processors if callable(getattr(p, name, None))
            )
        return pipeline

    def phase(self, name: HookName) -> tuple[BoundHook, ...]:
        """The bound hooks of one phase, in processor order."""
        return self.hooks.get(name, ())

    def has(self, name: HookName) -> bool:
        """Whether any processor implements ``name``."""
        return bool(self.hooks.get(name))

    def __len__(self) -> int:
        return len(self.processors)


class PipelineCache:
    """The pipelines one owner (an agent) built, keyed by the identities of their processors.

    An agent builds its pipelines on every request from mostly the same processor objects; this keeps
    the most recent ``size`` of them. An entry holds its processors, so while it exists no other object
    can take one of their ids. Lists made fresh per request (factories, memory) simply miss and are
    built, pushing out the oldest entries. Hooks are looked up when a list is first seen: a processor
    whose hook methods are replaced afterwards keeps its first binding for this owner.
    """

    __slots__ = ("_entries", "_remembered", "size")

    def __init__(self, *, size: int = 32) -> None:
        self.size = size
        self._entries: OrderedDict[tuple[int, ...], ProcessorPipeline] = OrderedDict()
        self._remembered: OrderedDict[tuple[int, ...], tuple[tuple[object, ...], Any]] = OrderedDict()

    def build(self, processors: Sequence[Processor | Any]) -> ProcessorPipeline:
        """The pipeline of ``processors``: the one built before for the same objects, else a new one."""
        key = tuple(id(p) for p in processors)
        cached = self._entries.get(key)
        if cached is not None:
            self._entries.move_to_end(key)
            return cached
        pipeline = ProcessorPipeline.build(processors)
        self._entries[key] = pipeline
        if len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return pipeline

    def recall(self, sources: tuple[object, ...]) -> Any:
        """What :meth:`remember` stored for these very objects (by identity), or ``None``."""
        entry = self._remembered.get(tuple(map(id, sources)))
        return None if entry is None else entry[1]

    def remember(self, sources: tuple[object, ...], value: Any) -> None:
        """Keep ``value`` (say, every pipeline of a request) for ``sources``, immutable objects such as
        tuples of processors; the entry holds them, so their ids cannot be reused while it exists."""
        key = tuple(map(id, sources))
        self._remembered[key] = (sources, value)
        self._remembered.move_to_end(key)
        if len(self._remembered) > self.size:
            self._remembered.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


def _bind(processor: Any, name: HookName) -> BoundHook:
    pid = processor_id_of(processor)
    fn = getattr(processor, name)
    flush = getattr(processor, "flush_output_stream", None) if name == "process_output_stream" else None
    return BoundHook(
        processor=processor,
        processor_id=pid,
        fn=fn,
        is_async=is_async_callable(fn),
        data_parts=bool(getattr(processor, "process_data_parts", False)),
        abort=make_abort(pid),
        flush=flush if callable(flush) else None,
        flush_is_async=is_async_callable(flush) if callable(flush) else False,
        fail_open=_fail_open(processor, pid),
        name=name,
    )


def _fail_open(processor: Any, processor_id: str) -> bool:
    value = getattr(processor, "fail_open", False)
    if not isinstance(value, bool):
        raise ConfigurationError(
            f"processor {processor_id!r}: fail_open must be True or False, got {type(value).__name__}"
        )
    return value

"""The processor protocol: an object with an ``id`` and at least one hook."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn, Protocol, runtime_checkable

from procflow._logging import log
from procflow._messages.message import Message
from procflow._messages.tripwire import TripWire

__all__ = [
    "HOOK_NAMES",
    "AbortFn",
    "HookName",
    "Processor",
    "ProcessorBase",
    "ProcessorViolation",
    "SignalSender",
    "ViolationCallback",
    "make_abort",
    "notify_violation",
]

HookName = Literal[
    "process_input",
    "process_input_step",
    "process_llm_request",
    "process_llm_response",
    "process_output_stream",
    "process_output_step",
    "process_output_result",
    "process_api_error",
]
"""The name of a processor hook (one of :data:`HOOK_NAMES`)."""

HOOK_NAMES: tuple[HookName, ...] = (
    "process_input",
    "process_input_step",
    "process_llm_request",
    "process_llm_response",
    "process_output_stream",
    "process_output_step",
    "process_output_result",
    "process_api_error",
)
"""Every hook a processor may implement, in the order the agent loop calls them."""


@dataclass(frozen=True, slots=True)
class ProcessorViolation:
    """What ``on_violation`` receives: who detected what, with processor-specific detail."""

    processor_id: str
    message: str
    detail: dict[str, Any] = field(default_factory=dict)


ViolationCallback = Callable[[ProcessorViolation], Awaitable[None] | None]
"""An ``on_violation`` callback: receives a :class:`ProcessorViolation`; may be sync or async."""


class AbortFn(Protocol):
    """``abort(reason, retry=False, metadata=None)``: raise a :class:`TripWire` for this processor."""

    def __call__(
        self, reason: str | None = None, *, retry: bool = False, metadata: dict[str, Any] | None = None
    ) -> NoReturn: ...


class SignalSender(Protocol):
    """``await send_signal(contents, type=..., attributes=..., tag_name=..., transient=...)``."""

    async def __call__(
        self,
        contents: str,
        *,
        type: str = "reactive",
        attributes: dict[str, Any] | None = None,
        tag_name: str = "system-reminder",
        transient: bool = False,
    ) -> Message: ...


async def notify_violation(processor: object, violation: ProcessorViolation) -> None:
    """Call ``processor.on_violation(violation)`` if set; await it if async; swallow and log its errors.

    The runner calls it for tripwires; processors call it themselves to report what they changed
    (a redaction, say) — an unavailable audit sink must never fail the request.
    """
    callback = getattr(processor, "on_violation", None)
    if not callable(callback):
        return
    try:
        outcome = callback(violation)
        if outcome is not None and inspect.isawaitable(outcome):  # None: spare the Awaitable ABC check
            await outcome
    except Exception as exc:
        log.warning("on_violation_failed", processor_id=violation.processor_id, error_type=type(exc).__name__)


def make_abort(processor_id: str) -> AbortFn:
    """Return the ``abort`` function handed to ``processor_id``'s hooks."""

    def abort(
        reason: str | None = None, *, retry: bool = False, metadata: dict[str, Any] | None = None
    ) -> NoReturn:
        raise TripWire(
            reason or f"Tripwire triggered by processor {processor_id!r}",
            retry=retry,
            metadata=metadata,
            processor_id=processor_id,
        )

    return abort


@runtime_checkable
class Processor(Protocol):
    """Anything with an ``id`` and at least one hook is a processor.

    Hooks (each optional, ``def`` or ``async def``, one typed args object in, a result out):
    ``process_input``, ``process_input_step``, ``process_llm_request``, ``process_llm_response``,
    ``process_output_stream``, ``process_output_step``, ``process_output_result``,
    ``process_api_error``; plus ``flush_output_stream`` to emit text held back at the end of a stream,
    and, for a processor with LLM hooks, ``commit_llm_run(state, result)``, called once the whole run
    succeeded (``ResponseCache`` writes then, so a failed run stores nothing).

    Optional attributes: ``name``, ``description``, ``on_violation`` (called with a
    :class:`ProcessorViolation` on every tripwire and on reported redactions; its errors are swallowed),
    ``process_data_parts`` (also receive ``data-*`` chunks in ``process_output_stream``) and
    ``fail_open`` (``True``: when a hook raises, let the content pass unchanged instead of stopping the
    call — the default fails closed with :class:`~procflow.errors.ProcessorFailedError`).
    """

    id: str


class ProcessorBase:
    """Optional convenience base class: default ``name``/``description``/``on_violation`` attributes."""

    id: str = "processor"
    name: str | None = None
    description: str | None = None
    process_data_parts: bool = False
    fail_open: bool = False
    on_violation: ViolationCallback | None = None

"""Per-request run context: the message list, request context, per-processor state, signals, violations."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, cast

from procflow._logging import log
from procflow._messages.message import Message, SignalInfo
from procflow._messages.message_list import MessageList
from procflow._messages.request_context import RequestContext
from procflow._messages.signals import validate_xml_name
from procflow._messages.tripwire import TripWire
from procflow._messages.writer import StreamWriter
from procflow.processors._base import ProcessorViolation, SignalSender, notify_violation

__all__ = ["RunContext", "notify_violation", "report_tripwire"]


@dataclass(slots=True)
class RunContext:
    """Everything a phase needs that lives for one request: what that request's processors share.

    One per request (an agent call, or a hook run alone); not to be confused with a workflow run's
    :class:`~procflow._engine.run_state.RunState`, which the steps of one workflow run share.

    Attributes:
        message_list: The live conversation.
        request_context: The per-request key/value store.
        states: One dict per processor id, shared by all that processor's hooks for the request.
        retry_count: Consecutive processor retries so far (set by the agent loop).
        writer: Emits ``data-*`` chunks to the consumer, when streaming.
    """

    message_list: MessageList
    request_context: RequestContext = field(default_factory=RequestContext)
    states: dict[str, dict[str, Any]] = field(default_factory=dict)
    retry_count: int = 0
    writer: StreamWriter | None = None
    _senders: dict[str, SignalSender] = field(default_factory=dict, repr=False)
    _owners: dict[str, int] = field(default_factory=dict, repr=False)

    def hook_env(self, processor_id: str, processor: object) -> tuple[dict[str, Any], SignalSender]:
        """``(state_for(processor_id, processor), signal_sender(processor_id))`` in one cheap call."""
        owner = id(processor)
        key = processor_id
        if self._owners.setdefault(processor_id, owner) != owner:
            key = f"{processor_id}@{owner:x}"
        state = self.states.get(key)
        if state is None:
            state = self.states[key] = {}
        sender = self._senders.get(processor_id)
        if sender is None:
            sender = self._senders[processor_id] = _sender(self.message_list, processor_id)
        return state, sender

    def state_for(self, processor_id: str, owner: object = None) -> dict[str, Any]:
        """This processor's state dict for the request (created on first use).

        All hooks of one processor share it. When ``owner`` is given and a *different* processor object
        already claimed ``processor_id`` (say one ``TokenLimiter`` in the input list and another in the
        output list), the second one gets its own dict, so processors never see each other's data.
        """
        key = processor_id
        if owner is not None:
            first = self._owners.setdefault(processor_id, id(owner))
            if first != id(owner):
                key = f"{processor_id}@{id(owner):x}"
        state = self.states.get(key)
        if state is None:
            state = self.states[key] = {}
        return state

    def signal_sender(self, processor_id: str) -> SignalSender:
        """The ``send_signal`` function for ``processor_id``'s hooks (one per processor per request)."""
        sender = self._senders.get(processor_id)
        if sender is None:
            sender = self._senders[processor_id] = _sender(self.message_list, processor_id)
        return sender


async def _send_signal(
    message_list: MessageList,
    processor_id: str,
    contents: str,
    *,
    type: str = "reactive",
    attributes: dict[str, Any] | None = None,
    tag_name: str = "system-reminder",
    transient: bool = False,
) -> Message:
    validate_xml_name(tag_name, what="tag name")
    attrs = {validate_xml_name(str(k), what="attribute name"): str(v) for k, v in (attributes or {}).items()}
    info = SignalInfo(type=type, tag_name=tag_name, attributes=attrs, transient=transient)
    return message_list.add_signal(contents, signal=info, key=f"{processor_id}:{tag_name}:{type}")


def _sender(message_list: MessageList, processor_id: str) -> SignalSender:
    """One processor's ``send_signal``: a partial, cheaper to make per request than a closure."""
    return cast("SignalSender", functools.partial(_send_signal, message_list, processor_id))


async def report_tripwire(processor: Any, processor_id: str, tripwire: TripWire) -> None:
    """Stamp the processor id on ``tripwire`` if missing and fire ``on_violation`` once for it."""
    if tripwire.processor_id is None:
        tripwire.processor_id = processor_id
    if tripwire.reported:
        return
    tripwire.reported = True
    log.debug("processor_tripwire", processor_id=tripwire.processor_id, retry=tripwire.retry)
    await notify_violation(
        processor,
        ProcessorViolation(
            processor_id=tripwire.processor_id, message=tripwire.reason, detail=tripwire.metadata
        ),
    )

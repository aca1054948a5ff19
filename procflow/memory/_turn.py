"""What the memory processors of one request share: the thread, the resource and the turn being built."""

from __future__ import annotations

from dataclasses import dataclass, field

from procflow._messages.message import Message
from procflow._messages.message_list import MessageList
from procflow._messages.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY, RequestContext
from procflow.errors import ConfigurationError
from procflow.memory._storage import WorkingMemoryUpdate

__all__ = ["TURN_KEY", "PendingTurn", "pending_turn", "resource_of", "thread_of", "turn_messages"]

TURN_KEY = "procflow__memory_turn"
"""Request-context key of the :class:`PendingTurn` the memory processors fill and ``MessageHistory`` saves."""

_SAVED_SOURCES = ("input", "response")


@dataclass(slots=True)
class PendingTurn:
    """What other memory processors add to the turn ``MessageHistory`` saves (in the same transaction)."""

    vectors: dict[str, list[float]] = field(default_factory=dict)
    working_memory: WorkingMemoryUpdate | None = None


def pending_turn(context: RequestContext) -> PendingTurn:
    """This request's pending turn, created on first use."""
    turn = context.get(TURN_KEY)
    if not isinstance(turn, PendingTurn):
        turn = PendingTurn()
        context.set(TURN_KEY, turn)
    return turn


def thread_of(context: RequestContext, processor_id: str) -> str:
    """The request's thread id, or a clear error saying how to pass one."""
    thread = context.get(THREAD_ID_KEY)
    if not isinstance(thread, str) or not thread:
        raise ConfigurationError(
            f"{processor_id}: memory needs a thread id; call generate()/stream() with "
            "memory={'thread': 'THREAD_ID', 'resource': 'USER_ID'}"
        )
    return thread


def resource_of(context: RequestContext) -> str | None:
    """The request's resource id, when set."""
    resource = context.get(RESOURCE_ID_KEY)
    return resource if isinstance(resource, str) and resource else None


def turn_messages(message_list: MessageList) -> list[Message]:
    """The messages a turn saves: the processed input and response messages, signals included.

    Recalled memory and context added by processors are not saved again, and transient signals never
    are (they live outside the stored messages).
    """
    return [
        m
        for m in message_list.all
        if message_list.source_of(m.id) in _SAVED_SOURCES
        and not (m.signal is not None and m.signal.transient)
    ]

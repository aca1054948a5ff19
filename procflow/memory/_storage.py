"""The storage protocol memory runs on, and the records it reads and writes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from procflow._messages.message import Message

__all__ = [
    "MemoryStorage",
    "Scope",
    "StoredThread",
    "Turn",
    "VectorHit",
    "WorkingMemoryUpdate",
]

Scope: TypeAlias = Literal["thread", "resource"]
"""Whose data a memory feature reads and writes: one conversation thread, or every thread of a resource
(a user or tenant)."""


@dataclass(frozen=True, slots=True)
class StoredThread:
    """A conversation thread as stored.

    Attributes:
        id: The thread id.
        resource_id: The resource (user or tenant) the thread belongs to, when one was given.
        created_at: When its first turn was saved.
        updated_at: When its last turn was saved.
        message_count: How many messages it holds (signals included).
    """

    id: str
    resource_id: str | None
    created_at: datetime
    updated_at: datetime
    message_count: int


@dataclass(frozen=True, slots=True)
class WorkingMemoryUpdate:
    """New working-memory text for a thread or a resource, saved with the turn that produced it."""

    scope: Scope
    text: str


@dataclass(slots=True)
class Turn:
    """Everything one agent call saves, written in one transaction.

    Attributes:
        thread_id: The thread the messages belong to.
        resource_id: The resource the thread belongs to, when known.
        messages: The processed input and response messages, in conversation order.
        vectors: Embeddings of some of those messages, by message id (for semantic recall).
        working_memory: New working memory, when the model updated it during the call.
    """

    thread_id: str
    resource_id: str | None
    messages: list[Message]
    vectors: dict[str, list[float]] = field(default_factory=dict)
    working_memory: WorkingMemoryUpdate | None = None


@dataclass(frozen=True, slots=True)
class VectorHit:
    """One message found by a vector search: its id, thread, and cosine similarity to the query."""

    message_id: str
    thread_id: str
    similarity: float


@runtime_checkable
class MemoryStorage(Protocol):
    """Where memory keeps threads, messages, working memory and message vectors.

    Implementations: :class:`~procflow.memory.SQLiteStorage` (embedded default) and
    :class:`~procflow.memory.PostgresStorage` (many app instances). A turn is saved in one transaction,
    and concurrent turns on one thread never lose or duplicate a message.
    """

    backend: str
    """A short name for errors and logs (``"sqlite"``, ``"postgres"``)."""

    async def save_turn(self, turn: Turn) -> None:
        """Save a turn whole, or raise :class:`~procflow.errors.MemoryStorageError` having saved none."""
        ...

    async def get_messages(
        self,
        thread_id: str,
        *,
        last: int | None = None,
        include_signals: bool = False,
        resource_id: str | None = None,
    ) -> list[Message]:
        """The thread's messages, oldest first; only the ``last`` ones when given; signals when asked.

        With ``resource_id``, only messages saved under that resource (or under none) are returned, so
        a user who names another user's thread sees nothing of it.
        """
        ...

    async def get_context(
        self,
        thread_id: str,
        message_id: str,
        *,
        before: int,
        after: int,
        include_signals: bool = False,
        resource_id: str | None = None,
    ) -> list[Message]:
        """A message with up to ``before`` messages before it and ``after`` after it, oldest first."""
        ...

    async def get_thread(self, thread_id: str) -> StoredThread | None:
        """The thread, or ``None`` when nothing was saved on it."""
        ...

    async def list_threads(self, resource_id: str) -> list[StoredThread]:
        """The resource's threads, most recently updated first."""
        ...

    async def delete_thread(self, thread_id: str) -> None:
        """Forget a thread: its messages, vectors and thread-scoped working memory."""
        ...

    async def get_working_memory(self, scope: Scope, key: str) -> str | None:
        """The working memory of a thread (``key`` = thread id) or a resource, when one was saved."""
        ...

    async def search_vectors(
        self,
        vector: Sequence[float],
        *,
        top_k: int,
        thread_id: str | None = None,
        resource_id: str | None = None,
    ) -> list[VectorHit]:
        """The ``top_k`` stored messages most similar to ``vector``, within a thread or a resource."""
        ...

    async def aclose(self) -> None:
        """Release connections (the storage may be opened again by using it)."""
        ...

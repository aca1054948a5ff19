"""What the SQL storages share: the statements of their reads, and turning rows into records and back.

``SQLiteStorage`` and ``PostgresStorage`` keep the same tables and columns; only the parameter marker
(``?`` or ``%s``), a type cast PostgreSQL needs, and how each driver runs a statement differ. So the
read statements are built here from a :class:`Dialect`, and every conversion — a turn into message
rows, rows back into messages, threads and vector hits — is written once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from procflow._messages.message import Message
from procflow.memory._storage import Scope, StoredThread, Turn, VectorHit

__all__ = [
    "POSTGRES",
    "SQLITE",
    "Dialect",
    "context_messages",
    "load_message",
    "message_row",
    "newest_first",
    "search_scope",
    "threads_of",
    "vector_hits",
    "visible_params",
    "working_memory_texts",
]


@dataclass(frozen=True, slots=True)
class Dialect:
    """How one driver spells the parts of a statement that differ.

    Attributes:
        mark: The parameter marker.
        text_cast: Appended to a parameter compared with ``IS NULL`` (PostgreSQL cannot infer its type).
        distance: The cosine distance of the stored vector to the query vector (a parameter).
        dims: The stored vector's number of dimensions.
    """

    mark: str
    text_cast: str
    distance: str
    dims: str

    @property
    def visible(self) -> str:
        """Signals only when asked; with a resource id, only its messages (and those saved without one)."""
        p = self.mark
        resource = f"{p}{self.text_cast} IS NULL OR resource_id IS NULL OR resource_id = {p}"
        return f"({p} OR role <> 'signal') AND ({resource})"

    @property
    def messages(self) -> str:
        """A thread's visible messages, newest first, at most a number of them."""
        p = self.mark
        return (
            f"SELECT data FROM memory_messages WHERE thread_id = {p} AND {self.visible} "
            f"ORDER BY seq DESC LIMIT {p}"
        )

    @property
    def anchor(self) -> str:
        """The position and data of one visible message of a thread."""
        p = self.mark
        return f"SELECT seq, data FROM memory_messages WHERE id = {p} AND thread_id = {p} AND {self.visible}"

    def around(self, direction: str) -> str:
        """Visible messages before (``"<"``, newest first) or after (``">"``, oldest first) a position."""
        p = self.mark
        order = "DESC" if direction == "<" else "ASC"
        return (
            f"SELECT data FROM memory_messages WHERE thread_id = {p} AND {self.visible} "
            f"AND seq {direction} {p} ORDER BY seq {order} LIMIT {p}"
        )

    def threads(self, column: str) -> str:
        """Threads whose ``column`` (``id`` or ``resource_id``) matches, most recently updated first."""
        return (
            "SELECT t.id, t.resource_id, t.created_at, t.updated_at, "
            "(SELECT count(*) FROM memory_messages m WHERE m.thread_id = t.id) "
            f"FROM memory_threads t WHERE t.{column} = {self.mark} ORDER BY t.updated_at DESC"
        )

    def working_memory(self, scope: Scope) -> str:
        """The working memory of a thread or a resource."""
        table = "memory_threads" if scope == "thread" else "memory_resources"
        return f"SELECT working_memory FROM {table} WHERE id = {self.mark}"

    def search(self, column: str) -> str:
        """The messages nearest the query vector with as many dimensions, within a thread or resource."""
        p = self.mark
        return (
            f"SELECT message_id, thread_id, {self.distance} AS distance FROM memory_vectors "
            f"WHERE {self.dims} = {p} AND {column} = {p} ORDER BY distance LIMIT {p}"
        )


SQLITE = Dialect("?", "", distance="vec_distance_cosine(vector, ?)", dims="dims")
POSTGRES = Dialect("%s", "::text", distance="embedding <=> %s::vector", dims="vector_dims(embedding)")


def search_scope(thread_id: str | None, resource_id: str | None) -> tuple[str, str | None]:
    """The column a vector search is confined by, and its value: the thread when given, else the resource."""
    return ("thread_id", thread_id) if thread_id is not None else ("resource_id", resource_id)


def visible_params(include_signals: bool, resource_id: str | None) -> tuple[Any, ...]:
    """The parameters of :attr:`Dialect.visible`, in order."""
    return (include_signals, resource_id, resource_id)


def message_row(message: Message, turn: Turn) -> dict[str, Any]:
    """The columns every backend stores for one message of a turn."""
    stored = message.model_copy(update={"thread_id": turn.thread_id, "resource_id": turn.resource_id})
    return {
        "id": message.id,
        "thread_id": turn.thread_id,
        "resource_id": turn.resource_id,
        "role": message.role,
        "created_at": message.created_at,
        "data": stored.model_dump_json(exclude_none=True),
    }


def working_memory_texts(turn: Turn) -> tuple[str | None, str | None]:
    """The turn's new working memory as ``(thread text, resource text)``; ``None`` where it has none."""
    update = turn.working_memory
    if update is None:
        return None, None
    return (update.text, None) if update.scope == "thread" else (None, update.text)


def load_message(data: str | bytes) -> Message:
    """A stored message back from its JSON column."""
    return Message.model_validate_json(data)


def newest_first(rows: Iterable[Sequence[Any]]) -> list[Message]:
    """Messages oldest first from ``(data,)`` rows read newest first."""
    return [load_message(row[0]) for row in reversed(list(rows))]


def context_messages(
    older: Iterable[Sequence[Any]], data: str | bytes, newer: Iterable[Sequence[Any]]
) -> list[Message]:
    """A message with its neighbours, oldest first (``older`` read newest first, ``newer`` oldest first)."""
    return [*newest_first(older), load_message(data), *(load_message(row[0]) for row in newer)]


def _timestamp(value: datetime | str) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)


def threads_of(rows: Iterable[Sequence[Any]]) -> list[StoredThread]:
    """Threads from ``(id, resource_id, created_at, updated_at, message_count)`` rows."""
    return [StoredThread(r[0], r[1], _timestamp(r[2]), _timestamp(r[3]), int(r[4])) for r in rows]


def vector_hits(rows: Iterable[Sequence[Any]]) -> list[VectorHit]:
    """Hits from ``(message_id, thread_id, cosine distance)`` rows."""
    return [VectorHit(r[0], r[1], 1.0 - float(r[2])) for r in rows]

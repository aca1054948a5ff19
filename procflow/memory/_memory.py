"""``Memory``: the agent's conversation memory, as processors around yours."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from procflow._messages.request_context import RequestContext
from procflow.errors import ConfigurationError
from procflow.memory._embedder import Embedder
from procflow.memory._history import MessageHistory
from procflow.memory._semantic import SemanticRecall
from procflow.memory._storage import MemoryStorage, Scope
from procflow.memory._turn import TURN_KEY, PendingTurn, thread_of
from procflow.memory._working import DEFAULT_WORKING_MEMORY_TEMPLATE, WorkingMemory

__all__ = ["Memory", "SemanticRecallConfig", "WorkingMemoryConfig"]


@dataclass(frozen=True, slots=True)
class SemanticRecallConfig:
    """How :class:`Memory` recalls by meaning (see :class:`~procflow.memory.SemanticRecall`)."""

    embedder: Embedder
    top_k: int = 4
    message_range: int | tuple[int, int] = 1
    scope: Scope = "resource"


@dataclass(frozen=True, slots=True)
class WorkingMemoryConfig:
    """How :class:`Memory` keeps working memory (see :class:`~procflow.memory.WorkingMemory`)."""

    scope: Scope = "resource"
    template: str = DEFAULT_WORKING_MEMORY_TEMPLATE
    schema: type[BaseModel] | None = None


class Memory:
    """Conversation memory for an :class:`~procflow.Agent`: ``Agent(memory=Memory(storage=...))``.

    Each call names its thread (and, usually, its resource — the user or tenant):
    ``agent.generate(text, memory={"thread": "t-1", "resource": "user-7"})``. Memory then adds its
    processors around yours, as in the seed: input ``[memory] → [yours]`` (working memory, message
    history, semantic recall: history is loaded before your processors run), output
    ``[yours] → [memory]`` (semantic recall embeds, then message history saves) — so an output
    processor that calls ``abort()`` stops the chain before memory saves anything, and an input
    tripwire ends the call before any output processor runs. A processor of yours with a memory
    processor's id (``message-history``, ``working-memory``, ``semantic-recall``) replaces memory's
    own in that list, so you can reorder it.

    Args:
        storage: Where threads live: :class:`~procflow.memory.SQLiteStorage` or
            :class:`~procflow.memory.PostgresStorage`.
        last_messages: How many past messages of the thread to recall (``0``: none). Recall only:
            turns are saved either way.
        semantic_recall: Recall similar past messages by embeddings.
        working_memory: Keep a working memory the model updates with a tool (``True`` for defaults).
        read_only: Recall, but save nothing (and offer no working-memory tool).
    """

    def __init__(
        self,
        *,
        storage: MemoryStorage,
        last_messages: int = 10,
        semantic_recall: SemanticRecallConfig | None = None,
        working_memory: WorkingMemoryConfig | bool | None = None,
        read_only: bool = False,
    ) -> None:
        if not isinstance(storage, MemoryStorage):
            raise ConfigurationError(
                "storage must be a memory storage such as SQLiteStorage('memory.sqlite') or "
                "PostgresStorage(dsn)"
            )
        self.storage = storage
        self.read_only = read_only
        self.history = MessageHistory(storage, last_messages=last_messages, read_only=read_only)
        wm = WorkingMemoryConfig() if working_memory is True else working_memory or None
        self.working_memory = (
            None
            if wm is None
            else WorkingMemory(
                storage, scope=wm.scope, template=wm.template, schema=wm.schema, read_only=read_only
            )
        )
        sr = semantic_recall
        self.semantic_recall = (
            None
            if sr is None
            else SemanticRecall(
                storage,
                sr.embedder,
                top_k=sr.top_k,
                message_range=sr.message_range,
                scope=sr.scope,
                read_only=read_only,
            )
        )
        inputs: list[Any] = [self.working_memory, self.history, self.semantic_recall]
        self._inputs = tuple(p for p in inputs if p is not None)
        outputs: list[Any] = [] if read_only else [self.semantic_recall, self.history]
        self._outputs = tuple(p for p in outputs if p is not None)

    def __repr__(self) -> str:
        return f"Memory(storage={self.storage!r}, read_only={self.read_only})"

    def input_processors(self, request_context: RequestContext) -> Sequence[Any]:
        """Working memory, message history and semantic recall, in that order (before yours)."""
        thread_of(request_context, "memory")
        request_context.set(TURN_KEY, PendingTurn())
        return self._inputs

    def output_processors(self, request_context: RequestContext) -> Sequence[Any]:
        """Semantic recall (embeds the turn), then message history (saves it) — after yours."""
        return self._outputs

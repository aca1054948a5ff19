"""Conversation memory: message history, working memory and semantic recall, on SQLite or PostgreSQL.

``Agent(memory=Memory(storage=SQLiteStorage("memory.sqlite")))``, then per call
``agent.generate(text, memory={"thread": "t-1", "resource": "user-7"})``. The resource id lands in the
request context under :data:`RESOURCE_ID_KEY` (the thread id under :data:`THREAD_ID_KEY`), where other
processors — the response cache's default scope among them — read it.
"""

from procflow._messages.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY
from procflow._public import publish as _publish
from procflow.memory._embedder import Embedder, OpenAIEmbedder
from procflow.memory._history import MESSAGE_HISTORY_ID, MessageHistory
from procflow.memory._memory import Memory, SemanticRecallConfig, WorkingMemoryConfig
from procflow.memory._postgres import PostgresStorage
from procflow.memory._semantic import SEMANTIC_RECALL_ID, SEMANTIC_RECALL_TAG, SemanticRecall
from procflow.memory._sqlite import SQLiteStorage
from procflow.memory._storage import MemoryStorage, Scope, StoredThread, Turn, VectorHit, WorkingMemoryUpdate
from procflow.memory._turn import TURN_KEY
from procflow.memory._working import (
    DEFAULT_WORKING_MEMORY_TEMPLATE,
    UPDATE_WORKING_MEMORY_TOOL,
    WORKING_MEMORY_ID,
    WORKING_MEMORY_TAG,
    WorkingMemory,
)

MEMORY_PROCESSOR_IDS = (WORKING_MEMORY_ID, MESSAGE_HISTORY_ID, SEMANTIC_RECALL_ID)
"""The ids of memory's processors, in their input order."""

__all__ = [
    "DEFAULT_WORKING_MEMORY_TEMPLATE",
    "MEMORY_PROCESSOR_IDS",
    "MESSAGE_HISTORY_ID",
    "RESOURCE_ID_KEY",
    "SEMANTIC_RECALL_ID",
    "SEMANTIC_RECALL_TAG",
    "THREAD_ID_KEY",
    "TURN_KEY",
    "UPDATE_WORKING_MEMORY_TOOL",
    "WORKING_MEMORY_ID",
    "WORKING_MEMORY_TAG",
    "Embedder",
    "Memory",
    "MemoryStorage",
    "MessageHistory",
    "OpenAIEmbedder",
    "PostgresStorage",
    "SQLiteStorage",
    "Scope",
    "SemanticRecall",
    "SemanticRecallConfig",
    "StoredThread",
    "Turn",
    "VectorHit",
    "WorkingMemory",
    "WorkingMemoryConfig",
    "WorkingMemoryUpdate",
]

_publish(__name__, globals(), __all__)

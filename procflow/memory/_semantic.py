"""``SemanticRecall``: past messages similar to the new input, each with the messages around it."""

from __future__ import annotations

from datetime import datetime

from procflow._messages.message import Message
from procflow.errors import ConfigurationError
from procflow.memory._embedder import Embedder
from procflow.memory._storage import MemoryStorage, Scope, VectorHit
from procflow.memory._turn import pending_turn, resource_of, thread_of, turn_messages
from procflow.processors._args import ProcessInputStepArgs, ProcessOutputResultArgs

__all__ = ["SEMANTIC_RECALL_ID", "SEMANTIC_RECALL_TAG", "SemanticRecall"]

SEMANTIC_RECALL_ID = "semantic-recall"
"""The id of :class:`SemanticRecall` (a processor of yours with this id replaces memory's own)."""

SEMANTIC_RECALL_TAG = "semantic-recall"
"""Tag of the system message holding messages recalled from the resource's other threads."""

_EMBEDDED_ROLES = ("user", "assistant")


def _range(message_range: int | tuple[int, int]) -> tuple[int, int]:
    before, after = (message_range, message_range) if isinstance(message_range, int) else message_range
    if before < 0 or after < 0:
        raise ConfigurationError(f"message_range must be non-negative, got {message_range!r}")
    return before, after


class SemanticRecall:
    """Recalls the past messages most similar to the new input (id ``semantic-recall``).

    Input (``process_input_step``, once, before the first model call): embeds the last new user message
    *as your input processors left it* (so a redaction also keeps the original from the embeddings
    server), finds the ``top_k`` most similar stored messages (in the thread, or in every thread of the
    resource), and adds each with ``message_range`` messages around it. Recalled messages of the
    current thread join the ``memory`` messages, oldest first, ahead of the recent history; those of
    other threads go into a system message tagged :data:`SEMANTIC_RECALL_TAG`. Signals are never
    recalled.
    Output (``process_output_result``): embeds the turn's processed user and assistant messages, so the
    vectors describe what is stored (never a redacted original); ``MessageHistory`` saves them with the
    turn, so it must run after this processor.

    Args:
        storage: Where messages and vectors live (the same storage as the history's).
        embedder: Turns texts into vectors, e.g. :class:`~procflow.memory.OpenAIEmbedder`.
        top_k: How many similar messages to recall.
        message_range: Messages around each hit: one number for both sides, or ``(before, after)``.
        scope: ``"resource"`` searches every thread of the resource (falls back to the thread when the
            call has no resource id); ``"thread"`` only the current thread.
        read_only: Recall, but never embed the turn for saving.
        id: The processor id (default ``semantic-recall``).
    """

    def __init__(
        self,
        storage: MemoryStorage,
        embedder: Embedder,
        *,
        top_k: int = 4,
        message_range: int | tuple[int, int] = 1,
        scope: Scope = "resource",
        read_only: bool = False,
        id: str = SEMANTIC_RECALL_ID,
    ) -> None:
        if not isinstance(top_k, int) or top_k < 1:
            raise ConfigurationError(f"top_k must be a positive integer, got {top_k!r}")
        if scope not in ("thread", "resource"):
            raise ConfigurationError(f"scope must be 'thread' or 'resource', got {scope!r}")
        self.id = id
        self.storage = storage
        self.embedder = embedder
        self.top_k = top_k
        self.before, self.after = _range(message_range)
        self.scope: Scope = scope
        self.read_only = read_only

    def __repr__(self) -> str:
        return f"SemanticRecall(top_k={self.top_k}, scope={self.scope!r})"

    async def process_input_step(self, args: ProcessInputStepArgs) -> None:
        """Before the first model call, add the similar past messages with their context windows."""
        if args.state.get("recalled"):
            return
        args.state["recalled"] = True
        context = args.request_context
        thread = thread_of(context, self.id)
        users = [m.text for m in args.message_list.input if m.role == "user" and m.text.strip()]
        if not users:
            return
        (vector,) = await self.embedder.embed([users[-1]])
        resource = resource_of(context)
        hits = await self._search(vector, thread, resource)
        ml = args.message_list
        seen = {m.id for m in ml.all}
        same: list[Message] = []
        others: dict[str, list[Message]] = {}
        for hit in hits:
            window = await self.storage.get_context(
                hit.thread_id, hit.message_id, before=self.before, after=self.after, resource_id=resource
            )
            for message in window:
                if message.id not in seen:
                    seen.add(message.id)
                    (same if hit.thread_id == thread else others.setdefault(hit.thread_id, [])).append(
                        message
                    )
        if same:
            # Anything recalled here is older than the recent history already loaded (that is excluded).
            history = ml.memory
            ml.remove_by_ids([m.id for m in history])
            same.sort(key=_created)
            ml.add(same, source="memory")
            ml.add(history, source="memory")
        if others:
            ml.add_system(_other_threads(others), tag=SEMANTIC_RECALL_TAG)

    async def _search(self, vector: list[float], thread: str, resource: str | None) -> list[VectorHit]:
        if self.scope == "resource" and resource is not None:
            return await self.storage.search_vectors(vector, top_k=self.top_k, resource_id=resource)
        return await self.storage.search_vectors(vector, top_k=self.top_k, thread_id=thread)

    async def process_output_result(self, args: ProcessOutputResultArgs) -> None:
        """Embed the turn's processed messages; ``MessageHistory`` saves the vectors with the turn."""
        if self.read_only:
            return
        messages = [
            m for m in turn_messages(args.message_list) if m.role in _EMBEDDED_ROLES and m.text.strip()
        ]
        if not messages:
            return
        vectors = await self.embedder.embed([m.text for m in messages])
        pending_turn(args.request_context).vectors.update(
            {m.id: v for m, v in zip(messages, vectors, strict=True)}
        )


def _created(message: Message) -> datetime:
    return message.created_at


def _other_threads(others: dict[str, list[Message]]) -> str:
    lines = ["Messages remembered from other conversations with this user:"]
    for thread, messages in others.items():
        lines.append(f'<conversation thread="{thread}">')
        lines.extend(f"{m.role}: {m.text}" for m in sorted(messages, key=_created))
        lines.append("</conversation>")
    return "\n".join(lines)

"""``MessageHistory``: loads the thread's last messages before your processors, saves the turn after them."""

from __future__ import annotations

from procflow.errors import ConfigurationError
from procflow.memory._storage import MemoryStorage, Turn
from procflow.memory._turn import pending_turn, resource_of, thread_of, turn_messages
from procflow.processors._args import ProcessInputArgs, ProcessOutputResultArgs

__all__ = ["MESSAGE_HISTORY_ID", "MessageHistory"]

MESSAGE_HISTORY_ID = "message-history"
"""The id of :class:`MessageHistory` (a processor of yours with this id replaces memory's own)."""


class MessageHistory:
    """Recalls the last messages of the thread and saves each turn (id ``message-history``).

    Input (``process_input``): adds the thread's last ``last_messages`` messages as ``memory`` messages,
    before the new input; persisted signals stay hidden unless ``include_signals``; with a resource id,
    only messages saved under that resource are recalled.
    Output (``process_output_result``): saves the turn — the input and response messages as the
    processors left them (a redaction persists; the original text is never stored), plus the vectors
    and working memory other memory processors prepared — in one transaction. It runs after your
    output processors, so a tripwire there means nothing of the turn is saved.

    Args:
        storage: Where the thread lives.
        last_messages: How many past messages to recall (``0`` recalls none; saving is unaffected).
        include_signals: Also recall signals that processors persisted.
        read_only: Recall, but never save.
        id: The processor id (default ``message-history``).
    """

    def __init__(
        self,
        storage: MemoryStorage,
        *,
        last_messages: int = 10,
        include_signals: bool = False,
        read_only: bool = False,
        id: str = MESSAGE_HISTORY_ID,
    ) -> None:
        if not isinstance(last_messages, int) or isinstance(last_messages, bool) or last_messages < 0:
            raise ConfigurationError(f"last_messages must be a non-negative integer, got {last_messages!r}")
        self.id = id
        self.storage = storage
        self.last_messages = last_messages
        self.include_signals = include_signals
        self.read_only = read_only

    def __repr__(self) -> str:
        return f"MessageHistory(last_messages={self.last_messages}, read_only={self.read_only})"

    async def process_input(self, args: ProcessInputArgs) -> None:
        """Add the thread's last messages as ``memory`` messages (ahead of the new input)."""
        thread = thread_of(args.request_context, self.id)
        if not self.last_messages:
            return
        history = await self.storage.get_messages(
            thread,
            last=self.last_messages,
            include_signals=self.include_signals,
            resource_id=resource_of(args.request_context),
        )
        ml = args.message_list
        args.message_list.add([m for m in history if m.id not in ml], source="memory")

    async def process_output_result(self, args: ProcessOutputResultArgs) -> None:
        """Save the turn: processed input and response messages, vectors and working memory, together."""
        if self.read_only:
            return
        context = args.request_context
        pending = pending_turn(context)
        turn = Turn(
            thread_id=thread_of(context, self.id),
            resource_id=resource_of(context),
            messages=turn_messages(args.message_list),
            vectors=pending.vectors,
            working_memory=pending.working_memory,
        )
        await self.storage.save_turn(turn)

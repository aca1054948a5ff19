"""The storage protocol on both backends: what a message keeps, threads and their times, vectors."""

from __future__ import annotations

from memory_support import Backend, backend

from procflow import Message, MessageContent, ReasoningPart, TextPart, ToolInvocationPart
from procflow._messages import SignalInfo
from procflow.memory import Turn, WorkingMemoryUpdate

__all__ = ["backend"]


def _assistant_with_everything() -> Message:
    parts = [
        ReasoningPart(text="think"),
        TextPart(text="Checking."),
        ToolInvocationPart(tool_call_id="c1", tool_name="lookup", args={"q": 1}, state="result", result=[1]),
    ]
    content = MessageContent(parts=parts, metadata={"score": 0.5, "tags": ["a"]})
    return Message(role="assistant", content=content)


async def test_a_message_keeps_its_parts_metadata_and_signal_info(backend: Backend) -> None:
    """Parts, metadata, signal settings and ids come back exactly; the thread and resource are set."""
    user = Message.user("hi")
    assistant = _assistant_with_everything()
    signal = Message(
        role="signal",
        content=MessageContent(parts=[TextPart(text="note")]),
        signal=SignalInfo(type="hint", attributes={"by": "guard"}),
    )
    await backend.storage.save_turn(Turn("t-1", "user-1", [user, signal, assistant]))
    back = await backend.storage.get_messages("t-1", include_signals=True)
    assert [m.id for m in back] == [user.id, signal.id, assistant.id]
    assert back[2].content == assistant.content
    assert back[1].signal == signal.signal
    assert back[0].created_at == user.created_at
    assert {(m.thread_id, m.resource_id) for m in back} == {("t-1", "user-1")}


async def test_threads_have_times_counts_and_are_listed_newest_first(backend: Backend) -> None:
    """updated_at moves with each turn; list_threads orders a resource's threads by it."""
    storage = backend.storage
    await storage.save_turn(Turn("old", "user-1", [Message.user("a")]))
    await storage.save_turn(Turn("new", "user-1", [Message.user("b")]))
    first = await storage.get_thread("old")
    await storage.save_turn(Turn("old", "user-1", [Message.user("c"), Message.assistant("d")]))
    later = await storage.get_thread("old")
    assert first is not None and later is not None
    assert later.created_at == first.created_at and later.updated_at > first.updated_at
    assert later.message_count == 3
    assert [t.id for t in await storage.list_threads("user-1")] == ["old", "new"]


async def test_working_memory_is_saved_with_the_turn_per_scope(backend: Backend) -> None:
    """A resource update reaches every thread of the resource; a thread update only its thread."""
    storage = backend.storage
    await storage.save_turn(Turn("t-1", "user-1", [], working_memory=WorkingMemoryUpdate("resource", "R")))
    await storage.save_turn(Turn("t-2", "user-1", [], working_memory=WorkingMemoryUpdate("thread", "T")))
    assert await storage.get_working_memory("resource", "user-1") == "R"
    assert await storage.get_working_memory("thread", "t-2") == "T"
    assert await storage.get_working_memory("thread", "t-1") is None


async def test_vector_search_ranks_by_cosine_within_the_scope(backend: Backend) -> None:
    """The nearest vectors come first, and a search never leaves its thread or resource."""
    a, b, c = Message.user("a"), Message.user("b"), Message.user("c")
    vectors = {a.id: [1.0, 0.0, 0.0], b.id: [0.8, 0.6, 0.0]}
    await backend.storage.save_turn(Turn("t-1", "user-1", [a, b], vectors=vectors))
    await backend.storage.save_turn(Turn("t-2", "user-2", [c], vectors={c.id: [1.0, 0.0, 0.0]}))
    hits = await backend.storage.search_vectors([1.0, 0.0, 0.0], top_k=5, resource_id="user-1")
    assert [h.message_id for h in hits] == [a.id, b.id]
    assert abs(hits[0].similarity - 1.0) < 1e-6 and abs(hits[1].similarity - 0.8) < 1e-6
    only_t2 = await backend.storage.search_vectors([0.0, 1.0, 0.0], top_k=5, thread_id="t-2")
    assert [h.message_id for h in only_t2] == [c.id]

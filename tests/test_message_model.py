"""The message model: parts, the flattened fallback, metadata, chunks, tripwires, request context."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from procflow import (
    Chunk,
    DataPart,
    Message,
    MessageContent,
    RequestContext,
    TextPart,
    ToolInvocationPart,
    TripWire,
)
from procflow._messages import render_signal
from procflow._messages._building import text_message
from procflow._messages.message import Role


def test_parts_are_discriminated_by_type() -> None:
    """Dict parts validate into their typed classes; data-* types become DataPart."""
    msg = Message.model_validate(
        {
            "role": "assistant",
            "content": {
                "parts": [
                    {"type": "text", "text": "hi"},
                    {"type": "tool-invocation", "tool_call_id": "c1", "tool_name": "add", "args": {"a": 1}},
                    {"type": "data-status", "data": {"ok": True}},
                ]
            },
        }
    )
    kinds = [type(p) for p in msg.content.parts]
    assert kinds == [TextPart, ToolInvocationPart, DataPart]
    assert msg.content.parts[2].type == "data-status"


def test_text_prefers_parts_and_falls_back_to_flattened_content() -> None:
    """`Message.text` joins text parts, else uses the seed's `content.content` fallback."""
    with_parts = Message(role="user", content=MessageContent(parts=[TextPart(text="a"), TextPart(text="b")]))
    fallback_only = Message(role="user", content=MessageContent(content="legacy"))
    assert with_parts.text == "ab"
    assert fallback_only.text == "legacy"


def test_with_text_keeps_non_text_parts_and_updates_fallback() -> None:
    """`with_text` replaces text in place, keeps other parts and refreshes the fallback string."""
    call = ToolInvocationPart(tool_call_id="c", tool_name="t")
    msg = Message(role="assistant", content=MessageContent(parts=[TextPart(text="old"), call], content="old"))
    new = msg.with_text("new")
    assert [p.type for p in new.content.parts] == ["text", "tool-invocation"]
    assert new.text == "new" and new.content.content == "new"
    assert msg.text == "old"


def test_message_round_trips_through_json() -> None:
    """A message with metadata serialises and validates back unchanged."""
    msg = Message.user("hello")
    msg.metadata["k"] = [1, 2]
    again = Message.model_validate_json(msg.model_dump_json())
    assert again == msg and again.metadata == {"k": [1, 2]}


def test_chunk_helpers_and_data_type_check() -> None:
    """Chunks expose text, data-ness and JSON form; custom types must start with data-."""
    delta = Chunk.text_delta("hi")
    assert delta.text == "hi" and not delta.is_data
    data = Chunk.data("data-x", {"n": 1}, transient=True)
    assert data.is_data and data.to_dict() == {
        "type": "data-x",
        "payload": {"data": {"n": 1}},
        "transient": True,
    }
    with pytest.raises(ValueError, match="must start with 'data-'"):
        Chunk.data("status", {})


def test_tripwire_carries_fields_and_info() -> None:
    """A TripWire keeps reason, retry, metadata and processor id, and reports them as info."""
    tw = TripWire("no", retry=True, metadata={"score": 0.1}, processor_id="p")
    assert tw.info().to_dict() == {
        "reason": "no",
        "retry": True,
        "metadata": {"score": 0.1},
        "processor_id": "p",
    }


def test_request_context_is_a_small_mapping() -> None:
    """RequestContext gets, sets, deletes and exposes resource/thread ids."""
    ctx = RequestContext({"a": 1})
    ctx.set("procflow__resource_id", "user-1")
    assert ctx.get("a") == 1 and ctx.get("missing", 2) == 2
    assert ctx.resource_id == "user-1" and ctx.thread_id is None
    ctx.delete("a")
    assert "a" not in ctx and len(ctx) == 1


def test_signal_rendering_escapes_and_validates_names() -> None:
    """Signals render as escaped XML; bad tag or attribute names are rejected with advice."""
    text = render_signal('a < b & "c"', tag_name="system-reminder", attributes={"step": 5, "why": 'x"y'})
    assert text == '<system-reminder step="5" why=\'x"y\'>a &lt; b &amp; "c"</system-reminder>'
    with pytest.raises(ValueError, match="invalid signal tag name"):
        render_signal("x", tag_name="bad tag", attributes={})
    with pytest.raises(ValueError, match="invalid signal attribute name"):
        render_signal("x", tag_name="ok", attributes={"1st": "v"})


@given(st.text(max_size=20), st.sampled_from(["user", "assistant", "system", "tool", "signal"]), st.text())
def test_text_messages_built_without_validation_equal_validated_ones(
    message_id: str, role: Role, text: str
) -> None:
    """The reader's unvalidated text message is the validated one: same values, field order, fields
    set and extras, and the same dump."""
    built = text_message(message_id, role, text)
    checked = Message.model_validate(
        {
            "id": message_id,
            "role": role,
            "content": {"parts": [{"type": "text", "text": text}], "content": None},
        }
    )
    assert built.model_fields_set == checked.model_fields_set == {"id", "role", "content"}
    checked.created_at = built.created_at
    assert built == checked
    assert built.model_dump() == checked.model_dump()
    assert list(built.__dict__) == list(checked.__dict__)
    for mine, theirs in [(built.content, checked.content)]:
        assert list(mine.__dict__) == list(theirs.__dict__)
        assert mine.model_fields_set == theirs.model_fields_set
        assert mine.model_extra == theirs.model_extra
    part, other = built.content.parts[0], checked.content.parts[0]
    assert (part, part.model_fields_set, part.model_extra) == (
        other,
        other.model_fields_set,
        other.model_extra,
    )

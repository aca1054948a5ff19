"""MessageList: sources, system messages, add/remove/replace, prompt and UI conversions, signals."""

from __future__ import annotations

from procflow import Message, MessageContent, MessageList, TextPart, ToolInvocationPart
from procflow._messages import SignalInfo, StepStartPart
from procflow.models import PromptText, PromptToolCall, PromptToolResult


def _tool_turn() -> Message:
    return Message(
        role="assistant",
        content=MessageContent(
            parts=[
                TextPart(text="Let me check."),
                ToolInvocationPart(
                    tool_call_id="c1",
                    tool_name="weather",
                    args={"city": "Oslo"},
                    state="result",
                    result={"temp": 3},
                ),
                StepStartPart(),
                TextPart(text="It is 3 degrees."),
            ]
        ),
    )


def test_sources_and_views() -> None:
    """Messages keep their source; memory is placed before the new input; views filter by source."""
    ml = MessageList(["new question"])
    ml.add(Message.user("old question"), source="memory")
    ml.add(Message.assistant("answer"), source="response")
    assert [m.text for m in ml.all] == ["old question", "new question", "answer"]
    assert [m.text for m in ml.input] == ["new question"]
    assert [m.text for m in ml.response] == ["answer"]
    assert [m.text for m in ml.memory] == ["old question"]


def test_add_existing_id_replaces_in_place() -> None:
    """Adding a message whose id exists replaces it at its position and keeps its source."""
    ml = MessageList(["a", "b"])
    first = ml.all[0]
    ml.add(first.with_text("A"), source="response")
    assert [m.text for m in ml.all] == ["A", "b"]
    assert ml.source_of(first.id) == "input"


def test_remove_by_ids_and_replace() -> None:
    """remove_by_ids returns what it removed; replace swaps a stored message by id."""
    ml = MessageList(["a", "b", "c"])
    a, b, _ = ml.all
    removed = ml.remove_by_ids([b.id, "unknown"])
    assert [m.text for m in removed] == ["b"]
    assert ml.replace(a.with_text("z")) is True
    assert ml.replace(Message.user("not stored")) is False
    assert [m.text for m in ml.all] == ["z", "c"]


def test_system_messages_tagged_and_untagged() -> None:
    """Untagged system messages can be replaced while tagged ones stay."""
    ml = MessageList([Message.system("instructions"), "hi"])
    ml.add_system("memory summary", tag="memory")
    assert [m.text for m in ml.system_messages] == ["instructions", "memory summary"]
    ml.set_system_messages(["new instructions"])
    assert [m.text for m in ml.system_messages] == ["new instructions", "memory summary"]
    assert [m.text for m in ml.tagged_system_messages("memory")] == ["memory summary"]


def test_prompt_pairs_tool_calls_with_results() -> None:
    """An assistant message with a tool call and later text becomes assistant → tool → assistant."""
    ml = MessageList([Message.system("sys"), "weather?"])
    ml.add(_tool_turn(), source="response")
    prompt = ml.to_prompt()
    assert [m.role for m in prompt] == ["system", "user", "assistant", "tool", "assistant"]
    assert isinstance(prompt[2].content[1], PromptToolCall)
    result = prompt[3].content[0]
    assert (
        isinstance(result, PromptToolResult) and result.tool_call_id == "c1" and result.result == {"temp": 3}
    )
    assert prompt[4].text == "It is 3 degrees."


def test_prompt_leaves_out_unanswered_tool_calls() -> None:
    """A tool call that never got a result is not sent (providers reject unanswered calls)."""
    msg = Message(
        role="assistant",
        content=MessageContent(
            parts=[TextPart(text="hm"), ToolInvocationPart(tool_call_id="x", tool_name="t")]
        ),
    )
    prompt = MessageList([msg], source="response").to_prompt()
    assert len(prompt) == 1 and all(not isinstance(p, PromptToolCall) for p in prompt[0].content)


def test_a_call_answered_by_a_later_tool_message_is_sent_before_it() -> None:
    """A replayed OpenAI-style conversation keeps the call in the assistant message and the result in
    a ``tool`` message: the call is sent, then its result (providers reject a result with no call)."""
    call = ToolInvocationPart(tool_call_id="c1", tool_name="lookup", args={"id": "A-1001"})
    result = ToolInvocationPart(tool_call_id="c1", tool_name="lookup", state="result", result="shipped")
    unanswered = ToolInvocationPart(tool_call_id="c2", tool_name="lookup")
    ml = MessageList(
        [
            "where is A-1001?",
            Message(role="assistant", content=MessageContent(parts=[call, unanswered])),
            Message(role="tool", content=MessageContent(parts=[result])),
        ]
    )
    prompt = ml.to_prompt()
    assert [m.role for m in prompt] == ["user", "assistant", "tool"]
    assert [(type(p), p.tool_call_id) for p in prompt[1].content] == [(PromptToolCall, "c1")]  # type: ignore[union-attr]
    assert isinstance(prompt[2].content[0], PromptToolResult) and prompt[2].content[0].result == "shipped"


def test_prompt_uses_flattened_fallback_text() -> None:
    """A user message with only the flattened fallback still reaches the prompt."""
    msg = Message(role="user", content=MessageContent(content="legacy text"))
    prompt = MessageList([msg]).to_prompt()
    assert prompt[0].content == [PromptText(text="legacy text")]


def test_signals_render_in_prompt_and_hide_in_ui() -> None:
    """Persisted signals become user prompt messages and are hidden from UI messages unless asked."""
    ml = MessageList(["hi"])
    ml.add_signal("be brief", signal=SignalInfo(attributes={"reason": "x"}))
    assert ml.to_prompt()[-1].text == '<system-reminder reason="x">be brief</system-reminder>'
    assert [m.role for m in ml.to_ui_messages()] == ["user"]
    assert [m.role for m in ml.to_ui_messages(include_signals=True)] == ["user", "signal"]


def test_transient_signals_replace_by_key_and_come_last() -> None:
    """A re-sent transient signal replaces its copy; transient signals are not stored messages."""
    ml = MessageList(["hi"])
    info = SignalInfo(transient=True)
    ml.add_signal("one", signal=info, key="k")
    ml.add_signal("two", signal=info, key="k")
    ml.add(Message.assistant("yo"), source="response")
    prompt = ml.to_prompt()
    assert prompt[-1].text == "<system-reminder>two</system-reminder>"
    assert sum("system-reminder" in m.text for m in prompt) == 1
    assert len(ml) == 2


def test_ui_messages_carry_metadata() -> None:
    """UI messages expose each message's metadata."""
    msg = Message.assistant("x")
    msg.metadata["custom"] = "value"
    ui = MessageList([msg], source="response").to_ui_messages()
    assert ui[0].metadata == {"custom": "value"} and ui[0].role == "assistant"


def test_copy_is_independent() -> None:
    """A copied list's messages can be edited without touching the original."""
    ml = MessageList(["a"])
    clone = ml.copy()
    part = clone.all[0].content.parts[0]
    assert isinstance(part, TextPart)
    part.text = "changed"
    assert ml.all[0].text == "a" and clone.all[0].text == "changed"

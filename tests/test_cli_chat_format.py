"""The common chat format ↔ procflow messages conversion used by ``procflow run``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from procflow.cli import ConversationFormatError, conversation_to_record, parse_conversation
from procflow.messages import ImagePart, TextPart, ToolInvocationPart

text = st.text(max_size=30)
ids = st.from_regex(r"call_[A-Za-z0-9]{1,8}", fullmatch=True)
args = st.dictionaries(st.sampled_from(["q", "email", "n"]), st.one_of(st.integers(), text), max_size=3)


@st.composite
def turns(draw: st.DrawFn) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for kind in draw(
        st.lists(st.sampled_from(["system", "developer", "user", "assistant", "tools"]), max_size=6)
    ):
        if kind != "tools":
            content: Any = draw(st.one_of(text, st.just([{"type": "text", "text": draw(text)}])))
            out.append({"role": kind, "content": content})
            continue
        call_ids = draw(st.lists(ids, min_size=1, max_size=3, unique=True))
        calls = [
            {"id": c, "type": "function", "function": {"name": "lookup", "arguments": json.dumps(draw(args))}}
            for c in call_ids
        ]
        out.append({"role": "assistant", "content": None, "tool_calls": calls})
        out.extend({"role": "tool", "tool_call_id": c, "content": draw(text)} for c in call_ids)
    return out


@given(turns(), st.dictionaries(st.sampled_from(["id", "meta"]), text, max_size=2))
def test_any_chat_record_round_trips_unchanged(
    messages: list[dict[str, Any]], fields: dict[str, Any]
) -> None:
    """Reading then writing a conversation gives back exactly the same record."""
    record = {**fields, "messages": messages}
    assert conversation_to_record(parse_conversation(record)) == record


def test_turns_become_messages_with_parts() -> None:
    """Text becomes text parts, tool calls and results tool-invocation parts, images image parts."""
    call = {"id": "c1", "type": "function", "function": {"name": "find", "arguments": '{"q": "x"}'}}
    conversation = parse_conversation(
        {
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}],
                },
                {"role": "assistant", "content": "Looking.", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": "found"},
            ]
        }
    )
    user, assistant, tool = conversation.messages
    assert user.content.parts == [ImagePart(url="https://x.test/a.png")]
    assert assistant.content.parts == [
        TextPart(text="Looking."),
        ToolInvocationPart(tool_call_id="c1", tool_name="find", args={"q": "x"}),
    ]
    [result] = tool.tool_invocations
    assert (tool.role, result.state, result.tool_name, result.result) == ("tool", "result", "find", "found")


def test_developer_turns_are_system_messages_written_back_as_developer() -> None:
    """The `developer` role is a system message inside, and keeps its name on the way out."""
    record = {"messages": [{"role": "developer", "content": "Be brief."}]}
    conversation = parse_conversation(record)
    assert conversation.messages[0].role == "system"
    assert conversation_to_record(conversation) == record


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        ({"messages": [{"role": "user", "content": 3}]}, "'content' must be a string, null or a list"),
        ({"messages": [{"role": "tool", "content": "x"}]}, "a tool turn needs 'tool_call_id'"),
        ({"messages": [{"role": "user", "content": "x", "tool_calls": []}]}, "only assistant turns"),
        (
            {
                "messages": [
                    {
                        "role": "assistant",
                        "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{"}}],
                    }
                ]
            },
            "'arguments' is not valid JSON",
        ),
        ({"messages": [{"role": "user", "content": [{"type": "audio"}]}]}, "unsupported content part"),
    ],
)
def test_invalid_turns_name_the_turn_and_the_problem(record: dict[str, Any], problem: str) -> None:
    """A bad turn raises ConversationFormatError naming the line, the turn index and the problem."""
    with pytest.raises(ConversationFormatError, match=problem) as caught:
        parse_conversation(record, line=12)
    assert caught.value.line == 12
    assert str(caught.value).startswith("line 12: messages[0]: ")

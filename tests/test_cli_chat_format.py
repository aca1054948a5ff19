"""The common chat format ↔ procflow messages conversion used by ``procflow run``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from procflow import ImagePart, TextPart, ToolInvocationPart
from procflow._cli import ConversationFormatError, conversation_to_record, parse_conversation

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


def _assistant_call(arguments: object) -> dict[str, Any]:
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}
    return {"messages": [{"role": "assistant", "content": None, "tool_calls": [call]}]}


SECRET = "my password is hunter2"


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        (
            {"messages": [{"role": "user", "content": 3}]},
            "messages[0].content: must be a string, null or a list of parts, not a number",
        ),
        (
            {"messages": [{"role": "user", "content": {"text": SECRET}}]},
            "messages[0].content: must be a string, null or a list of parts, not an object with 1 key",
        ),
        (
            {"messages": [{"role": "tool", "content": "x"}]},
            "messages[0].tool_call_id: a tool turn needs 'tool_call_id'",
        ),
        (
            {"messages": [{"role": "user", "content": "x", "tool_calls": []}]},
            "messages[0].tool_calls: only assistant turns may have tool_calls, not 'user' turns",
        ),
        (
            {"messages": [{"role": "assistant", "content": "x", "tool_calls": {"id": SECRET}}]},
            "messages[0].tool_calls: must be a list, not an object with 1 key",
        ),
        (
            {"messages": [{"role": "assistant", "tool_calls": [SECRET]}]},
            "messages[0].tool_calls[0]: a tool call needs {'id': ...",
        ),
        (
            _assistant_call("{"),
            "messages[0].tool_calls[0].function.arguments: invalid JSON: Expecting property name",
        ),
        (
            _assistant_call(f'["{SECRET}"]'),
            "messages[0].tool_calls[0].function.arguments: must be a JSON object, not an array of 1 item",
        ),
        (
            _assistant_call('{"n": NaN}'),
            "messages[0].tool_calls[0].function.arguments: NaN is not a JSON number",
        ),
        (
            {"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": 3}}]}]},
            "messages[0].tool_calls[0].function.name: a tool call needs a function name",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "audio"}]}]},
            "messages[0].content[0].type: unsupported content part type 'audio'",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": SECRET}]}]},
            "messages[0].content[0].type: unsupported content part type a string of 22 characters",
        ),
        (
            {"messages": [{"role": "user", "content": ["x", SECRET]}]},
            "messages[0].content[0]: a content part must be an object, not a string of 1 character",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "text", "text": [SECRET]}]}]},
            "messages[0].content[0].text: must be a string, not an array of 1 item",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
            "messages[0].content[0]: an image_url part needs",
        ),
        ({"messages": [{"content": SECRET}]}, "messages[0].role: is missing; use one of system"),
        ({"messages": [{"role": ["user"]}]}, "messages[0].role: must be a string, not an array of 1 item"),
        ({"messages": [{"role": {"name": "user"}}]}, "messages[0].role: must be a string, not an object"),
        ({"messages": [{"role": SECRET}]}, "messages[0].role: unknown role a string of 22 characters"),
        ({"messages": [SECRET]}, "messages[0]: expected a turn object, got a string of 22 characters"),
        ({"messages": {"role": "user"}}, "the conversation 'messages' is not a list"),
        ([SECRET], 'expected a JSON object like {"messages": [...]}, got an array of 1 item'),
        (None, 'expected a JSON object like {"messages": [...]}, got null'),
        ({"messages": [{"role": True}]}, "messages[0].role: must be a string, not a boolean"),
        ({"messages": [{"role": "user", "content": 1.5}]}, "messages[0].content: must be a string, null or"),
        ({"messages": [object()]}, "messages[0]: expected a turn object, got a object"),
    ],
)
def test_invalid_turns_name_the_field_and_the_problem_without_quoting_it(record: Any, problem: str) -> None:
    """A bad record raises ConversationFormatError naming the line and the field path, quoting no content."""
    with pytest.raises(ConversationFormatError) as caught:
        parse_conversation(record, line=12)
    assert caught.value.line == 12
    assert str(caught.value).startswith(f"line 12: {problem}")
    assert "hunter2" not in str(caught.value)


def test_a_tool_turn_without_a_matching_call_keeps_its_own_name() -> None:
    """A tool result whose call is not in the conversation keeps the name it was written with."""
    conversation = parse_conversation(
        {"messages": [{"role": "tool", "tool_call_id": "x", "name": "lookup", "content": "ok"}]}
    )
    [result] = conversation.messages[0].tool_invocations
    assert (result.tool_name, result.args) == ("lookup", {})
    nameless = parse_conversation({"messages": [{"role": "tool", "tool_call_id": "x", "name": 3}]})
    assert nameless.messages[0].tool_invocations[0].tool_name == "unknown"


_ABSENT_KEY = "<absent>"
_contents = st.one_of(text, st.none(), st.just(_ABSENT_KEY), st.just([{"type": "text", "text": "hi"}]))


@st.composite
def odd_turns(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Turns in the shapes a file may hold: extra keys, any key order, null or missing content, tool
    calls in unusual forms (no type, dict arguments, an empty list, repeated ids)."""
    out: list[dict[str, Any]] = []
    kinds = st.sampled_from(["user", "developer", "assistant", "calls", "tool"])
    for kind in draw(st.lists(kinds, max_size=5)):
        turn: dict[str, Any] = {"role": "assistant" if kind == "calls" else kind}
        content = draw(_contents)
        if content != _ABSENT_KEY:
            turn["content"] = content
        if kind == "calls":
            call_id = draw(st.sampled_from(["c1", "c2"]))
            call: dict[str, Any] = {"id": call_id, "type": "function"}
            if draw(st.booleans()):
                del call["type"]
            arguments: Any = draw(st.sampled_from(['{"q": 1}', {"q": 1}, " "]))
            call["function"] = {"name": "lookup", "arguments": arguments}
            if draw(st.booleans()):
                call = dict(reversed(list(call.items())))
            turn["tool_calls"] = draw(st.sampled_from([[call], [call, dict(call)], []]))
        if kind == "tool":
            turn["tool_call_id"] = "c1"
        if draw(st.booleans()):
            turn["name"] = "x"
        if kind in ("user", "assistant") and draw(st.booleans()):
            turn[draw(st.sampled_from(["reasoning_content", "refusal"]))] = draw(st.one_of(text, st.none()))
        if kind == "assistant" and draw(st.booleans()):
            turn["function_call"] = {"name": "f", "arguments": draw(st.sampled_from(['{"q": 1}', {"q": 1}]))}
        if draw(st.booleans()):
            turn = dict(reversed(list(turn.items())))
        out.append(turn)
    return out


@given(odd_turns(), st.booleans())
def test_unchanged_turns_are_written_back_as_read(messages: list[dict[str, Any]], key_texts: bool) -> None:
    """A turn whose message no processor changed is written exactly (keys, order, values) as it was
    read, whether its message is the one read or a copy of it."""
    record = {"id": "c", "messages": messages}
    conversation = parse_conversation(record, key_texts=key_texts)
    fast = conversation_to_record(conversation)
    rebuilt = conversation_to_record(conversation, [m.model_copy() for m in conversation.messages])
    assert json.dumps(fast) == json.dumps(rebuilt) == json.dumps(record)


def test_a_message_changed_in_place_is_written_as_changed() -> None:
    """A processor that edits a message in place (no copy) still has its edit written, text and tool
    turns alike: an unchanged turn is written back as read only when it says what was read."""
    record = {
        "messages": [
            {"role": "user", "content": "mail me at ana@example.com"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "send", "arguments": '{"to": "ana@example.com"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "sent to ana@example.com"},
        ]
    }
    conversation = parse_conversation(record)
    user, assistant, tool = conversation.messages
    part = user.content.parts[0]
    assert isinstance(part, TextPart)
    part.text = "mail me at [EMAIL]"
    call = assistant.tool_invocations[0]
    call.args["to"] = "[EMAIL]"
    result = tool.tool_invocations[0]
    result.result = "sent to [EMAIL]"
    written = json.dumps(conversation_to_record(conversation))
    assert "ana@example.com" not in written
    assert written.count("[EMAIL]") == 3

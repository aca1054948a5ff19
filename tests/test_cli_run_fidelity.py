"""``procflow run`` writes each turn back as it was read, with only what the guard changed replaced."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cli_support import ROOT, jsonl, procflow
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from procflow._cli import ConversationProcessor, LoadedPipeline, conversation_to_record, parse_conversation
from procflow._cli.defaults import default_pipeline

WORKFLOWS = ROOT / "tests" / "fixtures" / "cli_bundled_workflows.py"
PIPELINES = [
    (),
    ("-p", f"{WORKFLOWS}:sequence"),
    ("-p", f"{WORKFLOWS}:nested"),
    ("-p", f"{WORKFLOWS}:parallel"),
]
"""The bundled guard (the direct pass), and the same processors in workflows (the phase runner)."""
PIPELINE_IDS = ["bundled", "sequence", "nested", "parallel"]

# Clean text: nothing the guard matches, and already what Unicode normalisation makes of it.
CLEAN = {
    "en": ["Where is my order?", "It shipped yesterday.", "Thanks a lot!"],
    "fr": ["Où est ma commande ?", "Elle est partie hier, désolé.", "Merci beaucoup !"],
    "es": ["¿Dónde está mi pedido?", "Salió ayer, lo siento.", "¡Muchas gracias!"],
    "zh": ["我的订单在哪里", "昨天已经发货了", "非常感谢"],
}
IMAGE = {"type": "image_url", "image_url": {"url": "https://x.test/a.png", "detail": "high"}}


def _run(*records: Any, pipeline: tuple[str, ...] = ()) -> tuple[str, list[dict[str, Any]]]:
    """``procflow run -`` over ``records``; the lines in (encoded as procflow writes them) and out."""
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    done = procflow("run", "-", "-q", *pipeline, stdin=lines)
    assert done.returncode == 0, done.stderr
    return done.stdout, jsonl(done.stdout)


@st.composite
def clean_texts(draw: st.DrawFn) -> str:
    words = st.sampled_from(CLEAN[draw(st.sampled_from(sorted(CLEAN)))])
    return " ".join(draw(st.lists(words, min_size=1, max_size=3)))


@st.composite
def content_parts(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A content list with extra keys on its parts, and images (with and without ``detail``)."""
    parts: list[dict[str, Any]] = []
    for kind in draw(
        st.lists(st.sampled_from(["text", "cached", "image", "bare-image"]), min_size=1, max_size=3)
    ):
        if kind == "image":
            parts.append(IMAGE)
        elif kind == "bare-image":
            parts.append({"image_url": "https://x.test/b.png", "type": "image_url"})
        else:
            part: dict[str, Any] = {"type": "text", "text": draw(clean_texts())}
            if kind == "cached":
                part["cache_control"] = {"type": "ephemeral"}
            parts.append(part)
    return parts


@st.composite
def clean_conversations(draw: st.DrawFn) -> dict[str, Any]:
    """Conversations with no match in any of the shapes the format allows, unknown keys included."""
    texts = clean_texts()
    turns: list[dict[str, Any]] = [
        {"role": draw(st.sampled_from(["system", "developer"])), "content": draw(texts)}
    ]
    for index in range(draw(st.integers(1, 3))):
        turns.append({"role": "user", "content": draw(st.one_of(texts, content_parts())), "name": "ana"})
        call: dict[str, Any] = {
            "id": f"call_{index}",
            "function": {"name": "lookup", "arguments": '{"q": 1}'},
        }
        if draw(st.booleans()):
            call["type"] = draw(st.sampled_from(["function", "custom"]))
        if draw(st.booleans()):
            call["index"] = index
            call["function"]["strict"] = True
        turns.append({"content": None, "role": "assistant", "tool_calls": [call], "x-trace": [index]})
        result = draw(st.one_of(texts, content_parts(), st.none()))
        turns.append({"role": "tool", "tool_call_id": f"call_{index}", "content": result, "name": "lookup"})
        answer: dict[str, Any] = {"role": "assistant", "content": draw(st.one_of(texts, content_parts()))}
        if draw(st.booleans()):
            answer["reasoning_content"] = draw(texts)
        if draw(st.booleans()):
            answer["refusal"] = draw(st.one_of(texts, st.none()))
        turns.append(answer)
    record: dict[str, Any] = {"id": "c", "messages": turns, "metadata": {"channel": "chat"}}
    if draw(st.booleans()):
        record["blocked"] = {"reason": "earlier run", "processor_id": "x"}
    return record


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(clean_conversations(), min_size=1, max_size=3), st.sampled_from(range(len(PIPELINES))))
def test_a_conversation_with_no_match_is_written_back_byte_identical(
    records: list[dict[str, Any]], pipeline: int
) -> None:
    """Nothing the guard did not change is dropped or rewritten: the output is the input, byte for byte."""
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    written, _ = _run(*records, pipeline=PIPELINES[pipeline])
    assert written == lines


@pytest.mark.parametrize("pipeline", PIPELINES, ids=PIPELINE_IDS)
@pytest.mark.parametrize(
    "turns",
    [
        [
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "function": {"name": "f"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "see"}, IMAGE]},
        ],
        [
            {
                "role": "user",
                "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}],
            }
        ],
        [{"role": "user", "content": [IMAGE]}],
        [{"role": "user", "content": "hi", "tool_call_id": "stray"}],
        [{"role": "user", "content": "Où est ma commande ?", "refusal": None, "reasoning_content": 3}],
    ],
    ids=["image-in-tool-turn", "cache-control", "image-detail", "stray-key", "non-text-key-values"],
)
def test_each_kind_of_detail_of_a_clean_turn_is_kept(
    turns: list[dict[str, Any]], pipeline: tuple[str, ...]
) -> None:
    """Images in tool turns, keys of content parts, an absent call type and unknown keys stay as read."""
    record = {"id": "c", "messages": turns, "blocked": {"reason": "r", "processor_id": "p"}}
    _, [written] = _run(record, pipeline=pipeline)
    assert written == record


@pytest.mark.parametrize("pipeline", PIPELINES, ids=PIPELINE_IDS)
def test_a_redacted_part_keeps_its_other_keys(pipeline: tuple[str, ...]) -> None:
    """Only the text of a redacted part changes: its cache_control, the images beside it, the call's
    other keys stay."""
    call = {
        "id": "c1",
        "type": "custom",
        "index": 0,
        "function": {"name": "mail", "arguments": '{"to": "ana@example.com"}'},
    }
    text = {
        "type": "text",
        "text": "Écrivez à marie.dupont@example.fr",
        "cache_control": {"type": "ephemeral"},
    }
    record = {
        "messages": [
            {"role": "user", "content": [text, IMAGE], "name": "marie"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {
                "role": "tool",
                "tool_call_id": "c1",
                "content": [IMAGE, {"type": "text", "text": "sent to ana@example.com", "k": 1}],
            },
        ]
    }
    _, [written] = _run(record, pipeline=pipeline)
    user, assistant, tool = written["messages"]
    assert user == {
        "role": "user",
        "content": [{**text, "text": "Écrivez à [EMAIL]"}, IMAGE],
        "name": "marie",
    }
    assert assistant["tool_calls"] == [
        {**call, "function": {"name": "mail", "arguments": '{"to": "[EMAIL]"}'}}
    ]
    assert tool["content"] == [IMAGE, {"type": "text", "text": "sent to [EMAIL]", "k": 1}]


@pytest.mark.parametrize("pipeline", PIPELINES, ids=PIPELINE_IDS)
def test_a_redacted_tool_text_split_over_parts_stays_in_its_parts(pipeline: tuple[str, ...]) -> None:
    """A tool turn's text parts are one text to the guard: the text around a redaction stays in the
    part it was in, the placeholder goes in the part where the value starts."""
    parts = [
        {"type": "text", "text": "请联系 li.wei@"},
        IMAGE,
        {"type": "text", "text": "example.org 谢谢", "k": 1},
    ]
    record = {"messages": [{"role": "tool", "tool_call_id": "c1", "content": parts}]}
    _, [written] = _run(record, pipeline=pipeline)
    assert written["messages"][0]["content"] == [
        {"type": "text", "text": "请联系 [EMAIL]"},
        IMAGE,
        {"type": "text", "text": " 谢谢", "k": 1},
    ]


KEY_TEXTS = [
    ("reasoning_content", "her email is ana.garcia@example.com", "her email is [EMAIL]"),
    ("refusal", "No puedo usar la tarjeta 4111 1111 1111 1111", "No puedo usar la tarjeta [CREDIT_CARD]"),
    ("reasoning_content", "请发邮件到 li.wei@example.org", "请发邮件到 [EMAIL]"),
    (
        "refusal",
        "Je ne peux pas utiliser sk-proj-abcdefghijkmnpqrstuvwx0123",
        "Je ne peux pas utiliser [API_KEY]",
    ),
]


@pytest.mark.parametrize("pipeline", PIPELINES, ids=PIPELINE_IDS)
@pytest.mark.parametrize(("key", "text", "redacted"), KEY_TEXTS)
def test_reasoning_and_refusal_are_checked_as_text_of_their_turn(
    key: str, text: str, redacted: str, pipeline: tuple[str, ...]
) -> None:
    """``reasoning_content`` and ``refusal`` are redacted like the turn's content, in place."""
    record = {
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok", key: text}]
    }
    _, [written] = _run(record, pipeline=pipeline)
    assert written["messages"][1] == {"role": "assistant", "content": "ok", key: redacted}


@pytest.mark.parametrize("direct", [True, False])
async def test_a_key_text_is_reported_and_counted_under_its_own_message_id(direct: bool) -> None:
    """A redaction in a turn's key is counted once and reported against ``turn-i.KEY`` (the input's
    ``messages[i].KEY``), by the direct pass and the phase runner alike."""
    turn = {"role": "assistant", "content": "ok", "refusal": "write to ana@example.com"}
    conversation = parse_conversation({"messages": [{"role": "user", "content": "hi"}, turn]}, key_texts=True)
    processors = default_pipeline()
    processor = ConversationProcessor(
        LoadedPipeline("t", "processors", processors, tuple(processors), tuple(processors))
    )
    if not direct:
        processor._direct = None
    outcome = await processor.process(conversation)
    assert outcome.redactions == {"email": 1}
    assert [v.detail["message_id"] for v in outcome.violations] == ["turn-1.refusal"]


def test_without_key_texts_the_keys_are_not_messages() -> None:
    """Read for the gateway (which never sends them on), a turn's keys stay keys: one message a turn."""
    turn = {"role": "assistant", "content": "ok", "refusal": "no", "function_call": {"name": "f"}}
    conversation = parse_conversation({"messages": [turn]})
    assert [m.id for m in conversation.messages] == ["turn-0"]
    assert conversation.messages[0].tool_invocations == []
    assert conversation_to_record(conversation) == {"messages": [turn]}


@pytest.mark.parametrize("pipeline", PIPELINES, ids=PIPELINE_IDS)
def test_a_legacy_function_call_is_checked_like_a_tool_call(pipeline: tuple[str, ...]) -> None:
    """``function_call.arguments`` is redacted as a tool call's arguments are; its other keys stay."""
    function = {"name": "send", "arguments": '{"to": "ana.garcia@example.com"}', "x": 1}
    record = {"messages": [{"role": "assistant", "content": None, "function_call": function}]}
    _, [written] = _run(record, pipeline=pipeline)
    assert written["messages"][0]["function_call"] == {**function, "arguments": '{"to": "[EMAIL]"}'}


def test_a_malformed_legacy_function_call_is_an_error_of_its_line() -> None:
    """A ``function_call`` the guard cannot read is a bad line, not text written back unchecked."""
    record = {"messages": [{"role": "assistant", "content": None, "function_call": "ana@example.com"}]}
    done = procflow("run", "-", "-q", stdin=json.dumps(record) + "\n")
    assert done.returncode == 1
    assert "messages[0].function_call: must be {'name': ..., 'arguments': ...}, not a string" in done.stderr
    assert "ana@example.com" not in done.stderr + done.stdout


def test_other_unknown_keys_are_written_back_unchanged() -> None:
    """A key the format does not define (a turn's ``name``) is kept as it is, not checked: documented."""
    record = {"messages": [{"role": "user", "content": "hi", "name": "ana.garcia@example.com"}]}
    _, [written] = _run(record)
    assert written == record

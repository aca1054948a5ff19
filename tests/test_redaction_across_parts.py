"""A value split over two text parts of one message is redacted, blocked or flagged like a whole one.

A message's text parts reach the model side by side, with nothing between them, so the redacting
guards (``RegexFilterProcessor``, ``PIIDetector``) check the parts joined and map each redacted span
back onto the parts it covers; a file or an image between two parts keeps them apart.
"""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import anyio
import openai
import pytest
from cli_support import jsonl, procflow, write_jsonl
from guard_seams_support import PERSONAL, SHAPES, listed, pii_guard
from guard_support import scripted_judge
from hypothesis import given, settings
from hypothesis import strategies as st
from log_support import captured_logs

from procflow import (
    Agent,
    Chunk,
    FilePart,
    ImagePart,
    Message,
    MessageContent,
    ReasoningPart,
    SourcePart,
    TextPart,
)
from procflow.models import OpenAICompatibleModel
from procflow.processors import PIIDetector, ProcessorViolation, RegexFilterProcessor
from procflow.server import GatewayConfig, create_app
from procflow.server import serve_in_background as serving
from procflow.testing import (
    FakeProviderServer,
    FakeReply,
    ScriptedModel,
    ScriptedStep,
    run_input,
    run_output_result,
)

# (language, the parts an app sent, the value split over them)
SPLIT = [
    ("en", ["Please mail ana.lopez@", "example.org today."], "ana.lopez@example.org"),
    ("fr", ["Ma carte : 4111 1111 ", "1111 1111, merci."], "4111 1111 1111 1111"),
    ("es", ["Mi clave sk-proj-abcdefghijk", "mnpqrstuvwx0123 y contraseña=hun", "ter2."], "hunter2"),
    ("zh", ["请发邮件到ana.lopez@", "example.org谢谢"], "ana.lopez@example.org"),
]
KEY = "sk-proj-abcdefghijkmnpqrstuvwx0123"


def _guard(strategy: str = "redact", **options: Any) -> RegexFilterProcessor:
    return RegexFilterProcessor(presets=["pii", "secrets"], strategy=strategy, **options)  # type: ignore[arg-type]


def _message(*parts: str | Any, role: str = "user") -> Message:
    """A message of these parts (strings become text parts)."""
    made = [TextPart(text=part) if isinstance(part, str) else part for part in parts]
    return Message(role=role, content=MessageContent(parts=made))  # type: ignore[arg-type]


def _sent(model: ScriptedModel) -> list[str]:
    """The texts of the last prompt message of the model's first call, part by part."""
    return [part.text for part in model.requests[0].prompt[-1].content]  # type: ignore[union-attr]


def _texts(message: Message) -> list[str]:
    return [part.text for part in message.content.parts if isinstance(part, TextPart)]


async def _ask(agent: Agent, messages: list[Message], call: str) -> Any:
    if call == "generate":
        return await agent.generate(messages)
    return await agent.stream(messages).consume()


# --- RegexFilterProcessor, input --------------------------------------------------------------------


@pytest.mark.parametrize("call", ["generate", "stream"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(("language", "parts", "value"), SPLIT, ids=[case[0] for case in SPLIT])
async def test_regex_redacts_a_value_split_over_parts_before_the_model_reads_it(
    call: str, shape: str, language: str, parts: list[str], value: str
) -> None:
    """The model is sent the parts redacted as their joined text is, in as many parts as before."""
    model = ScriptedModel(["ok"])
    agent = Agent(id="a", model=model, input_processors=listed(shape, lambda: [_guard()]))
    await _ask(agent, [_message(*parts)], call)
    sent = _sent(model)
    assert len(sent) == len(parts)
    assert "".join(sent) == _guard().redact("".join(parts))
    assert value not in "".join(sent) and KEY not in "".join(sent)


@pytest.mark.parametrize("shape", SHAPES)
async def test_regex_block_trips_on_a_value_split_over_parts(shape: str) -> None:
    """``block`` stops before the model call, each split value counted once where it starts."""
    model = ScriptedModel(["ok"])
    agent = Agent(id="a", model=model, input_processors=listed(shape, lambda: [_guard("block")]))
    message = _message("Écrivez à ana.lopez@", "example.org ou au 4111 1111 ", "1111 1111.")
    result = await agent.generate([message])
    assert result.tripwire is not None and model.requests == []
    matches = [
        (m["rule"], m["part_index"], m["index"], m["part_indexes"])
        for m in result.tripwire.metadata["matches"]
    ]
    assert matches == [("email", 0, 10, [0, 1]), ("credit-card", 1, 18, [1, 2])]


async def test_regex_warn_logs_a_value_split_over_parts_once() -> None:
    """``warn`` names the rule of the split value once and passes the parts unchanged."""
    message = _message("请发邮件到ana.lopez@", "example.org谢谢")
    with captured_logs() as logs:
        out = await run_input(_guard("warn"), [message])
    assert out.tripwire is None and out.messages[0] is message
    [event] = [e for e in logs if e["event"] == "regex_filter_match"]
    assert event["rules"] == ["email"]
    assert "ana.lopez" not in repr(logs)


async def test_regex_report_names_the_part_where_a_split_value_starts() -> None:
    """One report entry per split value: its offset in the part where it starts, its whole length,
    every part it covers, and (when asked) the whole value."""
    guard = _guard(include_redacted_values=True)
    seen: list[ProcessorViolation] = []
    guard.on_violation = seen.append
    message = _message("Hola, ", "mi correo es ana.lo", "pez@exam", "ple.org gracias")
    out = await run_input(guard, [message])
    assert _texts(out.messages[0]) == ["Hola, ", "mi correo es [EMAIL]", "", " gracias"]
    [violation] = seen
    assert violation.detail["part_index"] == 1
    assert violation.detail["message_id"] == message.id
    assert violation.detail["redactions"] == [
        {
            "rule": "email",
            "index": 13,
            "length": 21,
            "replacement": "[EMAIL]",
            "part_indexes": [1, 2, 3],
            "value": "ana.lopez@example.org",
        }
    ]


async def test_regex_a_value_inside_one_part_is_reported_as_before() -> None:
    """A match inside one part of a several-part message keeps the one-part report (no ``part_indexes``)."""
    guard = _guard()
    seen: list[ProcessorViolation] = []
    guard.on_violation = seen.append
    await run_input(guard, [_message("Bonjour ", "écrivez à ana@example.org", " merci")])
    [violation] = seen
    assert violation.detail["part_index"] == 1
    assert violation.detail["redactions"] == [
        {"rule": "email", "index": 10, "length": 15, "replacement": "[EMAIL]"}
    ]


async def test_regex_keeps_messages_and_parts_it_does_not_change() -> None:
    """A several-part message with nothing to redact is the same object; a redacted one keeps the
    parts the redaction does not touch."""
    clean = _message("Where is ", "my order?")
    dirty = _message("Thanks. ", "Mail ana.lopez@", "example.org", " please.")
    out = await run_input(_guard(), [clean, dirty])
    assert out.messages[0] is clean
    kept = out.messages[1].content.parts
    assert kept[0] is dirty.content.parts[0] and kept[3] is dirty.content.parts[3]
    assert _texts(out.messages[1]) == ["Thanks. ", "Mail [EMAIL]", "", " please."]


@pytest.mark.parametrize(
    ("role", "between", "joined"),
    [
        ("user", ImagePart(url="https://example.com/cat.png"), False),
        ("user", FilePart(media_type="application/pdf", url="https://example.com/a.pdf"), False),
        ("assistant", ReasoningPart(text="thinking"), False),
        ("assistant", MessageContent.model_validate({"parts": [{"type": "step-start"}]}).parts[0], False),
        ("user", SourcePart(source_id="s1", url="https://example.com/doc"), True),
        ("assistant", SourcePart(source_id="s1", url="https://example.com/doc"), True),
    ],
    ids=["image", "file", "reasoning", "step-start", "user-source", "assistant-source"],
)
async def test_regex_joins_only_text_parts_the_model_reads_side_by_side(
    role: str, between: Any, joined: bool
) -> None:
    """A file, an image (and in an assistant message reasoning or a new step) sits between two
    parts in the prompt: they stay two texts. A part the prompt does not send (a source) does not."""
    message = _message("Mail ana.lopez@", between, "example.org please.", role=role)
    out = await run_input(_guard(), [message])
    texts = _texts(out.messages[0])
    if joined:
        assert texts == ["Mail [EMAIL]", " please."]
    else:
        assert out.messages[0] is message
    assert out.messages[0].content.parts[1] == between


async def test_regex_values_on_either_side_of_an_image_are_redacted_apart() -> None:
    """Whole values on both sides of an image are each redacted in their own part."""
    message = _message(
        "Carte 4111 1111 1111 1111", ImagePart(url="https://example.com/cat.png"), "et bo@example.fr"
    )
    out = await run_input(_guard(), [message])
    assert _texts(out.messages[0]) == ["Carte [CREDIT_CARD]", "et [EMAIL]"]
    assert isinstance(out.messages[0].content.parts[1], ImagePart)


# Texts in four languages with values: cut anywhere, into 1-4 parts.
PROPERTY_TEXTS = [
    "Please mail ana.lopez@example.org or call +1 555 123 4567 today.",
    "Ma carte 4111 1111 1111 1111 et mot de passe=hunter2, merci.",
    f"Mi clave es {KEY} y el correo jose@example.es.",
    "请发邮件到li.wei@example.cn谢谢，卡号4111 1111 1111 1111。",
]


@st.composite
def _split(draw: st.DrawFn) -> list[str]:
    text = draw(st.sampled_from(PROPERTY_TEXTS))
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), min_size=0, max_size=3)))
    bounds = [0, *cuts, len(text)]
    return [text[low:high] for low, high in pairwise(bounds)]


def _offsets(parts: list[str], matches: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """Each tripwire match's rule and offset in the parts joined."""
    return [(m["rule"], sum(map(len, parts[: m.get("part_index", 0)])) + m["index"]) for m in matches]


@settings(max_examples=200, deadline=None)
@given(_split(), st.sampled_from(["redact", "block", "warn"]))
def test_regex_any_split_into_parts_is_checked_like_the_whole_text(parts: list[str], strategy: str) -> None:
    """For any split of a text into 1-4 parts, the redacted parts joined equal ``redact`` of the
    joined text, and ``block`` finds the matches the joined text has, each once, where it is."""
    joined = "".join(parts)
    out = anyio.run(run_input, _guard(strategy), [_message(*parts)])
    if strategy == "redact":
        assert "".join(_texts(out.messages[0])) == _guard().redact(joined)
    elif strategy == "block":
        whole = anyio.run(run_input, _guard(strategy), [_message(joined)])
        assert (out.tripwire is None) == (whole.tripwire is None)
        if out.tripwire is not None and whole.tripwire is not None:
            found = _offsets(parts, out.tripwire.metadata["matches"])
            assert found == _offsets([joined], whole.tripwire.metadata["matches"])
    else:
        assert out.tripwire is None and "".join(_texts(out.messages[0])) == joined


# --- RegexFilterProcessor, output -------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["redact", "block"])
async def test_regex_output_result_checks_a_response_split_over_parts(strategy: str) -> None:
    """``process_output_result`` redacts (or blocks) a value split over a response's text parts."""
    message = _message("Écrivez à ana.lopez@", "example.org.", role="assistant")
    out = await run_output_result(_guard(strategy), [message])
    if strategy == "block":
        assert out.tripwire is not None
        assert [m["part_indexes"] for m in out.tripwire.metadata["matches"]] == [[0, 1]]
    else:
        assert _texts(out.messages[0]) == ["Écrivez à [EMAIL]", "."]
        assert out.text == "Écrivez à [EMAIL]."


def _blocks(*texts: str) -> ScriptedStep:
    """A model step answering in one text block per text."""
    chunks: list[Chunk] = []
    for at, text in enumerate(texts):
        block = f"t{at}"
        chunks += [
            Chunk("text-start", {"id": block}),
            Chunk("text-delta", {"id": block, "text": text}),
            Chunk("text-end", {"id": block}),
        ]
    return ScriptedStep(chunks=chunks)


@pytest.mark.parametrize("call", ["generate", "stream"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(("language", "parts", "value"), SPLIT, ids=[case[0] for case in SPLIT])
async def test_regex_output_redacts_an_answer_split_over_text_blocks(
    call: str, shape: str, language: str, parts: list[str], value: str
) -> None:
    """An answer whose value runs over two text blocks reaches neither the consumer nor the result."""
    agent = Agent(
        id="a",
        model=ScriptedModel([_blocks(*parts)]),
        output_processors=listed(shape, lambda: [_guard(phase="output")]),
    )
    if call == "generate":
        result = await agent.generate("hi")
        shown = result.text
    else:
        output = agent.stream("hi")
        shown = "".join([piece async for piece in output.text_stream])
        result = await output.consume()
    expected = _guard().redact("".join(parts))
    assert shown == result.text == expected
    assert "".join(_texts(result.response.messages[-1])) == expected
    stored = [m.model_dump(mode="json") for m in result.response.messages]
    assert value not in json.dumps(stored, ensure_ascii=False)


class Signature:
    """An app's output processor that signs the answer with a contact, built from two text parts."""

    id = "signature"

    def process_output_result(self, args: Any) -> list[Message]:
        last = args.messages[-1]
        parts = [
            *last.content.parts,
            TextPart(text=" — écrivez à support.client@"),
            TextPart(text="example.fr"),
        ]
        signed = last.model_copy(update={"content": last.content.model_copy(update={"parts": parts})})
        return [*args.messages[:-1], signed]


@pytest.mark.parametrize("call", ["generate", "stream"])
@pytest.mark.parametrize("shape", SHAPES)
async def test_regex_output_result_redacts_parts_an_app_assembled(call: str, shape: str) -> None:
    """A response an app assembled from parts (after the stream) is redacted in the result phase,
    listed directly or inside a workflow after the app's processor."""
    processors = (
        [Signature(), *listed(shape, lambda: [_guard(phase="output")])]
        if shape == "parallel"  # a parallel block passes on one branch's output: the app signs before it
        else listed(shape, lambda: [Signature(), _guard(phase="output")])
    )
    agent = Agent(id="a", model=ScriptedModel(["Merci."]), output_processors=processors)
    result = await _ask(agent, [_message("bonjour")], call)
    assert _texts(result.response.messages[-1]) == ["Merci.", " — écrivez à [EMAIL]", ""]


# --- the CLI's direct pass ----------------------------------------------------------------------------


def test_cli_run_redacts_a_value_split_over_content_parts(tmp_path: Path) -> None:
    """``procflow run`` (the default guard) redacts a value a content array splits, part by part."""
    turns = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "请发邮件到ana.lopez@"},
                {"type": "text", "text": "example.org谢谢"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Card 4111 1111 "},
                {"type": "text", "text": "1111 1111 noted."},
            ],
        },
    ]
    source = write_jsonl(tmp_path / "in.jsonl", {"messages": turns})
    done = procflow("run", source)
    assert done.returncode == 0, done.stderr
    [record] = jsonl(done.stdout)
    user, assistant = ([part["text"] for part in turn["content"]] for turn in record["messages"])
    assert user == ["请发邮件到[EMAIL]", "谢谢"]
    assert assistant == ["Card [CREDIT_CARD]", " noted."]


# --- the gateway -------------------------------------------------------------------------------------


async def test_gateway_redacts_a_value_a_client_splits_over_a_content_array() -> None:
    """A gateway client's content array splitting a key reaches the provider redacted."""
    with FakeProviderServer() as upstream:
        upstream.add(FakeReply(text="ok"))
        config = GatewayConfig(
            upstream=OpenAICompatibleModel("fake-model", base_url=upstream.base_url),
            input_processors=[_guard(phase="input")],
        )
        with serving(create_app(config)) as url:
            async with openai.AsyncOpenAI(base_url=url, api_key="unused", max_retries=0) as client:
                content = [
                    {"type": "text", "text": "Mi clave sk-proj-abcdefghijk"},
                    {"type": "text", "text": "mnpqrstuvwx0123, gracias."},
                ]
                await client.chat.completions.create(
                    model="fake-model", messages=[{"role": "user", "content": content}]
                )
        sent = upstream.requests[0].json["messages"][-1]["content"]
    assert [part["text"] for part in sent] == ["Mi clave [API_KEY]", ", gracias."]


# --- PIIDetector ----------------------------------------------------------------------------------------


def _halves(sentence: str, value: str) -> list[str]:
    """``sentence`` cut into two parts in the middle of ``value``."""
    cut = sentence.index(value) + len(value) // 2
    return [sentence[:cut], sentence[cut:]]


@pytest.mark.parametrize("call", ["generate", "stream"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(("language", "sentence", "values"), PERSONAL, ids=[case[0] for case in PERSONAL])
async def test_pii_redacts_a_value_split_over_parts_before_the_model_reads_it(
    call: str, shape: str, language: str, sentence: str, values: tuple[str, ...]
) -> None:
    """Each personal value split over two parts is replaced in the part where it starts."""
    parts = _halves(sentence, values[-1])
    model = ScriptedModel(["ok"])
    agent = Agent(id="a", model=model, input_processors=listed(shape, lambda: [pii_guard()]))
    await _ask(agent, [_message(*parts)], call)
    sent = _sent(model)
    whole = await run_input(pii_guard(), [sentence])
    assert len(sent) == 2
    assert "".join(sent) == whole.text
    assert not any(value in "".join(sent) for value in values)


async def test_pii_judges_a_several_part_message_once() -> None:
    """The judge is asked once about a message's parts joined, as the model reads them."""
    judge = scripted_judge()
    guard = PIIDetector(model=judge, redaction_method="placeholder")
    out = await run_input(guard, [_message("Contact John Sm", "ith at john.smith@", "example.com today.")])
    assert len(judge.requests) == 1
    assert _texts(out.messages[0]) == ["Contact [NAME]", " at [EMAIL]", " today."]


@pytest.mark.parametrize("strategy", ["block", "filter"])
async def test_pii_block_and_filter_see_a_value_split_over_parts(strategy: str) -> None:
    """``block`` trips and ``filter`` drops the message when the value is only whole joined."""
    guard = PIIDetector(model=scripted_judge(), strategy=strategy)  # type: ignore[arg-type]
    out = await run_input(guard, [_message("Écrivez à marie.dupont@", "example.fr merci.")])
    if strategy == "block":
        assert out.tripwire is not None and out.tripwire.metadata["types"] == ["email"]
    else:
        assert out.tripwire is None and out.messages == []


async def test_pii_keeps_text_on_either_side_of_an_image_apart() -> None:
    """Text on either side of an image is judged as two texts; the image keeps its place."""
    judge = scripted_judge()
    guard = PIIDetector(model=judge, redaction_method="placeholder")
    message = _message(
        "Llame al +34 612 345 678", ImagePart(url="https://example.com/a.png"), "o a jose@example.es"
    )
    out = await run_input(guard, [message])
    assert len(judge.requests) == 2
    assert _texts(out.messages[0]) == ["Llame al [PHONE]", "o a [EMAIL]"]
    assert isinstance(out.messages[0].content.parts[1], ImagePart)


async def test_pii_redacts_the_flattened_text_that_repeats_the_parts_once() -> None:
    """A flattened ``content`` equal to the joined parts is rewritten with them, judged once."""
    judge = scripted_judge()
    guard = PIIDetector(model=judge, redaction_method="placeholder")
    parts = ["请联系李伟，电话 +86 139 ", "1234 5678。"]
    message = Message(
        role="user",
        content=MessageContent(parts=[TextPart(text=p) for p in parts], content="".join(parts)),
    )
    out = await run_input(guard, [message])
    assert len(judge.requests) == 1
    assert _texts(out.messages[0]) == ["请联系[NAME]，电话 [PHONE]", "。"]
    assert out.messages[0].content.content == "请联系[NAME]，电话 [PHONE]。"

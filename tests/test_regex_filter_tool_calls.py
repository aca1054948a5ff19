"""RegexFilter on the tool traffic of the output stream: tool calls (checked before the tool runs),
tool results and ``data-*`` chunks.

A tool call's arguments are model output that leaves the process: the tool receives them, and so does
the consumer of the stream. With ``tool_arguments`` on (the default for ``phase="all"``) the filter
checks each streamed ``tool-call`` chunk, so ``redact`` changes what the tool receives and ``block``
stops the run before the tool is called. Before, the call was only redacted in the stored response
after the tool had run with the values in clear, and ``block`` tripped after the tool's side effects.

A tool's result and the ``data-*`` chunks a tool writes reach the stream's consumer too: their strings
are checked like text (``redact`` rewrites them, ``block`` trips before the consumer sees them).

Tested listed directly and in every workflow shape, on ``generate()`` and ``stream()``, with text held
before the call in any chunking, across a provider-error retry and an output-step retry, with nested
arguments, in English, French, Spanish and Chinese.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from guard_seams_support import SHAPES, RejectFirstStep, dump_chunks, listed
from guard_support import chunked
from hypothesis import given, settings
from hypothesis import strategies as st
from log_support import captured_logs

from procflow import Agent, Chunk, ToolContext, tool
from procflow.errors import APICallError
from procflow.processors import (
    ProcessorViolation,
    RegexFilterProcessor,
    StreamErrorRetryProcessor,
)
from procflow.testing import ScriptedModel, ScriptedStep

# (a message body with an e-mail address and a key, the values in it, what redaction makes of it)
BODIES = {
    "en": (
        "Send the invoice to ana.lopez@example.org, key AKIAZ7Q3K9XW2M4T6PLB",
        ("ana.lopez@example.org", "AKIAZ7Q3K9XW2M4T6PLB"),
        "Send the invoice to [EMAIL], key [AWS_KEY]",
    ),
    "fr": (
        "Écrivez à marie.dupont@example.fr, clé API : sk_live_qwertyuiopasdfghjklzxcvb",
        ("marie.dupont@example.fr", "sk_live_qwertyuiopasdfghjklzxcvb"),
        "Écrivez à [EMAIL], clé API : [API_KEY]",
    ),
    "es": (
        "Escriba a jose.garcia@example.es, clave API: ghp_R8mK2vX9qL4tN7wB3cY6zH1jF5dS0aE2gU8p",
        ("jose.garcia@example.es", "ghp_R8mK2vX9qL4tN7wB3cY6zH1jF5dS0aE2gU8p"),
        "Escriba a [EMAIL], clave API: [API_KEY]",
    ),
    "zh": (
        "客户邮箱li.wei@example.cn，令牌是sk-proj-Q7vK2mX9pL4tN8wB3cY6zH1jF5dS0aE2",
        ("li.wei@example.cn", "sk-proj-Q7vK2mX9pL4tN8wB3cY6zH1jF5dS0aE2"),
        "客户邮箱[EMAIL]，令牌是[API_KEY]",
    ),
}
LANGS = sorted(BODIES)
EVERY_VALUE = tuple(value for _, values, _ in BODIES.values() for value in values)

sent: list[dict[str, Any]] = []


@tool
async def send_message(to: str, body: str) -> str:
    """Send ``body`` to ``to`` (records what it was handed)."""
    sent.append({"to": to, "body": body})
    return "sent"


@tool
async def send_batch(messages: list[dict[str, Any]], note: str = "") -> str:
    """Send several messages (records what it was handed)."""
    sent.append({"messages": messages, "note": note})
    return f"sent {len(messages)}"


@tool
async def read_account(lang: str, context: ToolContext) -> dict[str, Any]:
    """Read an account: reports progress in a data chunk, and returns the record."""
    assert context.writer is not None
    await context.writer.custom({"type": "data-progress", "data": {"step": "found", "note": BODIES[lang][0]}})
    return {"owner": BODIES[lang][1][0], "notes": [BODIES[lang][0]]}


def leaks(text: str) -> list[str]:
    """The values of :data:`BODIES` that ``text`` holds in clear."""
    return [value for value in EVERY_VALUE if value in text]


def _filter(strategy: str = "redact", **options: Any) -> RegexFilterProcessor:
    return RegexFilterProcessor(presets=["pii", "secrets"], strategy=strategy, **options)  # type: ignore[arg-type]


def _call(lang: str) -> tuple[str, dict[str, Any]]:
    return ("send_message", {"to": "billing@example.net", "body": BODIES[lang][0]})


def _stored(result: Any) -> str:
    return json.dumps([m.model_dump(mode="json") for m in result.response.messages], ensure_ascii=False)


async def _run(agent: Agent, mode: str) -> tuple[Any, list[Chunk]]:
    if mode == "generate":
        result = await agent.generate("Send it.")
        return result, [chunk for step in result.steps for chunk in step.chunks]
    output = agent.stream("Send it.")
    chunks = [chunk async for chunk in output.full_stream]
    return output, chunks


@pytest.fixture(autouse=True)
def _forget_sent() -> None:
    sent.clear()


@pytest.mark.parametrize("mode", ["generate", "stream"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("lang", LANGS)
async def test_redact_hands_the_tool_the_redacted_arguments(lang: str, shape: str, mode: str) -> None:
    model = ScriptedModel([ScriptedStep(text="Sending. ", tool_calls=[_call(lang)]), "Sent."], chunk_size=4)
    agent = Agent(
        id="a", model=model, tools=[send_message], output_processors=listed(shape, lambda: [_filter()])
    )
    outcome, chunks = await _run(agent, mode)
    assert outcome.tripwire is None and outcome.text == "Sending. Sent."
    assert sent == [{"to": "[EMAIL]", "body": BODIES[lang][2]}]  # what the tool received
    assert leaks(dump_chunks(chunks)) == []  # what the consumer received, tool-call chunk included
    assert [call.args for call in outcome.steps[0].tool_calls] == [sent[0]]
    assert leaks(_stored(outcome)) == []
    assert (
        leaks(json.dumps([m.model_dump(mode="json") for m in model.requests[1].prompt], ensure_ascii=False))
        == []
    )


@pytest.mark.parametrize("mode", ["generate", "stream"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("lang", LANGS)
async def test_block_stops_the_run_before_the_tool_is_called(lang: str, shape: str, mode: str) -> None:
    model = ScriptedModel([ScriptedStep(tool_calls=[_call(lang)]), "Sent."])
    agent = Agent(
        id="a", model=model, tools=[send_message], output_processors=listed(shape, lambda: [_filter("block")])
    )
    outcome, chunks = await _run(agent, mode)
    assert sent == []  # the tool never ran
    assert outcome.tripwire is not None and outcome.tripwire.processor_id == "regex-filter"
    assert outcome.tripwire.retry is False
    matches = outcome.tripwire.metadata["matches"]
    assert {m["rule"] for m in matches} >= {"email"}
    assert {(m["tool_name"], tuple(m["arg_path"])) for m in matches} >= {
        ("send_message", ("to",)),
        ("send_message", ("body",)),
    }
    assert len(model.requests) == 1 and leaks(dump_chunks(chunks)) == []
    assert not [c for c in chunks if c.type == "tool-call"]


async def test_block_metadata_names_the_call_and_never_the_value() -> None:
    model = ScriptedModel([ScriptedStep(tool_calls=[_call("en")]), "x"])
    agent = Agent(id="a", model=model, tools=[send_message], output_processors=[_filter("block")])
    result = await agent.generate("go")
    assert result.tripwire is not None
    for match in result.tripwire.metadata["matches"]:
        assert match["tool_call_id"] and match["match"] == "[REDACTED_MATCH]"
    assert leaks(json.dumps(result.tripwire.metadata)) == [] and leaks(result.tripwire.reason) == []


@pytest.mark.parametrize("lang", LANGS)
async def test_warn_logs_and_the_tool_receives_the_arguments(lang: str) -> None:
    model = ScriptedModel([ScriptedStep(tool_calls=[_call(lang)]), "Sent."])
    agent = Agent(id="a", model=model, tools=[send_message], output_processors=[_filter("warn")])
    with captured_logs() as logs:
        result = await agent.generate("go")
    assert result.tripwire is None and sent == [{"to": "billing@example.net", "body": BODIES[lang][0]}]
    events = [e for e in logs if e["event"] == "regex_filter_match"]
    # Before the tool runs, and again on the result (as for text): each phase logs what it saw.
    assert [e["phase"] for e in events] == ["process_output_stream", "process_output_result"]
    assert all("email" in e["rules"] for e in events)
    assert leaks(json.dumps(events, default=str)) == []


async def test_redaction_reports_name_the_call_and_the_argument_path() -> None:
    reports: list[ProcessorViolation] = []
    guard = _filter()
    guard.on_violation = reports.append
    model = ScriptedModel([ScriptedStep(tool_calls=[_call("fr")]), "Sent."])
    agent = Agent(id="a", model=model, tools=[send_message], output_processors=[guard])
    result = await agent.generate("go")
    call = result.steps[0].tool_calls[0]
    details = [r.detail for r in reports]
    assert [(d["phase"], d["tool_call_id"], d["tool_name"], d["arg_path"]) for d in details] == [
        ("process_output_stream", call.tool_call_id, "send_message", ["to"]),
        ("process_output_stream", call.tool_call_id, "send_message", ["body"]),
    ]
    assert [[e["rule"] for e in d["redactions"]] for d in details] == [["email"], ["email", "api-key"]]
    assert "message_id" not in details[0] and "part_index" not in details[0]


async def test_nested_arguments_are_redacted_at_any_depth() -> None:
    batch = {
        "messages": [
            {"to": BODIES["es"][1][0], "body": BODIES["es"][0]},
            {"to": BODIES["zh"][1][0], "body": "你好", "cc": [BODIES["en"][1][0]]},
        ],
        "note": BODIES["fr"][0],
    }
    model = ScriptedModel([ScriptedStep(tool_calls=[("send_batch", batch)]), "Done."])
    agent = Agent(id="a", model=model, tools=[send_batch], output_processors=[_filter()])
    result = await agent.generate("go")
    assert result.tripwire is None and leaks(json.dumps(sent, ensure_ascii=False)) == []
    assert sent[0]["messages"][1] == {"to": "[EMAIL]", "body": "你好", "cc": ["[EMAIL]"]}
    assert sent[0]["note"] == BODIES["fr"][2]


@pytest.mark.parametrize(
    ("phase", "tool_arguments", "checked"),
    [("output", None, False), ("output", True, True), ("all", None, True), ("all", False, False)],
)
async def test_the_option_decides_and_phase_output_leaves_calls_alone_by_default(
    phase: str, tool_arguments: bool | None, checked: bool
) -> None:
    model = ScriptedModel([ScriptedStep(tool_calls=[_call("en")]), "Sent."])
    guard = _filter(phase=phase, tool_arguments=tool_arguments)
    agent = Agent(id="a", model=model, tools=[send_message], output_processors=[guard])
    await agent.generate("go")
    assert (sent[0]["body"] == BODIES["en"][2]) is checked
    assert (sent[0]["body"] == BODIES["en"][0]) is not checked


async def test_a_call_without_a_match_passes_as_the_same_chunk() -> None:
    model = ScriptedModel(
        [ScriptedStep(tool_calls=[("send_message", {"to": "team", "body": "Lunch at 12?"})]), "ok"]
    )
    agent = Agent(id="a", model=model, tools=[send_message], output_processors=[_filter("block")])
    result = await agent.generate("go")
    assert result.tripwire is None and sent == [{"to": "team", "body": "Lunch at 12?"}]


@settings(max_examples=40, deadline=None)
@given(
    lang=st.sampled_from(LANGS),
    cuts=st.lists(st.integers(min_value=1, max_value=9), max_size=30),
)
async def test_text_held_before_a_call_is_released_redacted_ahead_of_it(lang: str, cuts: list[int]) -> None:
    """Whatever the chunking of the text before the call, the text comes out redacted as a whole, before
    the tool-call chunk, and the tool is handed the redacted arguments."""
    sent.clear()
    text, _, redacted = BODIES[lang]
    pieces = [Chunk.text_delta(p) for p in chunked(text, cuts)]
    step = ScriptedStep(
        chunks=[
            *pieces,
            Chunk(
                "tool-call",
                {"tool_call_id": "c1", "tool_name": "send_message", "args": {"to": "x", "body": text}},
            ),
        ]
    )
    agent = Agent(
        id="a", model=ScriptedModel([step, "ok"]), tools=[send_message], output_processors=[_filter()]
    )
    output = agent.stream("go")
    chunks = [c async for c in output.full_stream]
    first_call = next(i for i, c in enumerate(chunks) if c.type == "tool-call")
    before = "".join(c.payload["text"] for c in chunks[:first_call] if c.type == "text-delta")
    assert before == redacted
    assert chunks[first_call].payload["args"] == {"to": "x", "body": redacted}
    assert sent == [{"to": "x", "body": redacted}] and leaks(dump_chunks(chunks)) == []


@pytest.mark.parametrize("shape", ["direct", "sequence", "nested"])
@pytest.mark.parametrize("lang", LANGS)
async def test_a_provider_error_retry_checks_the_call_of_the_accepted_attempt(lang: str, shape: str) -> None:
    broken = ScriptedStep(text="Sending", error=APICallError("overloaded", kind="overloaded"))
    model = ScriptedModel([broken, ScriptedStep(tool_calls=[_call(lang)]), "Sent."])
    agent = Agent(
        id="a",
        model=model,
        tools=[send_message],
        output_processors=listed(shape, lambda: [_filter()]),
        error_processors=[StreamErrorRetryProcessor(initial_delay=0)],
        max_processor_retries=2,
    )
    output = agent.stream("go")
    chunks = [c async for c in output.full_stream]
    assert output.tripwire is None and output.text == "Sent."
    assert sent == [{"to": "[EMAIL]", "body": BODIES[lang][2]}] and leaks(dump_chunks(chunks)) == []


@pytest.mark.parametrize("order", ["filter-first", "validator-first"])
async def test_an_output_step_retry_runs_only_the_accepted_call_redacted(order: str) -> None:
    """The rejected attempt's call never runs; the accepted attempt's runs with redacted arguments."""
    guards: list[Any] = [_filter(), RejectFirstStep()]
    if order == "validator-first":
        guards.reverse()
    model = ScriptedModel(
        [ScriptedStep(tool_calls=[_call("zh")]), ScriptedStep(tool_calls=[_call("es")]), "Sent."],
        repeat_last=True,
    )
    agent = Agent(
        id="a", model=model, tools=[send_message], output_processors=guards, max_processor_retries=1
    )
    output = agent.stream("go")
    chunks = [c async for c in output.full_stream]
    assert output.tripwire is None
    assert sent == [{"to": "[EMAIL]", "body": BODIES["es"][2]}] and leaks(dump_chunks(chunks)) == []


@pytest.mark.parametrize("mode", ["generate", "stream"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("lang", LANGS)
async def test_tool_results_and_data_chunks_reach_the_consumer_redacted(
    lang: str, shape: str, mode: str
) -> None:
    model = ScriptedModel([ScriptedStep(tool_calls=[("read_account", {"lang": lang})]), "Here it is."])
    agent = Agent(
        id="a", model=model, tools=[read_account], output_processors=listed(shape, lambda: [_filter()])
    )
    outcome, chunks = await _run(agent, mode)
    assert outcome.tripwire is None and outcome.text == "Here it is."
    if mode == "stream":
        kinds = {c.type for c in chunks}
        assert {"tool-result", "data-progress"} <= kinds
        [result] = [c for c in chunks if c.type == "tool-result"]
        assert result.payload["result"] == {"owner": "[EMAIL]", "notes": [BODIES[lang][2]]}
        [progress] = [c for c in chunks if c.type == "data-progress"]
        assert progress.payload["data"] == {"step": "found", "note": BODIES[lang][2]}
        assert leaks(dump_chunks(chunks)) == []


@pytest.mark.parametrize("lang", LANGS)
async def test_block_trips_on_a_tool_result_before_the_consumer_sees_it(lang: str) -> None:
    model = ScriptedModel([ScriptedStep(tool_calls=[("read_account", {"lang": lang})]), "Here it is."])
    guard = _filter("block")
    agent = Agent(id="a", model=model, tools=[read_account], output_processors=[guard])
    output = agent.stream("go")
    chunks = [c async for c in output.full_stream]
    assert output.tripwire is not None and output.tripwire.processor_id == "regex-filter"
    assert leaks(dump_chunks(chunks)) == [] and len(model.requests) == 1
    places = {m.get("chunk_type") or m.get("field") for m in output.tripwire.metadata["matches"]}
    assert places & {"data-progress", "result"}


async def test_reports_name_the_result_field_and_the_data_chunk() -> None:
    reports: list[ProcessorViolation] = []
    guard = _filter()
    guard.on_violation = reports.append
    model = ScriptedModel([ScriptedStep(tool_calls=[("read_account", {"lang": "zh"})]), "ok"])
    agent = Agent(id="a", model=model, tools=[read_account], output_processors=[guard])
    result = await agent.generate("go")
    details = [r.detail for r in reports if r.detail["phase"] == "process_output_stream"]
    call_id = result.steps[0].tool_calls[0].tool_call_id
    assert [(d.get("chunk_type"), d.get("tool_call_id"), d.get("field"), d["arg_path"]) for d in details] == [
        ("data-progress", None, None, ["note"]),
        (None, call_id, "result", ["owner"]),
        (None, call_id, "result", ["notes", 0]),
    ]


async def test_a_data_chunk_passes_ahead_of_held_text_and_the_text_stays_one_text() -> None:
    """The data chunk is checked on its own and overtakes the held text; the e-mail split around it is
    still redacted whole."""
    step = ScriptedStep(
        chunks=[
            Chunk.text_delta("write to ana.lo"),
            Chunk.data("data-progress", {"note": "key AKIAZ7Q3K9XW2M4T6PLB"}),
            Chunk.text_delta("pez@example.org today"),
        ]
    )
    agent = Agent(id="a", model=ScriptedModel([step]), output_processors=[_filter()])
    output = agent.stream("go")
    chunks = [c async for c in output.full_stream]
    data = [c for c in chunks if c.type == "data-progress"]
    assert [c.payload["data"] for c in data] == [{"note": "key [AWS_KEY]"}]
    assert output.text == "write to [EMAIL] today" and leaks(dump_chunks(chunks)) == []

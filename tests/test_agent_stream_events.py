"""Custom ``data-*`` chunks written by processors and tools: delivery, routing and storage."""

from __future__ import annotations

from typing import Any

import pytest
from _agent_support import MISUSE, MODES, call, misuse

from procflow import Agent, Chunk, DataPart, Message, ToolContext, tool
from procflow.processors import ProcessOutputResultArgs, ProcessOutputStepArgs, ProcessOutputStreamArgs
from procflow.testing import ScriptedModel, ScriptedStep


class ModerationProcessor:
    """The seed's example: emits a moderation update from ``process_output_result``."""

    id = "moderation"

    async def process_output_result(self, args: ProcessOutputResultArgs) -> list[Message]:
        text = " ".join(m.text for m in args.messages if m.role == "assistant")
        assert args.writer is not None
        await args.writer.custom(
            {
                "type": "data-moderation-update",
                "data": {
                    "original_text": text,
                    "moderated_text": text.replace("darn", "d**n"),
                    "reason": "mild",
                },
            }
        )
        return args.messages


class ModerationCollector:
    """The seed's collector: sees data chunks because it sets ``process_data_parts``."""

    id = "moderation-collector"
    process_data_parts = True

    def __init__(self) -> None:
        self.warnings: list[Any] = []

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        if args.part.type == "data-moderation-update":
            self.warnings.append(args.part.payload["data"])
        return args.part


@pytest.mark.parametrize("mode", MODES)
async def test_writer_custom_reaches_the_consumer_and_data_processors(mode: str) -> None:
    """A chunk written in ``process_output_result`` reaches the stream and processors that asked for data."""
    collector = ModerationCollector()
    agent = Agent(
        id="a", model=ScriptedModel(["oh darn"]), output_processors=[ModerationProcessor(), collector]
    )
    outcome = await call(agent, mode, "Hi")
    assert [w["moderated_text"] for w in collector.warnings] == ["oh d**n"]
    if mode == "stream":
        (chunk,) = [c for c in outcome.chunks if c.type == "data-moderation-update"]
        assert chunk.payload["data"]["reason"] == "mild"
        assert outcome.types[-1] == "finish"


class WrongType:
    id = "wrong-type"

    async def process_output_step(self, args: ProcessOutputStepArgs) -> None:
        assert args.writer is not None
        await args.writer.custom({"type": "moderation", "data": 1})


@pytest.mark.parametrize("mode", MODES)
async def test_custom_types_must_start_with_data(mode: str) -> None:
    """A custom chunk whose type lacks the ``data-`` prefix is refused with a clear error."""
    agent = Agent(id="a", model=ScriptedModel(["x"]), output_processors=[WrongType()])
    with pytest.raises(MISUSE) as caught:
        await call(agent, mode, "Hi")
    assert isinstance(misuse(caught.value), ValueError)
    assert "must start with 'data-'" in str(misuse(caught.value))


class Seen:
    """Records the chunk types it receives."""

    def __init__(self, processor_id: str, *, data_parts: bool) -> None:
        self.id = processor_id
        self.process_data_parts = data_parts
        self.types: list[str] = []

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        self.types.append(args.part.type)
        return args.part


@tool
async def book(seat: str, context: ToolContext) -> str:
    """Book a seat, reporting progress."""
    assert context.writer is not None
    await context.writer.custom({"type": "data-progress", "data": {"percent": 50}})
    await context.writer.custom({"type": "data-ping", "data": "transient", "transient": True})
    return f"booked {seat}"


@pytest.mark.parametrize("mode", MODES)
async def test_tool_data_reaches_only_processors_that_ask(mode: str) -> None:
    """Tool-written data chunks skip processors without ``process_data_parts`` and reach those with it."""
    plain, wants = Seen("plain", data_parts=False), Seen("wants-data", data_parts=True)
    model = ScriptedModel([ScriptedStep(tool_calls=[("book", {"seat": "12A"})]), "Booked."])
    agent = Agent(id="a", model=model, tools=[book], output_processors=[plain, wants])
    outcome = await call(agent, mode, "Book me")
    assert not any(t.startswith("data-") for t in plain.types)
    assert [t for t in wants.types if t.startswith("data-")] == ["data-progress", "data-ping"]
    if mode == "stream":
        assert outcome.types.index("data-progress") < outcome.types.index("tool-result")


@pytest.mark.parametrize("mode", MODES)
async def test_non_transient_tool_data_is_stored_on_the_step_message(mode: str) -> None:
    """Tool data chunks are stored as data parts of the step's message, except transient ones."""
    model = ScriptedModel([ScriptedStep(tool_calls=[("book", {"seat": "3C"})]), "Booked."])
    result = (await call(Agent(id="a", model=model, tools=[book]), mode, "Book me")).result
    parts = result.response.messages[0].content.parts
    assert [(p.type, p.data) for p in parts if isinstance(p, DataPart)] == [
        ("data-progress", {"percent": 50})
    ]


class Annotator:
    """A stream processor that writes a data chunk for each text chunk it sees."""

    id = "annotator"
    process_data_parts = True

    def __init__(self) -> None:
        self.data_seen: list[str] = []

    async def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        if args.part.is_data:
            self.data_seen.append(args.part.type)
        elif args.part.type == "text-delta":
            assert args.writer is not None
            await args.writer.custom(Chunk.data("data-note", {"len": len(args.part.text or "")}))
        return args.part


@pytest.mark.parametrize("mode", MODES)
async def test_processor_data_goes_through_later_processors_only(mode: str) -> None:
    """A data chunk a stream processor writes skips that processor and earlier ones, reaching later ones."""
    before, annotator, after = Seen("before", data_parts=True), Annotator(), Seen("after", data_parts=True)
    model = ScriptedModel([ScriptedStep(text="abcdef", chunk_size=3)])
    agent = Agent(id="a", model=model, output_processors=[before, annotator, after])
    outcome = await call(agent, mode, "Hi")
    assert annotator.data_seen == []
    assert [t for t in before.types if t.startswith("data-")] == []
    assert [t for t in after.types if t.startswith("data-")] == ["data-note", "data-note"]
    parts = outcome.result.response.messages[0].content.parts
    assert [p.type for p in parts] == ["text", "data-note", "text", "data-note"]
    if mode == "stream":
        assert outcome.types[1:5] == ["text-delta", "data-note", "text-delta", "data-note"]

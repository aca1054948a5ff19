"""Every stage kind in both phases, from one table: the same workflow on whole messages and on chunks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from procflow import Chunk, Message
from procflow.errors import WorkflowDefinitionError
from procflow.processors import ProcessInputArgs, ProcessOutputStreamArgs
from procflow.testing import run_input, run_output_stream
from procflow.workflows import (
    ProcessorStepSchema,
    StepContext,
    create_step,
    create_workflow,
    merge_branches,
    select,
)
from procflow.workflows._builder import WorkflowBuilder


class Replace:
    """Replaces one letter with another, in input messages and in streamed text alike."""

    def __init__(self, old: str, new: str) -> None:
        self.id = f"replace-{old}"
        self.old, self.new = old, new

    def process_input(self, args: ProcessInputArgs) -> list[Message]:
        return [m.with_text(m.text.replace(self.old, self.new)) for m in args.messages]

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        return Chunk.text_delta((args.part.text or "").replace(self.old, self.new))


def bang(ctx: StepContext[ProcessorStepSchema]) -> ProcessorStepSchema:
    """A plain ``.map``: appends "!" to each text — once per message phase, once per chunk in a stream."""
    data = ctx.input_data
    if data.phase == "output_stream":
        data.chunks = [Chunk.text_delta((c.text or "") + "!") for c in data.chunks]
    else:
        for message in data.messages:
            data.message_list.replace(message.with_text(message.text + "!"))
    return data


def has_x(ctx: StepContext[ProcessorStepSchema]) -> bool:
    return "x" in ctx.input_data.text


def guards(workflow_id: str = "stages") -> WorkflowBuilder:
    return create_workflow(
        id=workflow_id, input_schema=ProcessorStepSchema, output_schema=ProcessorStepSchema
    )


REJECTED = "rejected at commit"

# kind, workflow, message-phase input -> output, stream-phase chunks -> output
TABLE: list[tuple[str, Callable[[], WorkflowBuilder], list[str], str, list[str], str]] = [
    (
        "sequence",
        lambda: guards().then(Replace("a", "A")).then(Replace("b", "B")),
        ["abc"],
        "ABc",
        ["ab", "cb"],
        "ABcB",
    ),
    (
        "parallel + select",
        lambda: guards().parallel([Replace("a", "A"), Replace("b", "B")]).map(select("processor:replace-a")),
        ["abc"],
        "Abc",
        ["ab", "ba"],
        "AbbA",
    ),
    (
        "parallel + merge",
        lambda: guards().parallel([Replace("a", "A"), Replace("b", "B")]).map(merge_branches()),
        ["a", "b"],
        "A\nB",
        ["ab", "ba"],
        "ABBA",
    ),
    (
        "parallel + function",
        lambda: (
            guards()
            .parallel([Replace("a", "A"), Replace("b", "B")])
            .map(lambda ctx: ctx.input_data["processor:replace-b"])
        ),
        ["abc"],
        "aBc",
        ["ab", "ba"],
        "aBBa",
    ),
    (
        "branch (taken)",
        lambda: guards().branch([(has_x, create_step(Replace("a", "A")))]),
        ["xa"],
        "xA",
        ["xa"],
        "xA",
    ),
    (
        "branch (not taken)",
        lambda: guards().branch([(has_x, create_step(Replace("a", "A")))]),
        ["ya"],
        "ya",
        ["ya", "xa"],
        "yaxA",
    ),
    (
        "branch default",
        lambda: guards().branch([(has_x, create_step(Replace("a", "A")))], default=Replace("b", "B")),
        ["ab"],
        "aB",
        ["ab", "xa"],
        "aBxA",
    ),
    ("map", lambda: guards().then(Replace("a", "A")).map(bang), ["abc"], "Abc!", ["ab", "ca"], "Ab!cA!"),
    (
        "nested workflow",
        lambda: (
            guards("outer").then(guards("inner").then(Replace("a", "A")).commit()).then(Replace("b", "B"))
        ),
        ["abc"],
        "ABc",
        ["ab", "ba"],
        "ABBA",
    ),
    (
        "foreach",
        lambda: guards().foreach(create_step(id="each", execute=lambda ctx: ctx.input_data)),
        ["abc"],
        REJECTED,
        ["ab"],
        REJECTED,
    ),
]


@pytest.mark.parametrize(
    ("kind", "build", "text", "expected_text", "chunks", "expected_stream"),
    TABLE,
    ids=[row[0] for row in TABLE],
)
async def test_each_stage_kind_means_the_same_on_messages_and_on_chunks(
    kind: str,
    build: Callable[[], WorkflowBuilder],
    text: list[str],
    expected_text: str,
    chunks: list[str],
    expected_stream: str,
) -> None:
    """One stage class serves both phases: the message phase and the stream phase agree with the table."""
    if expected_text == REJECTED:
        with pytest.raises(WorkflowDefinitionError, match="foreach"):
            build().commit()
        return
    workflow: Any = build().commit()
    outcome = await run_input(workflow, text)
    assert outcome.tripwire is None
    assert outcome.text == expected_text
    streamed = await run_output_stream(workflow, chunks)
    assert streamed.tripwire is None
    assert streamed.text == expected_stream

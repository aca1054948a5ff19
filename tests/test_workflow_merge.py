"""merge_branches(): every branch's edits applied part by part, conflicts reported clearly."""

from __future__ import annotations

from typing import Any

import pytest

from procflow import Message, MessageContent, TextPart
from procflow.errors import BranchConflictError, WorkflowRunError
from procflow.processors import ProcessInputArgs, ProcessInputStepArgs
from procflow.workflows import (
    ProcessorStepSchema,
    Workflow,
    create_step,
    create_workflow,
    merge_branches,
)


class Edit:
    """Edits the input with a function of (index, message); optionally also the metadata."""

    def __init__(self, pid: str, edit: Any) -> None:
        self.id = pid
        self.edit = edit

    def process_input(self, args: ProcessInputArgs) -> list[Message]:
        return [self.edit(i, m) for i, m in enumerate(args.messages)]


def _part_edit(part: int, text: str) -> Any:
    def edit(_: int, message: Message) -> Message:
        parts = list(message.content.parts)
        parts[part] = TextPart(text=text)
        return message.model_copy(update={"content": message.content.model_copy(update={"parts": parts})})

    return edit


def _merged(*processors: Any) -> Workflow:
    return (
        create_workflow(id="merge", input_schema=ProcessorStepSchema, output_schema=ProcessorStepSchema)
        .parallel(list(processors))
        .map(merge_branches())
        .commit()
    )


def _two_parts() -> Message:
    return Message(role="user", content=MessageContent(parts=[TextPart(text="one"), TextPart(text="two")]))


async def test_edits_of_different_parts_merge() -> None:
    """Branches changing different parts of one message both take effect."""
    workflow = _merged(Edit("first", _part_edit(0, "ONE")), Edit("second", _part_edit(1, "TWO")))
    result = await workflow.run([_two_parts()])
    assert result.status == "success"
    assert [p.text for p in result.output.messages[0].content.parts] == ["ONE", "TWO"]


async def test_edits_of_different_messages_merge() -> None:
    """Each branch edits a different message; both edits survive."""
    first = Edit("first", lambda i, m: m.with_text("A") if i == 0 else m)
    second = Edit("second", lambda i, m: m.with_text("B") if i == 1 else m)
    result = await _merged(first, second).run(["a", "b"])
    assert [m.text for m in result.output.messages] == ["A", "B"]


async def test_identical_edits_merge() -> None:
    """Two branches making the same change do not conflict."""
    same = _part_edit(0, "same")
    result = await _merged(Edit("x", same), Edit("y", same)).run([_two_parts()])
    assert result.output.messages[0].content.parts[0].text == "same"


async def test_different_edits_of_one_part_conflict() -> None:
    """Two branches changing one part differently raise BranchConflictError naming both."""
    result = await _merged(Edit("x", _part_edit(0, "X")), Edit("y", _part_edit(0, "Y"))).run([_two_parts()])
    assert result.status == "failed"
    assert isinstance(result.error, BranchConflictError)
    assert "branches 'processor:x' and 'processor:y' changed part #0" in str(result.error)
    assert result.error.step_id == "map:1"


async def test_removing_a_message_another_branch_edited_conflicts() -> None:
    """A deletion and an edit of the same message conflict."""

    class Drop:
        id = "drop"

        def process_input(self, args: ProcessInputArgs) -> list[Message]:
            return []

    result = await _merged(Drop(), Edit("upper", lambda i, m: m.with_text("HI"))).run(["hi"])
    assert isinstance(result.error, BranchConflictError)
    assert "removed message" in str(result.error)


async def test_metadata_keys_and_added_messages_merge() -> None:
    """Different metadata keys merge; a message added by one branch is added."""

    class Tag:
        def __init__(self, key: str) -> None:
            self.id = f"tag-{key}"
            self.key = key

        def process_input(self, args: ProcessInputArgs) -> None:
            for message in args.messages:
                message.content.metadata[self.key] = True

    class AddNote:
        id = "note"

        def process_input(self, args: ProcessInputArgs) -> list[Message]:
            return [*args.messages, Message.user("note")]

    result = await _merged(Tag("a"), Tag("b"), AddNote()).run(["hello"])
    messages = result.output.messages
    assert [m.text for m in messages] == ["hello", "note"]
    assert messages[0].metadata == {"a": True, "b": True}


async def test_system_messages_and_step_settings_merge() -> None:
    """One branch replaces the system messages, another sets a step setting; both apply."""

    class System:
        id = "system"

        def process_input_step(self, args: ProcessInputStepArgs) -> dict[str, Any]:
            return {"system_messages": ["be brief"]}

    class Options:
        id = "options"

        def process_input_step(self, args: ProcessInputStepArgs) -> dict[str, Any]:
            return {"tool_choice": "none", "provider_options": {"seed": 1}}

    data = ProcessorStepSchema.for_input_step(["hi"], system_messages=["be verbose"])
    result = await _merged(System(), Options()).run(data)
    assert [m.text for m in result.output.system_messages] == ["be brief"]
    assert result.output.settings.tool_choice == "none"
    assert result.output.settings.provider_options == {"seed": 1}


async def test_stream_chunks_merge_when_one_branch_changed_them() -> None:
    """Run by hand on stream data, an unchanged branch and a changed one merge to the change."""

    class Upper:
        id = "upper"

        def process_output_stream(self, args: Any) -> Any:
            return type(args.part).text_delta((args.part.text or "").upper())

    class Same:
        id = "same"

        def process_output_stream(self, args: Any) -> Any:
            return args.part

    result = await _merged(Upper(), Same()).run(ProcessorStepSchema.for_output_stream(["abc"]))
    assert result.output.text == "ABC"


async def test_merge_branches_needs_a_parallel_block() -> None:
    """merge_branches() anywhere else is a clear run-time error."""
    step = create_step(id="s", execute=lambda ctx: ctx.input_data)
    result = await create_workflow(id="w").then(step).map(merge_branches()).commit().run(1)
    assert isinstance(result.error, WorkflowRunError)
    assert "right after a .parallel" in str(result.error)


async def test_branches_that_do_nothing_in_the_phase_are_not_copied() -> None:
    """A branch whose processor lacks the phase's hook passes the very input through."""

    class OnlyResult:
        id = "only-result"

        def process_output_result(self, args: Any) -> None:
            return None

    seen: dict[str, Any] = {}
    workflow = (
        create_workflow(id="w", input_schema=ProcessorStepSchema, output_schema=ProcessorStepSchema)
        .parallel([OnlyResult(), Edit("e", lambda i, m: m)])
        .map(lambda ctx: seen.update(ctx.input_data) or ctx.input_data.base)
        .commit()
    )
    data = ProcessorStepSchema.for_input(["x"])
    await workflow.run(data)
    assert seen["processor:only-result"] is data
    assert seen["processor:e"] is not data


def test_merge_result_is_processor_data() -> None:
    """A merge map's output schema is the processor schema (so a processor step may follow)."""
    workflow = _merged(Edit("x", lambda i, m: m), Edit("y", lambda i, m: m))
    assert workflow.plan.nodes["map:1"].output_schema is ProcessorStepSchema


@pytest.mark.parametrize("phase", ["input", "output_result"])
async def test_merge_of_unchanged_branches_keeps_the_input(phase: str) -> None:
    """When no branch changed anything, the merged output is the block's input."""
    workflow = _merged(Edit("x", lambda i, m: m), Edit("y", lambda i, m: m))
    data = (
        ProcessorStepSchema.for_input(["a"])
        if phase == "input"
        else ProcessorStepSchema.for_output_result(["a"])
    )
    result = await workflow.run(data)
    assert result.output is data

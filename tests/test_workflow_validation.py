"""commit() validation: every rule raises WorkflowDefinitionError naming the step and the fix."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from workflow_support import PIIDetector, moderation_processor, prompt_injection_detector

from procflow.errors import WorkflowDefinitionError
from procflow.workflows import (
    ProcessorStepSchema,
    StepContext,
    create_step,
    create_workflow,
    merge_branches,
    select,
)


def _step(step_id: str, input_schema: Any = Any, output_schema: Any = Any) -> Any:
    return create_step(
        id=step_id, execute=lambda ctx: ctx.input_data, input_schema=input_schema, output_schema=output_schema
    )


def _processor_workflow(workflow_id: str = "guards") -> Any:
    return create_workflow(
        id=workflow_id, input_schema=ProcessorStepSchema, output_schema=ProcessorStepSchema
    )


def test_empty_workflow() -> None:
    """A workflow without steps cannot be committed."""
    with pytest.raises(WorkflowDefinitionError, match=r"has no steps\. Fix: add at least one step"):
        create_workflow(id="empty").commit()


def test_duplicate_step_ids() -> None:
    """Two steps with one id are rejected, naming the id."""
    with pytest.raises(WorkflowDefinitionError, match="used twice") as caught:
        create_workflow(id="w").then(_step("a")).parallel([_step("b"), _step("a")]).commit()
    assert caught.value.step_id == "a"
    assert caught.value.fix is not None and "unique id" in caught.value.fix


def test_same_processor_used_twice() -> None:
    """The same processor twice gives a duplicate processor step id; the fix suggests id=..."""
    pii = PIIDetector()
    with pytest.raises(WorkflowDefinitionError, match="used twice") as caught:
        _processor_workflow().then(create_step(pii)).then(create_step(pii)).commit()
    assert caught.value.step_id == "processor:pii-detector"
    assert "id='pii-detector-2'" in str(caught.value)


def test_same_processor_in_a_nested_workflow_and_outside() -> None:
    """A processor id reused across nesting levels is rejected (state would be shared)."""
    inner = _processor_workflow("inner").then(PIIDetector()).commit()
    with pytest.raises(WorkflowDefinitionError, match="appears in both 'outer' and 'inner'"):
        _processor_workflow("outer").then(PIIDetector()).then(inner).commit()


def test_reference_to_an_unknown_step() -> None:
    """select() of a step that does not exist lists the known ids."""
    with pytest.raises(WorkflowDefinitionError, match="unknown step 'nope'") as caught:
        create_workflow(id="w").parallel([_step("a"), _step("b")]).map(select("nope")).commit()
    assert caught.value.step_id == "map:1"
    assert caught.value.fix is not None and "a, b" in caught.value.fix


def test_reference_to_a_step_that_has_not_run_yet() -> None:
    """select() of a later step is rejected."""
    with pytest.raises(WorkflowDefinitionError, match="'later', which has not run yet"):
        create_workflow(id="w").then(_step("a")).map(select("later")).then(_step("later")).commit()


def test_processor_workflow_selects_only_from_the_block_before() -> None:
    """In a processor workflow, select() must name a branch of the parallel block just before it."""
    with pytest.raises(WorkflowDefinitionError, match="not a branch of the parallel block right before it"):
        (
            _processor_workflow()
            .then(PIIDetector())
            .parallel([prompt_injection_detector(), moderation_processor()])
            .map(select("processor:pii-detector"))
            .commit()
        )


@pytest.mark.parametrize("ending", ["processor", "end"])
def test_parallel_processor_block_needs_a_selection(ending: str) -> None:
    """A processor parallel block followed by a processor step or the end says to add select/merge."""
    builder = _processor_workflow().parallel([PIIDetector(), prompt_injection_detector()])
    if ending == "processor":
        builder = builder.then(moderation_processor())
    with pytest.raises(WorkflowDefinitionError) as caught:
        builder.commit()
    assert caught.value.step_id == "parallel:0"
    assert caught.value.fix is not None
    assert ".map(select('processor:pii-detector'))" in caught.value.fix
    assert ".map(merge_branches())" in caught.value.fix


def test_schema_mismatch_between_steps() -> None:
    """A step whose input schema cannot take the previous output names both schemas."""
    with pytest.raises(
        WorkflowDefinitionError, match=r"input schema str cannot accept int, which step 'count'"
    ) as e:
        create_workflow(id="w").then(_step("count", output_schema=int)).then(
            _step("shout", input_schema=str)
        ).commit()
    assert e.value.step_id == "shout"


def test_parallel_output_must_fit_the_next_model() -> None:
    """After a parallel block, a model input needs fields for the branch ids it requires."""

    class Both(BaseModel):
        double: int
        square: int

    ok = create_workflow(id="ok").parallel(
        [_step("double", output_schema=int), _step("square", output_schema=int)]
    )
    ok.then(_step("sum", input_schema=Both)).commit()
    bad = create_workflow(id="bad").parallel(
        [_step("double", output_schema=int), _step("cube", output_schema=int)]
    )
    with pytest.raises(WorkflowDefinitionError, match=r"cannot accept \{double: int, cube: int\}"):
        bad.then(_step("sum", input_schema=Both)).commit()


def test_workflow_output_schema_must_fit_the_last_step() -> None:
    """The workflow's output schema must accept what the last step returns."""
    with pytest.raises(WorkflowDefinitionError, match="output schema int cannot accept str"):
        create_workflow(id="w", output_schema=int).then(_step("s", output_schema=str)).commit()


def test_nesting_a_workflow_inside_itself() -> None:
    """A workflow containing (at any depth) a workflow with its own id is rejected."""
    inner = create_workflow(id="loop").then(_step("a")).commit()
    middle = create_workflow(id="middle").then(inner).commit()
    with pytest.raises(WorkflowDefinitionError, match=r"contains itself \(loop -> middle -> loop\)"):
        create_workflow(id="loop").then(middle).commit()
    builder = create_workflow(id="self")
    with pytest.raises(WorkflowDefinitionError, match="cannot contain itself"):
        builder.then(builder)


def test_nesting_an_uncommitted_workflow() -> None:
    """Nesting a builder asks to commit it first."""
    inner = create_workflow(id="inner").then(_step("a"))
    with pytest.raises(WorkflowDefinitionError, match="not committed yet"):
        create_workflow(id="outer").then(inner)


def test_foreach_needs_a_list() -> None:
    """.foreach after a step returning a non-list is rejected; in processor workflows always."""
    with pytest.raises(WorkflowDefinitionError, match=r"\.foreach needs a list, but step 's' returns int"):
        create_workflow(id="w").then(_step("s", output_schema=int)).foreach(_step("each")).commit()
    with pytest.raises(WorkflowDefinitionError, match="foreach has nothing to iterate over"):
        _processor_workflow().foreach(PIIDetector()).commit()


def test_empty_blocks_are_rejected_at_once() -> None:
    """.parallel([]) and .branch([]) fail when called."""
    with pytest.raises(WorkflowDefinitionError, match="has no steps"):
        create_workflow(id="w").parallel([])
    with pytest.raises(WorkflowDefinitionError, match="has no cases"):
        create_workflow(id="w").branch([])


def test_implicit_steps_get_deterministic_ids() -> None:
    """map and branch steps are named by their position; a map may be given its own id."""

    def is_big(ctx: StepContext[int]) -> bool:
        return ctx.input_data > 10

    workflow = (
        create_workflow(id="w", input_schema=int)
        .then(_step("a", int, int))
        .branch([(is_big, _step("big", int, int))])
        .map(lambda ctx: ctx.input_data, id="identity")
        .map(lambda ctx: ctx.input_data)
        .commit()
    )
    assert list(workflow.plan.nodes) == ["a", "branch:1", "big", "identity", "map:3"]


def test_merge_branches_counts_as_a_selection() -> None:
    """A processor parallel block followed by merge_branches() commits."""
    workflow = (
        _processor_workflow().parallel([PIIDetector(), moderation_processor()]).map(merge_branches()).commit()
    )
    assert workflow.plan.nodes["map:1"].selection == "merge"

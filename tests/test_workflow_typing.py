"""Typed DSL at run time: schemas from annotations, explicit schemas checked against them, unwrap()."""

from __future__ import annotations

import functools
from typing import Any, NoReturn

import pytest
from pydantic import BaseModel

from procflow import TripWire
from procflow.errors import WorkflowDefinitionError, WorkflowRunError
from procflow.workflows import StepContext, create_step, create_workflow


class Order(BaseModel):
    sku: str
    quantity: int


@create_step()
def total_cents(ctx: StepContext[Order]) -> int:
    return ctx.input_data.quantity * 250


@create_step()
async def label(ctx: StepContext[int]) -> str:
    return f"{ctx.input_data} cents"


def test_schemas_default_to_the_annotations() -> None:
    """StepContext[Order] -> int gives Order in and int out; async functions give the awaited type."""
    assert (total_cents.input_schema, total_cents.output_schema) == (Order, int)
    assert (label.input_schema, label.output_schema) == (int, str)


async def test_the_annotated_input_is_validated_and_converted() -> None:
    """An annotated step validates its input as an explicit input_schema would (a dict becomes an Order)."""
    assert await total_cents.run({"sku": "mug", "quantity": "2"}) == 500
    with pytest.raises(WorkflowRunError, match="input does not match the step's input schema Order"):
        await total_cents.run({"sku": "mug"})


async def test_a_workflow_of_annotated_steps_runs_and_unwraps() -> None:
    """A workflow built from annotated steps runs; unwrap() returns the output of a successful run."""
    checkout = create_workflow(id="checkout", input_schema=Order).then(total_cents).then(label).commit()
    result = await checkout.run(Order(sku="mug", quantity=2))
    assert (result.status, result.output, result.unwrap()) == ("success", "500 cents", "500 cents")


def test_commit_checks_annotated_steps_against_each_other() -> None:
    """Two annotated steps that cannot follow each other fail at commit, naming both."""
    with pytest.raises(WorkflowDefinitionError, match=r"step 'total_cents': its input schema Order cannot"):
        create_workflow(id="w").then(label).then(total_cents).commit()


def test_explicit_schemas_that_agree_with_the_annotations_are_kept() -> None:
    """An explicit schema the annotation accepts (int into a float parameter) is the step's schema."""

    def halve(ctx: StepContext[float]) -> float:
        return ctx.input_data / 2

    step = create_step(id="halve", execute=halve, input_schema=int, output_schema=float)
    assert (step.input_schema, step.output_schema) == (int, float)


def test_an_explicit_input_schema_the_annotation_rejects_is_an_error() -> None:
    """input_schema=str on a StepContext[Order] function fails, saying which schema and how to fix it."""
    with pytest.raises(WorkflowDefinitionError) as caught:
        create_step(id="total", execute=total_cents.execute, input_schema=str)
    assert str(caught.value) == (
        "step 'total': input_schema=str does not match the function's annotation StepContext[Order]. "
        "Fix: make the two agree, or drop input_schema= (the annotation is the default)"
    )
    assert caught.value.step_id == "total"


def test_an_explicit_output_schema_the_annotation_rejects_is_an_error() -> None:
    """output_schema=int on a function annotated -> str fails, in the decorator form too."""
    with pytest.raises(WorkflowDefinitionError, match=r"output_schema=int does not match .* -> str\. Fix: "):

        @create_step(output_schema=int)
        def shout(ctx: StepContext[str]) -> str:
            return ctx.input_data.upper()


def test_unannotated_and_uninformative_annotations_leave_any() -> None:
    """Lambdas, StepContext[Any], -> None and -> NoReturn say nothing: the schemas stay Any."""

    def act(ctx: StepContext[Any]) -> None:
        return None

    def fail(ctx: StepContext) -> NoReturn:
        raise KeyError("missing")

    for fn in (lambda ctx: ctx.input_data, act, fail):
        step = create_step(id="s", execute=fn)
        assert (step.input_schema, step.output_schema) == (Any, Any)


def test_an_unresolvable_annotation_falls_back_to_the_explicit_schema() -> None:
    """A forward reference to a class defined inside a function cannot be read: Any, or the explicit one."""

    class Local(BaseModel):
        name: str

    def greet(ctx: StepContext[Local]) -> str:
        return ctx.input_data.name

    assert create_step(id="greet", execute=greet).input_schema is Any
    assert create_step(id="greet", execute=greet, input_schema=Local).input_schema is Local


def test_callable_objects_and_partials_are_read_through() -> None:
    """An object's __call__ and a partial's function carry the annotations."""

    class Scale:
        def __call__(self, ctx: StepContext[int]) -> float:
            return ctx.input_data * 1.5

    def add(ctx: StepContext[int], amount: int = 0) -> int:
        return ctx.input_data + amount

    assert create_step(id="scale", execute=Scale()).input_schema is int
    plus = create_step(id="plus", execute=functools.partial(add, amount=2))
    assert (plus.input_schema, plus.output_schema) == (int, int)


async def test_unwrap_raises_what_stopped_the_run() -> None:
    """unwrap() raises the tripwire of a tripped run and the error of a failed one."""

    @create_step()
    def stop(ctx: StepContext[int]) -> int:
        ctx.abort("too big")

    tripped = await create_workflow(id="t", input_schema=int).then(stop).commit().run(1)
    with pytest.raises(TripWire, match="too big"):
        tripped.unwrap()
    failed = await create_workflow(id="f", input_schema=Order).then(total_cents).commit().run("x")
    with pytest.raises(WorkflowRunError, match="input does not match"):
        failed.unwrap()

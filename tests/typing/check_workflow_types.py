"""Static types of the workflow DSL, checked by ``mypy --strict tests/typing`` (``make types``).

Not collected by pytest: nothing here runs. Each ``assert_type`` states what mypy must infer for a user
who annotates nothing but their step functions; a wrong inference fails ``make types``.
"""

from __future__ import annotations

from typing import Any, assert_type

from pydantic import BaseModel

from procflow import Message, Tool, tool
from procflow.processors import ProcessInputArgs
from procflow.workflows import (
    BranchOutputs,
    FunctionStep,
    ProcessorStepSchema,
    StepContext,
    Workflow,
    WorkflowResult,
    create_step,
    create_workflow,
    merge_branches,
    select,
)
from procflow.workflows._builder import WorkflowBuilder
from procflow.workflows._selection import Selection
from procflow.workflows._steps import ProcessorStep


class Order(BaseModel):
    sku: str
    quantity: int


class Receipt(BaseModel):
    order: Order
    cents: int


class Redactor:
    id = "redactor"

    def process_input(self, args: ProcessInputArgs) -> list[Message]:
        return args.messages


@create_step()
def total_cents(ctx: StepContext[Order]) -> int:
    """Price of the order, in cents."""
    return ctx.input_data.quantity * 250


@create_step(id="receipt")
async def receipt(ctx: StepContext[int]) -> Receipt:
    """An async step: its output type is the awaited one."""
    order = Order.model_validate(ctx.init_data)
    return Receipt(order=order, cents=ctx.input_data)


def is_bulk(ctx: StepContext[Order]) -> bool:
    return ctx.input_data.quantity >= 100


async def check_create_step_forms() -> None:
    """The three forms of create_step, and a step run alone."""
    assert_type(total_cents, FunctionStep[Order, int])
    assert_type(receipt, FunctionStep[int, Receipt])
    add_shipping = create_step(id="add-shipping", execute=lambda ctx: ctx.input_data + 499, input_schema=int)
    assert_type(add_shipping, FunctionStep[Any, Any])

    def shipping(ctx: StepContext[int]) -> int:
        return ctx.input_data + 499

    assert_type(create_step(id="shipping", execute=shipping), FunctionStep[int, int])
    assert_type(create_step(Redactor()), ProcessorStep)
    assert_type(create_step(total_cents), FunctionStep[Order, int])  # a step is returned as it is
    assert_type(await total_cents.run(Order(sku="mug", quantity=2)), int)
    assert_type(await create_step(Redactor()).run(["hello"]), ProcessorStepSchema)


async def check_builder_and_result() -> None:
    """Each stage changes the builder's output type; the result's output has the last one."""
    start = create_workflow(id="checkout", input_schema=Order)
    assert_type(start, WorkflowBuilder[Order, Order])
    priced = start.then(total_cents)
    assert_type(priced, WorkflowBuilder[Order, int])
    checkout = priced.then(receipt).commit()
    assert_type(checkout, Workflow[Order, Receipt])
    result = await checkout.run(Order(sku="mug", quantity=2))
    assert_type(result, WorkflowResult[Receipt])
    assert_type(result.output, Receipt | None)
    assert_type(result.unwrap(), Receipt)
    assert_type(result.unwrap().cents, int)


async def check_map_parallel_branch_foreach() -> None:
    """.map follows its function, .parallel gives the branch outputs, .foreach a list."""
    labelled = (
        create_workflow(id="labels", input_schema=Order)
        .map(lambda ctx: ctx.input_data.sku)  # the lambda's ctx is a StepContext[Order]
        .commit()
    )
    assert_type(labelled, Workflow[Order, str])

    async def label(ctx: StepContext[Order]) -> str:
        return ctx.input_data.sku

    assert_type(create_workflow(id="a", input_schema=Order).map(label), WorkflowBuilder[Order, str])
    both = create_workflow(id="both", input_schema=Order).parallel([total_cents, total_cents])
    assert_type(both, WorkflowBuilder[Order, BranchOutputs])
    assert_type(select(total_cents), Selection[int])
    assert_type(both.map(select(total_cents)), WorkflowBuilder[Order, int])
    assert_type(both.map(select("total_cents")), WorkflowBuilder[Order, Any])
    routed = create_workflow(id="route", input_schema=Order).branch(
        [(is_bulk, total_cents)], default=total_cents
    )
    assert_type(routed, WorkflowBuilder[Order, int])
    passthrough = create_workflow(id="maybe", input_schema=Order).branch([(is_bulk, total_cents)])
    assert_type(passthrough, WorkflowBuilder[Order, int | Order])  # no match: the input goes on
    orders = create_workflow(id="many", input_schema=list[Order]).foreach(total_cents, concurrency=4)
    assert_type(orders.commit(), Workflow[list[Order], list[int]])
    nested = create_workflow(id="outer", input_schema=Order).then(labelled).commit()
    assert_type(nested, Workflow[Order, str])


async def check_processor_workflow() -> None:
    """A processor workflow takes processors as they are and runs on messages or its data."""
    guards = (
        create_workflow(id="guards", input_schema=ProcessorStepSchema, output_schema=ProcessorStepSchema)
        .then(Redactor())
        .parallel([create_step(Redactor())])
        .map(merge_branches())
        .commit()
    )
    assert_type(guards, Workflow[ProcessorStepSchema, ProcessorStepSchema])
    assert_type(await guards.run(["hello"]), WorkflowResult[ProcessorStepSchema])


def check_untyped_builders_stay_any() -> None:
    """Without an input schema everything is Any, as before."""
    loose = create_workflow(id="loose").then(total_cents).commit()
    assert_type(loose, Workflow[Any, int])


def check_tool_forms() -> None:
    """tool(fn), @tool and @tool(name=...) all give a Tool."""

    def lookup(order_id: str) -> str:
        """Look an order up."""
        return order_id

    assert_type(tool(lookup), Tool)

    @tool
    def bare(order_id: str) -> str:
        """Look an order up."""
        return order_id

    @tool(name="find")
    async def named(order_id: str) -> str:
        """Look an order up."""
        return order_id

    assert_type(bare, Tool)
    assert_type(named, Tool)

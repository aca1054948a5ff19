"""The DSL: create_step's three forms, schemas validated at run time, and running one step alone."""

from __future__ import annotations

import pytest
from pydantic import BaseModel
from workflow_support import PIIDetector, prompt_injection_detector

from procflow import Chunk, Message, RequestContext, TripWire
from procflow._messages import OutputResult
from procflow.errors import ConfigurationError, WorkflowRunError
from procflow.processors import ProcessInputStepArgs, ProcessOutputStepArgs
from procflow.workflows import FunctionStep, ProcessorStepSchema, StepContext, create_step, create_workflow
from procflow.workflows._steps import ProcessorStep


class Order(BaseModel):
    sku: str
    quantity: int


def test_processor_step_id_and_schemas() -> None:
    """create_step(processor) gives id processor:<id> and ProcessorStepSchema in and out."""
    step = create_step(PIIDetector())
    assert isinstance(step, ProcessorStep)
    assert step.id == "processor:pii-detector"
    assert step.input_schema is ProcessorStepSchema
    assert step.output_schema is ProcessorStepSchema


async def test_plain_form_validates_and_converts_input() -> None:
    """create_step(id=..., execute=...) validates the input against its pydantic schema."""
    step = create_step(
        id="total", input_schema=Order, output_schema=int, execute=lambda ctx: ctx.input_data.quantity * 2
    )
    assert isinstance(step, FunctionStep)
    assert await step.run({"sku": "a", "quantity": "3"}) == 6
    with pytest.raises(WorkflowRunError, match="input does not match the step's input schema Order"):
        await step.run({"sku": "a"})


async def test_decorator_form_takes_the_function_name_and_async_body() -> None:
    """@create_step(...) on an async function makes a step named after it."""

    @create_step(input_schema=int, output_schema=int)
    async def double(ctx: StepContext[int]) -> int:
        return ctx.input_data * 2

    assert double.id == "double"
    assert await double.run(21) == 42


async def test_step_run_sees_request_context_and_earlier_results() -> None:
    """step.run passes the request context and given earlier results to the step."""

    @create_step(id="greet")
    def greet(ctx: StepContext[str]) -> str:
        return f"{ctx.request_context.get('greeting')} {ctx.input_data}{ctx.get_step_result('punct')}"

    out = await greet.run("Ada", request_context=RequestContext({"greeting": "Hi"}), results={"punct": "!"})
    assert out == "Hi Ada!"


async def test_asking_for_a_step_that_has_not_run_is_a_clear_error() -> None:
    """get_step_result of an unknown step names it and says it has not run."""
    step = create_step(id="reader", execute=lambda ctx: ctx.get_step_result("nowhere"))
    with pytest.raises(WorkflowRunError, match="'nowhere', which has not run"):
        await step.run(None)


async def test_step_abort_raises_a_tripwire_naming_the_step() -> None:
    """ctx.abort in a plain step raises a TripWire whose processor_id is the step id."""
    step = create_step(id="gate", execute=lambda ctx: ctx.abort("closed", metadata={"k": 1}))
    with pytest.raises(TripWire) as caught:
        await step.run("x")
    assert caught.value.info().processor_id == "gate"
    assert caught.value.metadata == {"k": 1}


async def test_processor_step_runs_alone_in_the_input_phase() -> None:
    """A processor step run on a list of messages runs process_input on them."""
    out = await create_step(PIIDetector()).run(["call 5551234"])
    assert out.text == "call [REDACTED]"


async def test_processor_step_passes_through_a_phase_it_lacks() -> None:
    """A processor step without the phase's hook returns the data untouched."""
    data = ProcessorStepSchema.for_output_result(["order 12345"])
    out = await create_step(prompt_injection_detector()).run(data)
    assert out is data
    assert out.text == "order 12345"


async def test_processor_step_runs_alone_in_every_phase() -> None:
    """Input-step, output-stream, output-step and output-result phases call the matching hook."""

    class Everywhere:
        id = "everywhere"

        def process_input_step(self, args: ProcessInputStepArgs) -> dict[str, str]:
            return {"tool_choice": "none"}

        def process_output_stream(self, args: object) -> Chunk:
            return Chunk.text_delta("streamed")

        def process_output_step(self, args: ProcessOutputStepArgs) -> None:
            args.abort("too short", retry=True)

        def process_output_result(self, args: object) -> list[Message]:
            return [Message.assistant("final")]

    step = create_step(Everywhere())
    stepped = await step.run(ProcessorStepSchema.for_input_step(["hi"], step_number=2))
    assert stepped.settings is not None and stepped.settings.tool_choice == "none"
    streamed = await step.run(ProcessorStepSchema.for_output_stream(["a"]))
    assert streamed.text == "streamed"
    with pytest.raises(TripWire, match="too short"):
        await step.run(ProcessorStepSchema.for_output_step(["short"]))
    result = await step.run(ProcessorStepSchema.for_output_result(["x"], result=OutputResult(text="x")))
    assert result.text == "final"


def test_create_step_rejects_what_is_not_a_processor() -> None:
    """create_step(obj) on an object with no hook says how to make a plain step instead."""
    with pytest.raises(
        ConfigurationError, match=r"not a processor.*create_step\(id=\.\.\., execute=\.\.\.\)"
    ):
        create_step(object())


def test_create_step_returns_a_step_or_workflow_unchanged() -> None:
    """create_step on a step or a committed workflow returns it as it is."""
    step = create_step(id="s", execute=lambda ctx: 1)
    workflow = create_workflow(id="w").then(step).commit()
    assert create_step(step) is step
    assert create_step(workflow) is workflow


def test_steps_need_a_string_id_and_a_callable_execute() -> None:
    """Missing ids and non-callable bodies are configuration errors."""
    with pytest.raises(ConfigurationError, match="needs an id"):
        create_step(execute=lambda ctx: 1)
    with pytest.raises(ConfigurationError, match="execute must be a function"):
        create_step(id="x", execute=42)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="non-empty string id"):
        create_step(id="", execute=lambda ctx: 1)

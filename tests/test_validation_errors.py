"""Validation errors say what is wrong and how to fix it, and never quote the value they rejected —
not in their message, nor in the traceback a log would print (no chained pydantic error)."""

from __future__ import annotations

import traceback
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError, field_validator

from procflow import MessageList, tool
from procflow._error_rules import format_validation_error
from procflow.errors import ConfigurationError, ProcessorResultError, ToolArgumentsError, WorkflowRunError
from procflow.testing import run_input
from procflow.workflows import StepContext, create_step

SECRET = "sk-live-4f9a8c7e2b1d6a3f"


class Card(BaseModel):
    number: str

    @field_validator("number")
    @classmethod
    def _digits(cls, value: str) -> str:
        if not value.isdigit():
            raise ValueError(f"{value!r} is not a card number")  # a careless validator that quotes
        return value


def _shown(error: BaseException) -> str:
    """The error as a logged traceback shows it: its message and every chained cause or context."""
    return "".join(traceback.format_exception(error))


def _error(data: Any) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        Card.model_validate(data)
    return caught.value


def test_the_formatter_names_the_field_and_blanks_a_quoted_value() -> None:
    """A validator's message keeps its reason but shows <value> in place of the rejected value."""
    text = format_validation_error(_error({"number": SECRET}))
    assert SECRET not in text
    assert text == "number: Value error, '<value>' is not a card number"


def test_the_formatter_counts_what_it_leaves_out() -> None:
    """Past the limit, the remaining problems are counted rather than listed."""

    class Many(BaseModel):
        a: int
        b: int
        c: int

    with pytest.raises(ValidationError) as caught:
        Many.model_validate({})
    text = format_validation_error(caught.value, limit=2)
    assert text == "a: Field required; b: Field required; and 1 more problems"


def test_a_message_with_an_unknown_part_type_does_not_quote_the_type() -> None:
    """A part type that matches no member of the part union is reported without repeating it."""
    message = {"role": "user", "content": {"parts": [{"type": SECRET, "text": "hi"}]}}
    with pytest.raises(ConfigurationError) as caught:
        MessageList().add(message)
    text = _shown(caught.value)
    assert SECRET not in text
    assert "content.parts.0" in text and "a message looks like" in text


def test_tool_arguments_errors_tell_the_model_how_to_fix_them() -> None:
    """Invalid tool arguments name the field and ask for arguments matching the schema, without values."""

    @tool
    def charge(number: str, cents: int) -> str:
        """Charge a card."""
        return "ok"

    with pytest.raises(ToolArgumentsError) as caught:
        charge.validate_args({"number": 4, "cents": SECRET})
    text = _shown(caught.value)
    assert SECRET not in text
    assert "cents: Input should be a valid integer" in text
    assert "call the tool again with arguments that match its input schema" in text


async def test_a_step_input_error_does_not_quote_the_input() -> None:
    """A workflow step's input-schema error names the field and the fix, not the value."""

    @create_step()
    def pay(ctx: StepContext[Card]) -> str:
        return ctx.input_data.number

    with pytest.raises(WorkflowRunError) as caught:
        await pay.run({"number": SECRET})
    text = _shown(caught.value)
    assert SECRET not in text
    assert "number: Value error" in text and "make the step before it return that shape" in text


class _BadMessages:
    id = "bad-messages"

    def process_input(self, args: Any) -> list[dict[str, Any]]:
        return [{"role": SECRET, "content": "hello"}]


async def test_a_processor_returning_an_invalid_message_is_told_what_to_return() -> None:
    """A hook returning an invalid message mapping gets a ProcessorResultError without the value."""
    with pytest.raises(ProcessorResultError) as caught:
        await run_input(_BadMessages(), ["hi"])
    text = _shown(caught.value)
    assert SECRET not in text
    assert "role: Input should be" in text and "return Message objects or mappings" in text

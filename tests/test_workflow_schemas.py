"""Step schemas: which outputs a step accepts at build time, validators and names."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, Optional, TypedDict

import pytest
from pydantic import BaseModel, Field

from procflow._engine.schemas import (
    ParallelSchema,
    accepts,
    element_schema,
    make_validator,
    schema_name,
    union_of,
)
from procflow.errors import WorkflowRunError
from procflow.workflows import ProcessorStepSchema


class Order(BaseModel):
    sku: str
    quantity: int = 1


class Item(BaseModel):
    sku: str


class Pair(BaseModel):
    left: int
    right_side: int = Field(alias="right")


class Point(TypedDict):
    x: int


class Opaque:
    pass


@pytest.mark.parametrize(
    ("target", "source", "ok"),
    [
        (Any, int, True),
        (int, Any, True),
        (object, str, True),
        (float, int, True),
        (int, bool, True),
        (str, int, False),
        (Item, Order, True),
        (Order, Item, True),
        (Pair, Item, False),
        (Order, dict, True),
        (Order, str, False),
        (int | None, int, True),
        (Optional[str], int, False),  # noqa: UP045 - the typing spelling is what users write too
        (int, int | str, False),
        (int | str, int | str, True),
        (Annotated[int, "meta"], int, True),
        (int, Annotated[int, "meta"], True),
        (list[int], list[int], True),
        (Sequence[int], list[int], True),
        (list[int], list[str], False),
        (list[int], tuple[int, ...], False),
        (tuple[int, ...], tuple[int, ...], True),
        (list, list[int], True),
        (Literal["a"], str, True),
        (Point, dict, True),
        (ProcessorStepSchema, int, False),
        (ProcessorStepSchema, ProcessorStepSchema, True),
        (Opaque, Opaque, True),
    ],
)
def test_accepts(target: Any, source: Any, ok: bool) -> None:
    """accepts() fails only on what certainly cannot fit."""
    assert accepts(target, source) is ok


@pytest.mark.parametrize(
    ("target", "ok"),
    [
        (dict, True),
        (Mapping[str, int], True),
        (dict[str, Any] | None, True),
        (Pair, True),
        (Order, False),
        (int, False),
        (Literal["a"], True),
    ],
)
def test_accepts_parallel_output(target: Any, ok: bool) -> None:
    """A parallel block's dict fits mappings and models whose required fields are branch ids."""
    assert accepts(target, ParallelSchema((("left", int), ("right", int)))) is ok


@pytest.mark.parametrize(
    ("schema", "item"),
    [
        (list[int], int),
        (list, Any),
        (Any, Any),
        (tuple[str, ...], str),
        (int | None, Any),
        (Annotated[list[int], 1], Any),
    ],
)
def test_element_schema_of_lists(schema: Any, item: Any) -> None:
    """The item schema of a list-like schema (Any when unknown)."""
    assert element_schema(schema) == item


@pytest.mark.parametrize("schema", [int, str, dict, Order, ProcessorStepSchema, ParallelSchema(())])
def test_element_schema_of_non_lists(schema: Any) -> None:
    """Strings, mappings, models and scalars are not lists."""
    assert element_schema(schema) is None


def test_union_of() -> None:
    """Schemas combine into a union; Any and duplicates collapse."""
    assert union_of([int, int]) is int
    assert union_of([int, str]) == int | str
    assert union_of([int, Any]) is Any
    assert union_of([int, ParallelSchema(())]) is Any


@pytest.mark.parametrize(
    ("schema", "name"),
    [
        (Any, "Any"),
        (None, "None"),
        (int, "int"),
        (Order, "Order"),
        (list[Order], "list[Order]"),
        (dict[str, int | None], "dict[str, int | None]"),
        (tuple[int, ...], "tuple[int, ...]"),
        (Literal["a", "b"], "Literal['a', 'b']"),
        (Annotated[int, "x"], "int"),
        (ProcessorStepSchema, "ProcessorStepSchema"),
        (ParallelSchema((("a", int),)), "{a: int}"),
    ],
)
def test_schema_names(schema: Any, name: str) -> None:
    """Names are short and readable."""
    assert schema_name(schema) == name


def test_validators() -> None:
    """Validators convert through pydantic, check fast schemas by isinstance, accept unknown classes."""
    assert make_validator(Any, "s") is None
    validate = make_validator(Order, "s")
    assert validate is not None and validate({"sku": "a"}) == Order(sku="a")
    fast = make_validator(ProcessorStepSchema, "s")
    assert fast is not None
    with pytest.raises(WorkflowRunError, match="input is a int, not a ProcessorStepSchema"):
        fast(1)
    opaque = make_validator(Opaque, "s")
    assert opaque is not None
    thing = Opaque()
    assert opaque(thing) is thing
    with pytest.raises(WorkflowRunError, match="not a Opaque"):
        opaque(1)

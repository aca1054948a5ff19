"""MessageList.copy() (the fast message copy of parallel branches) equals model_copy(deep=True).

For random messages with every part kind, extras, metadata and nested data: the same values, fields
set, extras and private attributes as pydantic's deep copy, no mutable object shared with the original,
and a copy that takes new extras like the original does. Also run at the lowest supported pydantic
(see the report of issue 15 item 7): it needs only pydantic, hypothesis and pytest.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from procflow import (
    DataPart,
    FilePart,
    ImagePart,
    Message,
    MessageContent,
    MessageList,
    ReasoningPart,
    SourcePart,
    TextPart,
    ToolInvocationPart,
)
from procflow._messages.message import SignalInfo
from procflow._messages.parts import StepStartPart

_short = st.text(max_size=6)
_maybe = st.none() | _short
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _short,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_short, inner, max_size=3),
    max_leaves=8,
)
_extras = st.dictionaries(st.sampled_from(["x_tag", "x_data", "x_n"]), _json, max_size=2)


def _model(
    cls: type[BaseModel], required: dict[str, Any], optional: dict[str, Any]
) -> st.SearchStrategy[Any]:
    """``cls`` from the required fields, any subset of the optional ones (fields set vary) and extras."""
    fields = st.fixed_dictionaries(required, optional=optional)
    return st.builds(lambda values, extra: cls(**values, **extra), fields, _extras)


_parts = st.one_of(
    _model(TextPart, {"text": _short}, {}),
    _model(ReasoningPart, {"text": _short}, {"signature": _maybe}),
    _model(
        ToolInvocationPart,
        {"tool_call_id": _short, "tool_name": _short},
        {
            "args": st.dictionaries(_short, _json, max_size=3),
            "state": st.sampled_from(["call", "result"]),
            "result": _json,
            "is_error": st.booleans(),
            "model_output": _json,
        },
    ),
    _model(FilePart, {"media_type": _short}, {"data": _maybe, "url": _maybe, "filename": _maybe}),
    _model(ImagePart, {}, {"media_type": _short, "data": _maybe, "url": _maybe}),
    _model(SourcePart, {"source_id": _short}, {"url": _maybe, "title": _maybe}),
    _model(StepStartPart, {}, {}),
    _model(DataPart, {"type": _short.map(lambda s: f"data-{s}")}, {"data": _json, "id": _maybe}),
)
_contents = _model(
    MessageContent,
    {},
    {
        "parts": st.lists(_parts, max_size=4),
        "content": _maybe,
        "metadata": st.dictionaries(_short, _json, max_size=3),
        "format": st.integers(1, 3),
    },
)
_signals = _model(
    SignalInfo,
    {},
    {"type": _short, "tag_name": _short, "attributes": st.dictionaries(_short, _short, max_size=2)},
)
_messages = _model(
    Message,
    {"role": st.sampled_from(["user", "assistant", "system", "tool", "signal"])},
    {"content": _contents, "thread_id": _maybe, "resource_id": _maybe, "signal": st.none() | _signals},
)


def _models(value: Any) -> Iterator[BaseModel]:
    """Every pydantic model inside ``value`` (itself included), depth first."""
    if isinstance(value, BaseModel):
        yield value
        for child in (*value.__dict__.values(), *(value.model_extra or {}).values()):
            yield from _models(child)
    elif isinstance(value, list | tuple):
        for child in value:
            yield from _models(child)
    elif isinstance(value, dict):
        for child in value.values():
            yield from _models(child)


def _mutable_ids(value: Any) -> Iterator[int]:
    """The ids of every mutable object reachable from ``value``: models, their dicts and sets, containers."""
    if isinstance(value, BaseModel):
        yield from (id(value), id(value.__dict__), id(value.model_fields_set))
        if value.model_extra is not None:
            yield id(value.model_extra)
        for child in (*value.__dict__.values(), *(value.model_extra or {}).values()):
            yield from _mutable_ids(child)
    elif isinstance(value, list | dict | set):
        yield id(value)
        for child in value.values() if isinstance(value, dict) else value:
            yield from _mutable_ids(child)


def _copied(messages: list[Message]) -> tuple[list[Message], list[Message]]:
    """The stored messages and MessageList.copy()'s copies of them (system messages included)."""
    original = MessageList()
    original.add(messages)
    copy = original.copy()
    return (
        [*original.system_messages, *original.all],
        [*copy.system_messages, *copy.all],
    )


@settings(max_examples=100, deadline=None)
@given(st.lists(_messages, min_size=1, max_size=4))
def test_copy_equals_a_pydantic_deep_copy(messages: list[Message]) -> None:
    """Same values, fields set, extras and private attributes, model by model, as model_copy(deep=True)."""
    stored, copies = _copied(messages)
    for message, copy in zip(stored, copies, strict=True):
        deep = message.model_copy(deep=True)
        assert copy == deep == message
        assert copy.model_dump(exclude_unset=True) == deep.model_dump(exclude_unset=True)
        pairs = list(zip(_models(copy), _models(deep), strict=True))
        for got, want in pairs:
            assert type(got) is type(want)
            assert got.__dict__ == want.__dict__
            assert got.model_fields_set == want.model_fields_set
            assert got.model_extra == want.model_extra
            assert got.__pydantic_private__ == want.__pydantic_private__


@settings(max_examples=100, deadline=None)
@given(st.lists(_messages, min_size=1, max_size=4))
def test_copy_shares_no_mutable_object_and_takes_new_extras(messages: list[Message]) -> None:
    """Nothing mutable is shared with the original, and a new extra on the copy stays on the copy."""
    stored, copies = _copied(messages)
    for message, copy in zip(stored, copies, strict=True):
        assert set(_mutable_ids(copy)).isdisjoint(set(_mutable_ids(message)))
        before = message.model_dump()
        copy.x_note = "copy only"
        copy.content.x_note = "copy only"
        for part in copy.content.parts:
            part.x_note = "copy only"
        assert copy.model_extra is not None and copy.model_extra["x_note"] == "copy only"
        assert message.model_dump() == before

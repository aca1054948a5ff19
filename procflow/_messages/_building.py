"""Messages built from data procflow has just checked itself, without validating it a second time.

``procflow run`` reads millions of plain text turns whose shape its reader has already checked; a
pydantic validation of each would cost more than the rest of reading the turn. The models built here
are exactly those ``Message.model_validate`` returns for the same data (the same field values, fields
set and extras: ``tests/test_message_model.py`` checks), as ``model_construct`` would build them, at a
fraction of its cost.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from procflow._messages.message import Message, MessageContent, Role, _now
from procflow._messages.parts import TextPart

__all__ = ["text_message"]

_set = object.__setattr__
_new = object.__new__
_TEXT_SET = frozenset({"type", "text"})
_CONTENT_SET = frozenset({"parts", "content"})
_MESSAGE_SET = frozenset({"id", "role", "content"})


def _model(cls: type[BaseModel], values: dict[str, Any], fields_set: frozenset[str]) -> Any:
    """An instance of ``cls`` holding ``values`` (every field, in field order), set as
    ``model_construct`` sets them; ``fields_set`` names the fields given explicitly."""
    model = _new(cls)
    _set(model, "__dict__", values)
    _set(model, "__pydantic_fields_set__", set(fields_set))
    _set(model, "__pydantic_extra__", {})
    _set(model, "__pydantic_private__", None)
    return model


def text_message(message_id: str, role: Role, text: str) -> Message:
    """``Message.model_validate({"id": message_id, "role": role, "content": {"parts": [{"type":
    "text", "text": text}], "content": None}})``, without the validation (the caller checked the
    id, role and text are strings and the role one of :data:`Role`)."""
    part = _model(TextPart, {"type": "text", "text": text}, _TEXT_SET)
    content = _model(
        MessageContent, {"format": 2, "parts": [part], "content": None, "metadata": {}}, _CONTENT_SET
    )
    message: Message = _model(
        Message,
        {
            "id": message_id,
            "role": role,
            "content": content,
            "created_at": _now(),
            "thread_id": None,
            "resource_id": None,
            "signal": None,
        },
        _MESSAGE_SET,
    )
    return message

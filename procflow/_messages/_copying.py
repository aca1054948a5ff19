"""Fast deep copies of messages, for parallel branches that must never share edits."""

from __future__ import annotations

import copy
from typing import TypeVar

from pydantic import BaseModel

from procflow._messages.message import Message
from procflow._messages.parts import FilePart, ImagePart, ReasoningPart, SourcePart, StepStartPart, TextPart

__all__ = ["clone_message"]

_M = TypeVar("_M", bound=BaseModel)

_FLAT_PARTS = (TextPart, ReasoningPart, StepStartPart, FilePart, ImagePart, SourcePart)
"""Part types whose fields are all immutable (strings, booleans, None): a shallow copy is a deep one."""


def _shallow(model: _M) -> _M:
    """A shallow copy by pydantic's own ``__copy__``: pydantic copies its extras, fields set and private
    attributes itself, so this module never writes them."""
    return model.__copy__()


def clone_message(message: Message) -> Message:
    """Deep-copy ``message`` several times faster than ``model_copy(deep=True)`` (same result).

    Only what may be mutable is copied deeply: tool and data parts, metadata, the signal, extras. The
    copies are pydantic's own shallow copies with the copied fields put in their ``__dict__``, where
    pydantic keeps field values; no pydantic-internal attribute is written here.
    """
    content = message.content
    if message.model_extra or content.model_extra:
        return message.model_copy(deep=True)
    new_content = _shallow(content)
    new_content.__dict__["parts"] = [
        _shallow(p) if type(p) in _FLAT_PARTS and not p.model_extra else p.model_copy(deep=True)
        for p in content.parts
    ]
    new_content.__dict__["metadata"] = copy.deepcopy(content.metadata) if content.metadata else {}
    new = _shallow(message)
    new.__dict__["content"] = new_content
    if message.signal is not None:
        new.__dict__["signal"] = message.signal.model_copy(deep=True)
    return new

"""Resolving ``"provider/model"`` ids to :class:`LanguageModel` objects."""

from __future__ import annotations

from typing import Any

from procflow.errors import UnknownModelError
from procflow.models.base import LanguageModel

__all__ = ["resolve_model"]


def resolve_model(model: str | LanguageModel, **options: Any) -> LanguageModel:
    """Return ``model`` itself, or the provider model a ``"provider/model"`` id names.

    Raises:
        UnknownModelError: the id names no known provider.
        MissingAPIKeyError: the provider needs a key that is not set (the message names the variable).
    """
    if not isinstance(model, str):
        return model
    raise UnknownModelError(f"unknown model id {model!r}: no provider is registered yet")

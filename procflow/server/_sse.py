"""Server-sent events as the OpenAI streaming API writes them: ``data: <json>`` and a blank line."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["DONE_EVENT", "sse_event"]

DONE_EVENT = "data: [DONE]\n\n"
"""The last event of every stream."""


def sse_event(data: dict[str, Any]) -> str:
    """One ``data:`` event carrying ``data`` as compact JSON (JSON never contains a raw newline)."""
    return "data: " + json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n\n"

"""How tool-call arguments and tool results are written as text: one serialiser for the wire and the budget.

The provider wires (``procflow.models``) send a tool call's arguments and a tool's result as text, and
``TokenLimiter`` (``procflow.processors``) counts that text. Both use these functions, so the prompt the
limiter trimmed is, token for token, the prompt that is sent. Compact JSON with real characters: no
spaces after separators and no ``\\uXXXX`` escapes, which would cost up to six tokens per character of
a non-ASCII payload. It lives in layer 0 so that both layers can import it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["tool_args_text", "tool_result_text"]

# One encoder, built once: ``json.dumps`` with options builds a new encoder on every call, which costs
# more than encoding a small argument object. ``encode`` keeps no state between calls (thread-safe).
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


def tool_args_text(args: Mapping[str, Any]) -> str:
    """A tool call's arguments as the JSON text the model reads (compact, real characters)."""
    return _ENCODE(args)


def tool_result_text(result: Any) -> str:
    """A tool's result as the text the model reads: a string as it is, anything else as compact JSON."""
    if isinstance(result, str):
        return result
    return _ENCODE(result)

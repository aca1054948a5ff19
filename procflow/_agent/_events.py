"""The chunks the agent loop itself emits around the model's: step boundaries and tool results."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from procflow._messages.chunk import Chunk
from procflow._messages.message_list import UIMessage
from procflow._messages.results import FinishReason, ToolResult, Usage

__all__ = ["finish_chunk", "step_finish_chunk", "step_start_chunk", "tool_result_chunk"]


def step_start_chunk(step_number: int, retry_count: int) -> Chunk:
    """``step-start``: a model call begins (again, after a retry, with ``retry_count`` > 0)."""
    return Chunk("step-start", {"step_number": step_number, "retry_count": retry_count})


def step_finish_chunk(
    step_number: int, reason: FinishReason, usage: Usage, discarded: dict[str, Any] | None = None
) -> Chunk:
    """``step-finish``: a model call ended; ``discarded`` says why its output was thrown away."""
    payload: dict[str, Any] = {"step_number": step_number, "finish_reason": reason, "usage": usage.to_dict()}
    if discarded is not None:
        payload["discarded"] = discarded
    return Chunk("step-finish", payload)


def tool_result_chunk(result: ToolResult) -> Chunk:
    """``tool-result``: one executed tool call (with ``model_output`` when the tool declared one)."""
    payload = {
        "tool_call_id": result.tool_call_id,
        "tool_name": result.tool_name,
        "args": result.args,
        "result": result.result,
        "is_error": result.is_error,
    }
    if result.model_output is not None:
        payload["model_output"] = result.model_output
    return Chunk("tool-result", payload)


def finish_chunk(reason: FinishReason, usage: Usage, ui_messages: Sequence[UIMessage]) -> Chunk:
    """``finish``: the call's finish reason, total usage and response UI messages (JSON-ready)."""
    return Chunk(
        "finish",
        {
            "finish_reason": reason,
            "usage": usage.to_dict(),
            "response": {"ui_messages": [m.model_dump(mode="json") for m in ui_messages]},
        },
    )

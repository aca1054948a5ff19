"""Executing one step's tool calls: validated arguments, concurrent calls, errors fed back to the model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import anyio
from pydantic import BaseModel

from procflow._logging import log
from procflow._messages.chunk import Chunk
from procflow._messages.message import Message
from procflow._messages.parts import DataPart
from procflow._messages.request_context import RequestContext
from procflow._messages.results import ToolCall, ToolResult
from procflow._messages.writer import StreamWriter
from procflow._tools._tool import Tool, ToolContext
from procflow.errors import ToolError

__all__ = ["attach_data", "execute_tool_calls", "is_client_side", "record_results"]


def is_client_side(call: ToolCall, tools: Mapping[str, Tool]) -> bool:
    """Whether the call names a known tool without an ``execute`` function (the caller runs it)."""
    tool = tools.get(call.tool_name)
    return tool is not None and tool.execute is None


async def execute_tool_calls(
    calls: Sequence[ToolCall],
    tools: Mapping[str, Tool],
    *,
    request_context: RequestContext,
    writer: StreamWriter | None,
) -> list[ToolResult]:
    """Run the calls (concurrently when there are several) and return their results in call order.

    Unknown tools, invalid arguments and exceptions raised by a tool become error results
    (``is_error=True``) that the model sees on its next step, so it can correct itself.
    """
    results: list[ToolResult | None] = [None] * len(calls)

    async def run(index: int, call: ToolCall) -> None:
        results[index] = await _execute(call, tools, request_context, writer)

    if len(calls) == 1:
        await run(0, calls[0])
    elif calls:
        async with anyio.create_task_group() as group:
            for index, call in enumerate(calls):
                group.start_soon(run, index, call)
    return [r for r in results if r is not None]


async def _execute(
    call: ToolCall, tools: Mapping[str, Tool], request_context: RequestContext, writer: StreamWriter | None
) -> ToolResult:
    tool = tools.get(call.tool_name)
    if tool is None:
        known = ", ".join(sorted(tools)) or "none"
        return _error(call, f"unknown tool {call.tool_name!r}; available tools: {known}")
    context = ToolContext(tool_call_id=call.tool_call_id, request_context=request_context, writer=writer)
    try:
        value = await tool.call(call.args, context)
    except ToolError as exc:
        return _error(call, str(exc))
    except Exception as exc:
        log.warning("tool_failed", tool_name=call.tool_name, error_type=type(exc).__name__)
        return _error(call, f"tool {call.tool_name!r} failed: {type(exc).__name__}: {exc}")
    try:
        model_output = await tool.model_output(value)
    except Exception as exc:
        log.warning("tool_model_output_failed", tool_name=call.tool_name, error_type=type(exc).__name__)
        return _error(call, f"tool {call.tool_name!r}: to_model_output failed ({type(exc).__name__})")
    return ToolResult(
        call.tool_call_id, call.tool_name, call.args, _plain(value), model_output=_plain(model_output)
    )


def _error(call: ToolCall, message: str) -> ToolResult:
    return ToolResult(call.tool_call_id, call.tool_name, call.args, message, is_error=True)


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return value


def record_results(message: Message, results: Sequence[ToolResult]) -> None:
    """Complete the message's tool invocations with their results (state ``result``)."""
    by_id = {r.tool_call_id: r for r in results}
    for part in message.tool_invocations:
        done = by_id.get(part.tool_call_id)
        if done is not None:
            part.state, part.result, part.is_error = "result", done.result, done.is_error
            part.model_output = done.model_output


def attach_data(message: Message, chunks: Sequence[Chunk]) -> None:
    """Store the non-transient ``data-*`` chunks among ``chunks`` as data parts of ``message``."""
    message.content.parts.extend(
        DataPart(type=c.type, data=c.payload.get("data"), id=c.payload.get("id"))
        for c in chunks
        if c.type.startswith("data-") and not c.transient
    )

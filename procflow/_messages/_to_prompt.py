"""Converting stored messages to the provider-neutral prompt: tool calls paired with their results."""

from __future__ import annotations

from collections.abc import Iterable

from procflow._messages.message import Message, SignalInfo
from procflow._messages.parts import (
    FilePart,
    ImagePart,
    Part,
    ReasoningPart,
    StepStartPart,
    TextPart,
    ToolInvocationPart,
)
from procflow._messages.prompt import (
    PromptFile,
    PromptMessage,
    PromptPart,
    PromptReasoning,
    PromptText,
    PromptToolCall,
    PromptToolResult,
)
from procflow._messages.signals import render_signal

__all__ = ["answered_calls", "message_to_prompt"]

_NONE: frozenset[str] = frozenset()


def answered_calls(messages: Iterable[Message]) -> frozenset[str]:
    """The ids of the tool calls answered by a ``tool`` message (a replayed OpenAI-style conversation
    keeps each call in its assistant message and its result in a ``tool`` message after it)."""
    return frozenset(
        part.tool_call_id
        for message in messages
        if message.role == "tool"
        for part in message.tool_invocations
        if part.state == "result"
    )


def _user_content(message: Message) -> list[PromptPart]:
    content: list[PromptPart] = []
    for part in message.content.parts:
        if isinstance(part, TextPart):
            content.append(PromptText(text=part.text))
        elif isinstance(part, FilePart):
            content.append(
                PromptFile(media_type=part.media_type, data=part.data, url=part.url, filename=part.filename)
            )
        elif isinstance(part, ImagePart):
            content.append(PromptFile(media_type=part.media_type, data=part.data, url=part.url))
    if not any(isinstance(p, PromptText) for p in content) and message.content.content:
        content.insert(0, PromptText(text=message.content.content))
    return content


def _tool_result(part: ToolInvocationPart) -> PromptToolResult:
    """The model-facing result: the tool's declared model output in place of the raw result."""
    result = part.result if part.model_output is None else part.model_output
    return PromptToolResult(
        tool_call_id=part.tool_call_id, tool_name=part.tool_name, result=result, is_error=part.is_error
    )


def message_to_prompt(message: Message, answered: frozenset[str] = _NONE) -> list[PromptMessage]:
    """The prompt messages of one stored message. ``answered``: the ids of the calls a ``tool`` message
    answers (:func:`answered_calls`), which an assistant message sends as calls without a result."""
    if message.role == "signal":
        info = message.signal or SignalInfo()
        text = render_signal(message.text, tag_name=info.tag_name, attributes=info.attributes)
        return [PromptMessage(role="user", content=[PromptText(text=text)])]
    if message.role == "user":
        content = _user_content(message)
        return [PromptMessage(role="user", content=content)] if content else []
    if message.role == "tool":
        results: list[PromptPart] = [_tool_result(p) for p in message.tool_invocations if p.state == "result"]
        return [PromptMessage(role="tool", content=results)] if results else []
    if message.role == "assistant":
        return _assistant_to_prompt(message, answered)
    return []


def _assistant_to_prompt(message: Message, answered: frozenset[str]) -> list[PromptMessage]:
    out: list[PromptMessage] = []
    block: list[PromptPart] = []
    results: list[PromptPart] = []

    def flush() -> None:
        nonlocal block, results
        if block:
            out.append(PromptMessage(role="assistant", content=block))
        if results:
            out.append(PromptMessage(role="tool", content=results))
        block, results = [], []

    parts: list[Part] = list(message.content.parts)
    if not any(isinstance(p, TextPart) for p in parts) and message.content.content:
        parts.insert(0, TextPart(text=message.content.content))
    for part in parts:
        if isinstance(part, StepStartPart) or (results and not isinstance(part, ToolInvocationPart)):
            flush()
        if isinstance(part, TextPart):
            if part.text:
                block.append(PromptText(text=part.text))
        elif isinstance(part, ReasoningPart):
            block.append(PromptReasoning(text=part.text, signature=part.signature))
        elif isinstance(part, FilePart | ImagePart):
            block.append(PromptFile(media_type=part.media_type, data=part.data, url=part.url))
        elif isinstance(part, ToolInvocationPart) and (
            part.state == "result" or part.tool_call_id in answered
        ):
            block.append(
                PromptToolCall(tool_call_id=part.tool_call_id, tool_name=part.tool_name, args=part.args)
            )
            if part.state == "result":  # else a later ``tool`` message answers it
                results.append(_tool_result(part))
    flush()
    return out

"""A processor that applies a :class:`RegexFilterProcessor` to the arguments of tool calls.

The regex filter checks the text a message carries. Tool-call arguments are structured data, yet they
hold the same e-mail addresses and keys (``lookup_customer(email=...)``), so the bundled guard checks
every string inside them too.
"""

from __future__ import annotations

from typing import Any

from procflow.engine.context import RunContext, notify_violation
from procflow.engine.pipeline import ProcessorPipeline
from procflow.engine.runner import PhaseRunner
from procflow.messages.message import Message
from procflow.messages.message_list import MessageList
from procflow.messages.parts import ToolInvocationPart
from procflow.processors import RegexFilterProcessor
from procflow.processors.args import ProcessInputArgs, ProcessOutputResultArgs
from procflow.processors.base import ProcessorViolation

__all__ = ["ToolArgumentsFilter"]


class ToolArgumentsFilter:
    """Runs a regex filter over every string value of the tool calls' arguments, in both phases.

    Args:
        id: The processor id; the inner filter is built with the same id, so its reports and tripwires
            name this processor.
        **options: ``RegexFilterProcessor`` options (``presets``, ``rules``, ``strategy``, …).
    """

    name = "Tool Arguments Filter"
    description = "Applies regex rules to the string values of tool-call arguments."

    def __init__(self, *, id: str = "tool-arguments-filter", **options: Any) -> None:
        self.id = id
        self.on_violation: Any = None
        self.filter = RegexFilterProcessor(id=id, **{**options, "phase": "all"})
        self.filter.on_violation = self._forward
        self._pipeline = ProcessorPipeline.build([self.filter])

    def __repr__(self) -> str:
        return f"ToolArgumentsFilter(id={self.id!r}, presets={list(self.filter.presets)})"

    async def _forward(self, violation: ProcessorViolation) -> None:
        await notify_violation(self, violation)

    async def process_input(self, args: ProcessInputArgs) -> list[Message] | None:
        """Filter the tool-call arguments of the input messages."""
        return await self._filter(args.messages)

    async def process_output_result(self, args: ProcessOutputResultArgs) -> list[Message] | None:
        """Filter the tool-call arguments of the response messages."""
        return await self._filter(args.messages)

    async def _filter(self, messages: list[Message]) -> list[Message] | None:
        out: list[Message] = []
        changed = False
        for message in messages:
            parts = list(message.content.parts)
            touched = False
            for index, part in enumerate(parts):
                if isinstance(part, ToolInvocationPart) and part.args:
                    args = await self._clean(part.args)
                    if args != part.args:
                        parts[index] = part.model_copy(update={"args": args})
                        touched = True
            if touched:
                message = message.model_copy(
                    update={"content": message.content.model_copy(update={"parts": parts})}
                )
                changed = True
            out.append(message)
        return out if changed else None

    async def _clean(self, value: dict[str, Any]) -> dict[str, Any]:
        strings: list[str] = []
        _collect(value, strings)
        if not strings:
            return value
        ml = MessageList([Message.user(text) for text in strings])
        await PhaseRunner(self._pipeline, RunContext(message_list=ml)).run_input()
        cleaned = iter([m.text for m in ml.input])
        result: dict[str, Any] = _rebuild(value, cleaned)
        return result


def _collect(value: Any, into: list[str]) -> None:
    if isinstance(value, str):
        into.append(value)
    elif isinstance(value, dict):
        for item in value.values():
            _collect(item, into)
    elif isinstance(value, list):
        for item in value:
            _collect(item, into)


def _rebuild(value: Any, cleaned: Any) -> Any:
    if isinstance(value, str):
        return next(cleaned)
    if isinstance(value, dict):
        return {key: _rebuild(item, cleaned) for key, item in value.items()}
    if isinstance(value, list):
        return [_rebuild(item, cleaned) for item in value]
    return value

"""Collecting one model step's processed chunks into its text, tool calls, message and record."""

from __future__ import annotations

from typing import Any

from procflow._messages.chunk import TEXT_MARKER_TYPES, Chunk
from procflow._messages.message import Message, MessageContent
from procflow._messages.parts import (
    DataPart,
    FilePart,
    Part,
    ReasoningPart,
    SourcePart,
    TextPart,
    ToolInvocationPart,
)
from procflow._messages.results import FinishReason, StepResult, ToolCall, Usage

__all__ = ["StepCollector", "usage_of"]


def usage_of(value: Any) -> Usage:
    """Read a ``finish`` chunk's usage, given as :class:`Usage` or as a dict of counts."""
    if isinstance(value, Usage):
        return value
    if isinstance(value, dict):
        return Usage(
            input_tokens=int(value.get("input_tokens") or 0),
            output_tokens=int(value.get("output_tokens") or 0),
            reasoning_tokens=int(value.get("reasoning_tokens") or 0),
            cached_input_tokens=int(value.get("cached_input_tokens") or 0),
        )
    return Usage()


class StepCollector:
    """Accumulates the chunks of one model step as they stream (after the output stream processors).

    Consecutive text (or reasoning) deltas become one part; tool calls, sources, files and non-transient
    ``data-*`` chunks become parts in arrival order. A chunk that stores nothing and may interrupt a
    text without ending it (a transient ``data-*`` chunk, ``response-metadata``, a reasoning block's
    start or end) leaves the text part whole; a stored one splits it around its own part, in the
    place it arrived (the two text parts still read as one text).
    """

    __slots__ = (
        "_deleted",
        "_keep",
        "_kind",
        "_run",
        "_signature",
        "chunks",
        "finish_reason",
        "finished",
        "from_cache",
        "parts",
        "reasoning",
        "texts",
        "tool_calls",
        "usage",
    )

    def __init__(self, *, keep: int | None = None) -> None:
        """``keep``: hold only the last ``keep`` chunks in :attr:`chunks` (``None``: all of them)."""
        self._keep = keep
        self.chunks: list[Chunk] = []
        self.parts: list[Part] = []
        self.texts: list[str] = []
        self.reasoning: list[str] = []
        self.tool_calls: list[ToolCall] = []
        self.finish_reason: FinishReason = "unknown"
        self.usage = Usage()
        self.finished = False
        self.from_cache = False
        self._deleted = 0
        self._run: list[str] = []
        self._kind = ""
        self._signature: str | None = None

    def add(self, chunk: Chunk) -> None:
        """Record one chunk that reached the consumer."""
        chunks = self.chunks
        chunks.append(chunk)
        if self._keep is not None and len(chunks) > 2 * self._keep:
            self._deleted += len(chunks) - self._keep
            del chunks[: len(chunks) - self._keep]
        kind = chunk.type
        if kind == "text-delta" or kind == "reasoning-delta":
            if kind != self._kind:
                self._close()
                self._kind = kind
            text = chunk.payload.get("text")
            if text:
                self._run.append(text)
            if kind == "reasoning-delta" and chunk.payload.get("signature"):
                self._signature = chunk.payload["signature"]
            return
        if kind.startswith("data-"):
            # A transient data chunk is not stored, so it never splits the text (or reasoning) it
            # arrived inside; a stored one becomes a part where it arrived, between that text's parts.
            if not chunk.transient:
                self._close()
                self.parts.append(
                    DataPart(type=kind, data=chunk.payload.get("data"), id=chunk.payload.get("id"))
                )
            return
        if kind in TEXT_MARKER_TYPES and self._kind == "text-delta":
            return  # stores nothing and, having passed ahead of held text, does not end that text
        self._close()
        if kind == "tool-call":
            payload = chunk.payload
            call = ToolCall(
                str(payload["tool_call_id"]), str(payload["tool_name"]), dict(payload.get("args") or {})
            )
            self.tool_calls.append(call)
            self.parts.append(
                ToolInvocationPart(tool_call_id=call.tool_call_id, tool_name=call.tool_name, args=call.args)
            )
        elif kind == "source" and chunk.payload.get("source_id"):
            self.parts.append(SourcePart.model_validate(chunk.payload))
        elif kind == "file" and chunk.payload.get("media_type"):
            self.parts.append(FilePart.model_validate(chunk.payload))

    def finish(self, chunk: Chunk) -> None:
        """Read the finish reason and usage from the model's ``finish`` chunk."""
        self.finished = True
        reason = chunk.payload.get("finish_reason")
        if isinstance(reason, str):
            self.finish_reason = reason  # type: ignore[assignment]
        self.usage = usage_of(chunk.payload.get("usage"))

    def _close(self) -> None:
        if not self._run:
            self._kind = ""
            return
        text = "".join(self._run)
        if self._kind == "text-delta":
            self.parts.append(TextPart(text=text))
            self.texts.append(text)
        else:
            self.parts.append(ReasoningPart(text=text, signature=self._signature))
            self.reasoning.append(text)
            self._signature = None
        self._run = []
        self._kind = ""

    def message(self) -> Message:
        """The step's assistant message (tool invocations in ``call`` state until the tools run)."""
        self._close()
        return Message(role="assistant", content=MessageContent(parts=list(self.parts)))

    def kept(self) -> list[Chunk]:
        """The chunks the step keeps: all of them, or with ``keep`` its last ``keep``."""
        return self.chunks if self._keep is None else self.chunks[-self._keep :]

    @property
    def dropped(self) -> int:
        """How many of the step's first chunks :meth:`kept` lacks (``keep`` dropped them)."""
        keep = self._keep
        return 0 if keep is None else self._deleted + max(0, len(self.chunks) - keep)

    def step_result(self, step_number: int, message: Message) -> StepResult:
        """The step's record; call after :meth:`message`."""
        if self.finish_reason == "unknown":
            self.finish_reason = "tool-calls" if self.tool_calls else "stop"
        return StepResult(
            step_number=step_number,
            text="".join(self.texts),
            reasoning_text="".join(self.reasoning),
            tool_calls=list(self.tool_calls),
            finish_reason=self.finish_reason,
            usage=self.usage,
            chunks=self.kept(),
            messages=[message],
            from_cache=self.from_cache,
        )

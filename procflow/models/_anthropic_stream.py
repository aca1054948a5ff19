"""Turning Anthropic Messages stream events into procflow chunks."""

from __future__ import annotations

from typing import Any

from procflow._messages.chunk import Chunk
from procflow._messages.results import FinishReason, Usage
from procflow.errors import APIConnectionError, InvalidResponseError
from procflow.models._anthropic_wire import stop_reason, usage_from
from procflow.models._errors import (
    api_error_from_body,
    describe_error,
    is_error_body,
    parse_args,
    parse_partial_args,
    read_stream_event,
)

__all__ = ["AnthropicStreamState"]

_NO_CHUNKS: list[Chunk] = []
_PROVIDER = "anthropic"


class _ToolBlock:
    __slots__ = ("id", "initial", "name", "parts")

    def __init__(self, block: dict[str, Any]) -> None:
        self.id: str = block["id"]
        self.name: str = block["name"]
        self.initial: dict[str, Any] = dict(block.get("input") or {})
        self.parts: list[str] = []

    def chunk(self, *, truncated: bool = False) -> Chunk | None:
        """The ``tool-call`` chunk; with ``truncated`` (the model hit its token limit) ``None`` when the
        input is incomplete."""
        text = "".join(self.parts)
        if not text:
            args: dict[str, Any] | None = self.initial
        elif truncated:
            args = parse_partial_args(text, provider=_PROVIDER, tool_name=self.name)
        else:
            args = parse_args(text, provider=_PROVIDER, tool_name=self.name)
        if args is None:
            return None
        return Chunk("tool-call", {"tool_call_id": self.id, "tool_name": self.name, "args": args})


class AnthropicStreamState:
    """Reads one Messages stream's events in order.

    Text and thinking deltas pass through (a thinking block's signature arrives as a ``reasoning-delta``
    with empty text and a ``"signature"``); ``tool_use`` blocks become one ``tool-call`` chunk each when
    the block stops; usage is taken from ``message_start`` and updated by ``message_delta``.

    A ``tool_use`` block whose input is incomplete when it stops is held back until the stop reason
    arrives: with ``max_tokens`` (finish reason ``length``) it is dropped, otherwise it is malformed.
    """

    __slots__ = ("_finish", "_incomplete", "_stopped", "_tools", "_url", "_usage")

    def __init__(self, *, url: str) -> None:
        self._url = url
        self._tools: dict[int, _ToolBlock] = {}
        self._incomplete: list[_ToolBlock] = []
        self._finish: FinishReason | None = None
        self._usage = Usage()
        self._stopped = False

    def feed(self, data: str) -> list[Chunk]:
        """Return the chunks one SSE ``data`` field yields (none for empty data: a ping, keep-alive or
        ``retry:``/``id:``-only event)."""
        if not data:
            return _NO_CHUNKS
        return read_stream_event(data, self._read, provider=_PROVIDER)

    def _read(self, event: dict[str, Any]) -> list[Chunk]:
        if event.get("type") == "error" or is_error_body(event):
            raise api_error_from_body(event, provider=_PROVIDER, url=self._url)
        kind = event["type"]
        if kind == "content_block_delta":
            return self._delta(event["index"], event["delta"])
        if kind == "content_block_start":
            block = event["content_block"]
            if block["type"] == "tool_use":
                self._tools[event["index"]] = _ToolBlock(block)
            elif block["type"] == "text" and block.get("text"):
                return [Chunk("text-delta", {"id": str(event["index"]), "text": block["text"]})]
            elif block["type"] == "thinking" and block.get("thinking"):
                return [Chunk("reasoning-delta", {"text": block["thinking"]})]
            return _NO_CHUNKS
        if kind == "content_block_stop":
            tool = self._tools.pop(event["index"], None)
            if tool is None:
                return _NO_CHUNKS
            try:
                chunk = tool.chunk()
            except InvalidResponseError:  # cut off by max_tokens, or malformed: the stop reason tells
                self._incomplete.append(tool)
                return _NO_CHUNKS
            return [chunk] if chunk is not None else _NO_CHUNKS
        if kind == "message_start":
            message = event["message"]
            self._usage = usage_from(message.get("usage"), self._usage)
            return [Chunk("response-metadata", {"id": message.get("id"), "model_id": message.get("model")})]
        if kind == "message_delta":
            reason = (event.get("delta") or {}).get("stop_reason")
            if reason:
                self._finish = stop_reason(reason)
            self._usage = usage_from(event.get("usage"), self._usage)
            return _NO_CHUNKS
        if kind == "message_stop":
            self._stopped = True
            return _NO_CHUNKS
        return _NO_CHUNKS  # ``ping`` and event types added later

    def _delta(self, index: int, delta: dict[str, Any]) -> list[Chunk]:
        kind = delta["type"]
        if kind == "text_delta":
            return [Chunk("text-delta", {"id": str(index), "text": delta["text"]})]
        if kind == "thinking_delta":
            return [Chunk("reasoning-delta", {"text": delta["thinking"]})]
        if kind == "signature_delta":
            return [Chunk("reasoning-delta", {"text": "", "signature": delta["signature"]})]
        if kind == "input_json_delta":
            tool = self._tools.get(index)
            if tool is None:
                raise InvalidResponseError(
                    f"anthropic sent tool input for block {index}, which is not a tool_use block",
                    provider=_PROVIDER,
                )
            tool.parts.append(delta["partial_json"])
        return _NO_CHUNKS

    def end(self) -> list[Chunk]:
        """Return the ``finish`` chunk at the end of the stream; raise if the model had not finished."""
        if self._finish is None and not self._stopped:
            raise APIConnectionError(
                describe_error(
                    _PROVIDER,
                    f"stream from {self._url}",
                    "ended before the model finished (no stop_reason, no message_stop)",
                ),
                provider=_PROVIDER,
                url=self._url,
            )
        truncated = self._finish == "length"
        out: list[Chunk] = []
        for tool in [*self._incomplete, *self._tools.values()]:
            chunk = tool.chunk(truncated=truncated)
            if chunk is not None:
                out.append(chunk)
        self._tools.clear()
        self._incomplete.clear()
        out.append(Chunk("finish", {"finish_reason": self._finish or "unknown", "usage": self._usage}))
        return out

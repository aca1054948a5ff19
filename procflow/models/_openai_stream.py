"""Turning Chat Completions stream events into procflow chunks."""

from __future__ import annotations

import json
from typing import Any

from procflow._messages.chunk import Chunk
from procflow._messages.results import FinishReason, Usage
from procflow.errors import APIConnectionError, InvalidResponseError
from procflow.models._errors import (
    api_error_from_body,
    describe_error,
    is_error_body,
    parse_args,
    parse_partial_args,
    read_parsed_event,
    read_stream_event,
)
from procflow.models._openai_wire import finish_reason, usage_from

__all__ = ["OpenAIStreamState"]

_NO_CHUNKS: list[Chunk] = []


class _PendingCall:
    __slots__ = ("args", "id", "name")

    def __init__(self, call_id: str, name: str) -> None:
        self.id = call_id
        self.name = name
        self.args: list[str] = []


class OpenAIStreamState:
    """Reads one stream's events in order: text and reasoning pass through, tool calls are assembled.

    Tool-call argument deltas are collected per ``index`` and emitted as whole ``tool-call`` chunks when
    the choice finishes (or the stream ends); a call whose arguments are incomplete when the model
    stopped at its token limit (finish reason ``length``) is dropped. Usage may come in any event,
    commonly only the last.
    """

    __slots__ = (
        "_calls",
        "_done",
        "_emitted_calls",
        "_finish",
        "_provider",
        "_saw_tool_calls",
        "_started",
        "_url",
        "_usage",
    )

    def __init__(self, *, provider: str, url: str) -> None:
        self._provider = provider
        self._url = url
        self._calls: dict[int, _PendingCall] = {}
        self._finish: FinishReason | None = None
        self._usage = Usage()
        self._started = False
        self._done = False
        self._saw_tool_calls = False
        self._emitted_calls = False

    def feed(self, data: str) -> list[Chunk]:
        """Return the chunks one SSE ``data`` field yields (none for empty data: a ping, keep-alive or
        ``retry:``/``id:``-only event)."""
        if not data:
            return _NO_CHUNKS
        if data == "[DONE]":
            self._done = True
            return _NO_CHUNKS
        try:
            event = json.loads(data)
        except ValueError:
            return read_stream_event(data, self._read, provider=self._provider)  # raises the clear error
        text = self._plain_text(event)
        if text is not None:
            return [Chunk("text-delta", {"id": "0", "text": text})]
        return read_parsed_event(event, data, self._read, provider=self._provider)

    def _plain_text(self, event: Any) -> Any:
        """The text of the common event, one choice's content delta and nothing else, or ``None``.

        The same chunk :meth:`_read` would give, without its general bookkeeping; anything else
        (the first event, reasoning, tool calls, a finish, usage, an odd shape) returns ``None``.
        """
        if not self._started or type(event) is not dict or event.get("usage"):
            return None
        choices = event.get("choices")
        if type(choices) is not list or len(choices) != 1:
            return None
        choice = choices[0]
        if type(choice) is not dict or choice.get("finish_reason"):
            return None
        delta = choice.get("delta")
        if type(delta) is not dict:
            return None
        if delta.get("reasoning_content") or delta.get("reasoning") or delta.get("tool_calls"):
            return None
        return delta.get("content") or delta.get("refusal") or None

    def _read(self, event: dict[str, Any]) -> list[Chunk]:
        if is_error_body(event):
            raise api_error_from_body(event, provider=self._provider, url=self._url)
        out: list[Chunk] = []
        if not self._started:
            self._started = True
            out.append(Chunk("response-metadata", {"id": event.get("id"), "model_id": event.get("model")}))
        usage = event.get("usage")
        if usage:
            self._usage = usage_from(usage)
        choices = event.get("choices")
        if not choices:
            return out
        choice = choices[0]
        delta = choice.get("delta") or {}
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if reasoning:
            out.append(Chunk("reasoning-delta", {"text": reasoning}))
        content = delta.get("content") or delta.get("refusal")
        if content:
            out.append(Chunk("text-delta", {"id": "0", "text": content}))
        calls = delta.get("tool_calls")
        if calls:
            self._add_call_deltas(calls)
        reason = choice.get("finish_reason")
        if reason:
            self._finish = finish_reason(reason)
            out.extend(self._flush_calls())
        return out

    def _add_call_deltas(self, deltas: list[dict[str, Any]]) -> None:
        for delta in deltas:
            index = delta.get("index")
            call_id = delta.get("id")
            if index is None:
                index = self._index_for(call_id)
            function = delta.get("function") or {}
            pending = self._calls.get(index)
            if pending is None:
                pending = _PendingCall(call_id or f"call_{index}", function.get("name") or "")
                self._calls[index] = pending
            elif function.get("name") and not pending.name:
                pending.name = function["name"]
            arguments = function.get("arguments")
            if arguments:
                pending.args.append(arguments if isinstance(arguments, str) else json.dumps(arguments))

    def _index_for(self, call_id: str | None) -> int:
        # Some servers omit ``index``: a new id starts a call, no id continues the last one.
        if call_id is None:
            return max(self._calls, default=0)
        for index, call in self._calls.items():
            if call.id == call_id:
                return index
        return max(self._calls, default=-1) + 1

    def _flush_calls(self) -> list[Chunk]:
        if self._emitted_calls or not self._calls:
            return _NO_CHUNKS
        self._emitted_calls = True
        self._saw_tool_calls = True
        out = []
        for index in sorted(self._calls):
            call = self._calls[index]
            if not call.name:
                raise InvalidResponseError(
                    f"{self._provider} streamed a tool call ({call.id}) without a function name",
                    provider=self._provider,
                )
            text = "".join(call.args)
            if self._finish == "length":  # cut off by the token limit: drop an incomplete call
                args = parse_partial_args(text, provider=self._provider, tool_name=call.name)
                if args is None:
                    continue
            else:
                args = parse_args(text, provider=self._provider, tool_name=call.name)
            out.append(Chunk("tool-call", {"tool_call_id": call.id, "tool_name": call.name, "args": args}))
        return out

    def end(self) -> list[Chunk]:
        """Return the last chunks once the stream is over; raise if it stopped before the model finished."""
        if self._finish is None and not self._done:
            raise APIConnectionError(
                describe_error(
                    self._provider,
                    f"stream from {self._url}",
                    "ended before the model finished (no finish_reason and no [DONE])",
                ),
                provider=self._provider,
                url=self._url,
            )
        out = list(self._flush_calls())
        reason = self._finish or "unknown"
        if self._saw_tool_calls and reason in ("stop", "unknown"):
            # Some local servers (older Ollama, llama.cpp) report "stop" after tool calls.
            reason = "tool-calls"
        out.append(Chunk("finish", {"finish_reason": reason, "usage": self._usage}))
        return out

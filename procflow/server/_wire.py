"""The OpenAI Chat Completions wire format as the gateway speaks it: requests in, responses out.

Requests are validated with pydantic at this trust boundary; the chat messages themselves are read by
the same parser as ``procflow run`` (the common chat format), so a conversation means the same thing
in a JSONL file and in an HTTP request. Responses are plain dicts in the shapes the official clients
parse: ``chat.completion``, ``chat.completion.chunk`` and the ``{"error": {...}}`` object.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from procflow._error_rules import format_validation_error
from procflow._messages import FinishReason, ToolCall, TripwireInfo, Usage
from procflow._messages._tool_json import tool_args_text

__all__ = [
    "TRIPWIRE_ERROR_CODE",
    "ChatRequest",
    "chunk_body",
    "completion_body",
    "error_body",
    "parse_chat_request",
]

TRIPWIRE_ERROR_CODE = "procflow_tripwire"
"""The ``error.code`` of a request a processor stopped (HTTP 400, or the last SSE event of a stream)."""

_FINISH: dict[str, str] = {
    "stop": "stop",
    "length": "length",
    "tool-calls": "tool_calls",
    "content-filter": "content_filter",
}


class _Function(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class _ToolDefinition(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: Literal["function"] = "function"
    function: _Function


class _StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class ChatRequest(BaseModel):
    """The fields of ``POST /v1/chat/completions`` the gateway acts on or forwards (others are accepted
    and ignored: ``user`` names the tenant, ``metadata``, ``store``, ``logprobs`` and the like have no
    effect)."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1)
    messages: list[dict[str, Any]] = Field(min_length=1)
    stream: bool = False
    stream_options: _StreamOptions | None = None
    tools: list[_ToolDefinition] = Field(default_factory=list)
    tool_choice: str | dict[str, Any] | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    n: int = Field(default=1, ge=1, le=1)
    stop: str | list[str] | None = None
    seed: int | None = None
    top_p: float | None = Field(default=None, ge=0, le=1)
    presence_penalty: float | None = Field(default=None, ge=-2, le=2)
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    response_format: dict[str, Any] | None = None

    def sampling(self, provider: str) -> dict[str, Any]:
        """The sampling fields to forward, in the upstream's wire names (``provider``: its name).

        An OpenAI-compatible upstream takes them as they are. An Anthropic upstream takes ``stop`` (as
        ``stop_sequences``) and ``top_p``.

        Raises:
            ValueError: a field the Anthropic upstream has no equivalent for (names the field).
        """
        given = {
            name: getattr(self, name)
            for name in ("stop", "seed", "top_p", "presence_penalty", "frequency_penalty", "response_format")
            if getattr(self, name) is not None
        }
        if provider != "anthropic":
            return given
        unsupported = sorted(set(given) - {"stop", "top_p"})
        if unsupported:
            raise ValueError(
                f"{', '.join(unsupported)}: not supported by this gateway's upstream (Anthropic)"
            )
        if "stop" in given:
            stop = given.pop("stop")
            given["stop_sequences"] = [stop] if isinstance(stop, str) else stop
        return given

    def tool_choice_name(self) -> str | None:
        """``auto``/``none``/``required``, or the one function name the model must call."""
        choice = self.tool_choice
        if isinstance(choice, dict):
            function = choice.get("function")
            name = function.get("name") if isinstance(function, dict) else None
            return str(name) if name else None
        return choice


def parse_chat_request(raw: bytes) -> ChatRequest:
    """Parse and validate a request body.

    Raises:
        ValueError: the body is not JSON, or not a valid chat completion request (the message names the
            fields, never their contents).
    """
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"the request body is not valid JSON ({type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise ValueError("the request body must be a JSON object")
    try:
        return ChatRequest.model_validate(data)
    except ValidationError as exc:
        raise ValueError(format_validation_error(exc, root="(body)")) from None


def error_body(message: str, *, type: str, code: str | None = None, **extra: Any) -> dict[str, Any]:
    """The OpenAI error object: ``{"error": {"message", "type", "param", "code", ...}}``."""
    return {"error": {"message": message, "type": type, "param": None, "code": code, **extra}}


def tripwire_error(tripwire: TripwireInfo) -> dict[str, Any]:
    """The error object for a request a processor stopped (stable code, the processor's id)."""
    return error_body(
        tripwire.reason or "the request was stopped by a processor",
        type="invalid_request_error",
        code=TRIPWIRE_ERROR_CODE,
        processor_id=tripwire.processor_id,
        retry=tripwire.retry,
    )


def _usage(usage: Usage | Mapping[str, Any]) -> dict[str, int]:
    if isinstance(usage, Mapping):
        prompt, completion = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
    else:
        prompt, completion = usage.input_tokens, usage.output_tokens
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _tool_calls(calls: list[ToolCall]) -> list[dict[str, Any]]:
    return [
        {
            "id": call.tool_call_id,
            "type": "function",
            "function": {"name": call.tool_name, "arguments": tool_args_text(call.args)},
        }
        for call in calls
    ]


def finish_reason(reason: FinishReason | str, *, has_tool_calls: bool) -> str:
    """The OpenAI ``finish_reason`` for a procflow one."""
    if has_tool_calls:
        return "tool_calls"
    return _FINISH.get(str(reason), "stop")


def completion_body(
    *,
    completion_id: str,
    model: str,
    text: str,
    tool_calls: list[ToolCall],
    reason: FinishReason | str,
    usage: Usage,
    created: int | None = None,
) -> dict[str, Any]:
    """A whole ``chat.completion`` object with one choice."""
    message: dict[str, Any] = {"role": "assistant", "content": text if text or not tool_calls else None}
    if tool_calls:
        message["tool_calls"] = _tool_calls(tool_calls)
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created or int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason(reason, has_tool_calls=bool(tool_calls)),
                "logprobs": None,
            }
        ],
        "usage": _usage(usage),
    }


def chunk_body(
    *,
    completion_id: str,
    model: str,
    created: int,
    delta: dict[str, Any] | None = None,
    reason: str | None = None,
    usage: Usage | Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One ``chat.completion.chunk``: a delta, a finish reason, or (with no choice) the usage."""
    body: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [],
    }
    if delta is not None or reason is not None:
        body["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": reason, "logprobs": None}]
    if usage is not None:
        body["usage"] = _usage(usage)
    return body


def tool_call_delta(index: int, call: ToolCall) -> dict[str, Any]:
    """The delta of a whole tool call, sent in one chunk (procflow assembles arguments before emitting)."""
    (entry,) = _tool_calls([call])
    return {"tool_calls": [{"index": index, **entry}]}

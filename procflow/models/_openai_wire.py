"""The OpenAI Chat Completions wire format: request bodies and whole (non-streamed) answers."""

from __future__ import annotations

import json
from typing import Any, assert_never

from procflow._messages._tool_json import tool_args_text, tool_result_text
from procflow._messages.prompt import (
    PromptFile,
    PromptMessage,
    PromptText,
    PromptToolCall,
    PromptToolResult,
)
from procflow._messages.results import FinishReason, ToolCall, Usage
from procflow.errors import ConfigurationError, InvalidResponseError
from procflow.models._base import ModelRequest, ModelResponse
from procflow.models._errors import parse_args, parse_partial_args

__all__ = ["build_body", "finish_reason", "parse_response", "usage_from"]

_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool-calls",
    "function_call": "tool-calls",
    "content_filter": "content-filter",
}

_AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}


def finish_reason(value: Any) -> FinishReason:
    """Map an OpenAI ``finish_reason`` to procflow's."""
    if value is None:
        return "unknown"
    return _FINISH_REASONS.get(str(value), "other")


def usage_from(data: Any) -> Usage:
    """Read an OpenAI ``usage`` object (missing fields count as zero)."""
    if not isinstance(data, dict):
        return Usage()
    prompt_details = data.get("prompt_tokens_details") or {}
    completion_details = data.get("completion_tokens_details") or {}
    return Usage(
        input_tokens=int(data.get("prompt_tokens") or 0),
        output_tokens=int(data.get("completion_tokens") or 0),
        reasoning_tokens=int(completion_details.get("reasoning_tokens") or 0),
        cached_input_tokens=int(prompt_details.get("cached_tokens") or 0),
    )


def _file_part(part: PromptFile, provider: str) -> dict[str, Any]:
    source = part.url or f"data:{part.media_type};base64,{part.data or ''}"
    if part.media_type.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": source}}
    if part.media_type in _AUDIO_FORMATS and part.data:
        return {
            "type": "input_audio",
            "input_audio": {"data": part.data, "format": _AUDIO_FORMATS[part.media_type]},
        }
    if part.media_type == "application/pdf" and part.data:
        return {"type": "file", "file": {"filename": part.filename or "document.pdf", "file_data": source}}
    raise ConfigurationError(
        f"{provider}: cannot send a file of type {part.media_type!r}"
        f"{' by URL' if part.url else ''}; Chat Completions accepts images, WAV/MP3 audio and PDF data"
    )


def _user_message(message: PromptMessage, provider: str) -> dict[str, Any]:
    parts = message.content
    if len(parts) == 1 and isinstance(parts[0], PromptText):
        return {"role": "user", "content": parts[0].text}
    content: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, PromptText):
            content.append({"type": "text", "text": part.text})
        elif isinstance(part, PromptFile):
            content.append(_file_part(part, provider))
    return {"role": "user", "content": content}


def _assistant_message(message: PromptMessage) -> dict[str, Any]:
    text = message.text
    calls = [
        {
            "id": part.tool_call_id,
            "type": "function",
            "function": {"name": part.tool_name, "arguments": tool_args_text(part.args)},
        }
        for part in message.content
        if isinstance(part, PromptToolCall)
    ]
    out: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        out["tool_calls"] = calls
    return out


def _messages(request: ModelRequest, provider: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in request.prompt:
        role = message.role
        if role == "system":
            out.append({"role": "system", "content": message.text})
        elif role == "user":
            out.append(_user_message(message, provider))
        elif role == "assistant":
            out.append(_assistant_message(message))
        elif role == "tool":
            out.extend(
                {"role": "tool", "tool_call_id": part.tool_call_id, "content": tool_result_text(part.result)}
                for part in message.content
                if isinstance(part, PromptToolResult)
            )
        else:
            assert_never(role)
    return out


def _tool_choice(choice: str) -> str | dict[str, Any]:
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def build_body(
    request: ModelRequest,
    *,
    model_id: str,
    provider: str,
    stream: bool,
    stream_usage: bool,
    max_tokens_field: str,
) -> dict[str, Any]:
    """Return the Chat Completions request body for ``request``."""
    body: dict[str, Any] = {"model": model_id, "messages": _messages(request, provider)}
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
            }
            for t in request.tools
        ]
        if request.tool_choice is not None:
            body["tool_choice"] = _tool_choice(request.tool_choice)
    if request.response_format is not None:
        body["response_format"] = request.response_format
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.max_output_tokens is not None:
        body[max_tokens_field] = request.max_output_tokens
    if stream:
        body["stream"] = True
        if stream_usage:
            body["stream_options"] = {"include_usage": True}
    extra = request.provider_options.get(provider)
    if isinstance(extra, dict):
        body.update(extra)
    return body


def _reasoning_of(message: dict[str, Any]) -> str:
    # DeepSeek and vLLM send ``reasoning_content``; Ollama and OpenRouter send ``reasoning``.
    value = message.get("reasoning_content") or message.get("reasoning")
    return value if isinstance(value, str) else ""


def _tool_calls(calls: list[dict[str, Any]], *, provider: str, truncated: bool) -> list[ToolCall]:
    # With the token limit reached, a call whose arguments are incomplete is dropped, not executed.
    parse = parse_partial_args if truncated else parse_args
    out = []
    for index, call in enumerate(calls):
        name = call["function"]["name"]
        args = parse(call["function"].get("arguments") or "", provider=provider, tool_name=name)
        if args is not None:
            out.append(ToolCall(call.get("id") or f"call_{index}", name, args))
    return out


def parse_response(data: Any, *, provider: str) -> ModelResponse:
    """Read a whole Chat Completions answer; raise :class:`InvalidResponseError` on an unexpected shape."""
    try:
        choice = data["choices"][0]
        message = choice["message"]
        reason = finish_reason(choice.get("finish_reason"))
        calls = _tool_calls(message.get("tool_calls") or [], provider=provider, truncated=reason == "length")
        if calls and reason in ("stop", "unknown"):
            reason = "tool-calls"  # some local servers report "stop" after tool calls
        return ModelResponse(
            text=message.get("content") or message.get("refusal") or "",
            reasoning_text=_reasoning_of(message),
            tool_calls=calls,
            finish_reason=reason,
            usage=usage_from(data.get("usage")),
            raw=data,
        )
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise InvalidResponseError(
            f"{provider} sent a chat completion without the expected fields ({type(exc).__name__}: {exc}); "
            "is the base URL an OpenAI-compatible /v1 endpoint?",
            provider=provider,
            body=json.dumps(data)[:2000],
        ) from exc

"""The Anthropic Messages wire format: request bodies and whole (non-streamed) answers."""

from __future__ import annotations

import base64
import json
from typing import Any, assert_never

from procflow._messages._tool_json import tool_result_text
from procflow._messages.prompt import (
    PromptFile,
    PromptMessage,
    PromptReasoning,
    PromptText,
    PromptToolCall,
    PromptToolResult,
)
from procflow._messages.results import FinishReason, ToolCall, Usage
from procflow.errors import ConfigurationError, InvalidResponseError
from procflow.models._base import ModelRequest, ModelResponse

__all__ = ["build_body", "parse_response", "stop_reason", "usage_from"]

_STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool-calls",
    "refusal": "content-filter",
}

_DOCUMENT_TYPES = {"application/pdf", "text/plain"}


def stop_reason(value: Any) -> FinishReason:
    """Map an Anthropic ``stop_reason`` to procflow's finish reason."""
    if value is None:
        return "unknown"
    return _STOP_REASONS.get(str(value), "other")


def usage_from(data: Any, previous: Usage | None = None) -> Usage:
    """Read an Anthropic ``usage`` object; fields it lacks keep their ``previous`` values.

    ``input_tokens`` counts every input token, cached ones included (Anthropic reports cache reads and
    writes apart); ``cached_input_tokens`` counts the cache reads.
    """
    base = previous or Usage()
    if not isinstance(data, dict):
        return base
    cache_read = data.get("cache_read_input_tokens")
    cache_write = data.get("cache_creation_input_tokens")
    fresh = data.get("input_tokens")
    cached = int(cache_read) if cache_read is not None else base.cached_input_tokens
    if fresh is not None:
        input_tokens = int(fresh) + int(cache_read or 0) + int(cache_write or 0)
    else:
        input_tokens = base.input_tokens
    output = data.get("output_tokens")
    return Usage(
        input_tokens=input_tokens,
        output_tokens=int(output) if output is not None else base.output_tokens,
        reasoning_tokens=base.reasoning_tokens,
        cached_input_tokens=cached,
    )


def _file_block(part: PromptFile) -> dict[str, Any]:
    kind = "image" if part.media_type.startswith("image/") else "document"
    if kind == "document" and part.media_type not in _DOCUMENT_TYPES:
        raise ConfigurationError(
            f"anthropic: cannot send a file of type {part.media_type!r}; the Messages API accepts images, "
            "PDF and plain-text documents"
        )
    if part.url:
        return {"type": kind, "source": {"type": "url", "url": part.url}}
    if part.media_type == "text/plain":
        text = base64.b64decode(part.data or "").decode("utf-8", "replace")
        return {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": text}}
    return {
        "type": kind,
        "source": {"type": "base64", "media_type": part.media_type, "data": part.data or ""},
    }


def _tool_result_block(part: PromptToolResult) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": part.tool_call_id,
        "content": tool_result_text(part.result),
    }
    if part.is_error:
        block["is_error"] = True
    return block


def _blocks(message: PromptMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, PromptText):
            if part.text:  # the API rejects empty text blocks
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, PromptFile):
            blocks.append(_file_block(part))
        elif isinstance(part, PromptReasoning):
            # Thinking can only be replayed with the signature Anthropic gave it.
            if part.signature:
                blocks.append({"type": "thinking", "thinking": part.text, "signature": part.signature})
        elif isinstance(part, PromptToolCall):
            blocks.append(
                {"type": "tool_use", "id": part.tool_call_id, "name": part.tool_name, "input": part.args}
            )
        elif isinstance(part, PromptToolResult):
            blocks.append(_tool_result_block(part))
        else:
            assert_never(part)
    return blocks


def _conversation(request: ModelRequest) -> tuple[list[str], list[dict[str, Any]]]:
    system: list[str] = []
    messages: list[dict[str, Any]] = []
    for message in request.prompt:
        role = message.role
        if role == "system":
            system.append(message.text)
            continue
        if role == "tool" or role == "user":
            wire_role = "user"
        elif role == "assistant":
            wire_role = "assistant"
        else:
            assert_never(role)
        blocks = _blocks(message)
        if not blocks:
            continue
        if messages and messages[-1]["role"] == wire_role:
            messages[-1]["content"].extend(blocks)  # the API wants user and assistant turns to alternate
        else:
            messages.append({"role": wire_role, "content": blocks})
    return system, messages


def _format_instruction(response_format: dict[str, Any]) -> str | None:
    kind = response_format.get("type")
    if kind == "json_schema":
        spec = response_format.get("json_schema") or {}
        schema = spec.get("schema", spec)
        return f"Respond only with a JSON value that matches this JSON schema:\n{json.dumps(schema)}"
    if kind == "json_object":
        return "Respond only with a JSON object."
    return None


def _tool_choice(choice: str) -> dict[str, Any]:
    if choice == "auto":
        return {"type": "auto"}
    if choice == "none":
        return {"type": "none"}
    if choice == "required":
        return {"type": "any"}
    return {"type": "tool", "name": choice}


def build_body(
    request: ModelRequest, *, model_id: str, stream: bool, default_max_tokens: int
) -> dict[str, Any]:
    """Return the Messages API request body for ``request``.

    System messages become the top-level ``system``; tool results travel in user turns; a
    ``response_format`` (OpenAI shape) becomes a system instruction, the API having no such field.
    """
    system, messages = _conversation(request)
    if request.response_format is not None:
        instruction = _format_instruction(request.response_format)
        if instruction:
            system.append(instruction)
    body: dict[str, Any] = {
        "model": model_id,
        "max_tokens": request.max_output_tokens or default_max_tokens,
        "messages": messages,
    }
    if system:
        body["system"] = [{"type": "text", "text": text} for text in system if text]
    if request.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in request.tools
        ]
        if request.tool_choice is not None:
            body["tool_choice"] = _tool_choice(request.tool_choice)
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if stream:
        body["stream"] = True
    extra = request.provider_options.get("anthropic")
    if isinstance(extra, dict):
        body.update(extra)
    return body


def parse_response(data: Any) -> ModelResponse:
    """Read a whole Messages API answer; raise :class:`InvalidResponseError` on an unexpected shape."""
    try:
        text: list[str] = []
        reasoning: list[str] = []
        signature: str | None = None
        calls: list[ToolCall] = []
        blocks = list(data["content"])
        if data.get("stop_reason") == "max_tokens" and blocks and blocks[-1].get("type") == "tool_use":
            blocks.pop()  # cut off inside its input by max_tokens: incomplete, never executed
        for block in blocks:
            kind = block["type"]
            if kind == "text":
                text.append(block["text"])
            elif kind == "thinking":
                reasoning.append(block["thinking"])
                signature = block.get("signature") or signature
            elif kind == "tool_use":
                calls.append(ToolCall(block["id"], block["name"], dict(block.get("input") or {})))
        return ModelResponse(
            text="".join(text),
            reasoning_text="".join(reasoning),
            tool_calls=calls,
            finish_reason=stop_reason(data.get("stop_reason")),
            usage=usage_from(data.get("usage")),
            raw=data,
            reasoning_signature=signature,
        )
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise InvalidResponseError(
            f"anthropic sent a message without the expected fields ({type(exc).__name__}: {exc}); "
            "is the base URL the Messages API root (…/v1)?",
            provider="anthropic",
            body=json.dumps(data)[:2000],
        ) from exc

"""How the fake provider renders a scripted reply in the OpenAI and Anthropic wire formats."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from procflow.testing._fake_reply import FakeReply

__all__ = ["SSEEvent", "WireProtocol", "error_body", "render_body", "render_events", "stream_error_event"]

WireProtocol = Literal["openai", "anthropic"]

SSEEvent = tuple[bytes, bool]
"""One encoded server-sent event and whether it carries reply content (text, reasoning, tool input)."""

_OPENAI_FINISH = {
    "stop": "stop",
    "length": "length",
    "tool-calls": "tool_calls",
    "content-filter": "content_filter",
}
_ANTHROPIC_STOP = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool-calls": "tool_use",
    "content-filter": "refusal",
}

DEFAULT_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "overloaded_error",
    529: "overloaded_error",
}

MALFORMED_EVENT = b'data: {"choices": [ this is not json\n\n'


def _pieces(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def _finish(reply: FakeReply) -> str:
    if reply.finish_reason is not None:
        return reply.finish_reason
    return "tool-calls" if reply.tool_calls else "stop"


def _call_id(reply: FakeReply, index: int, protocol: WireProtocol) -> str:
    call = reply.tool_calls[index]
    if call.id:
        return call.id
    return f"call_{index}" if protocol == "openai" else f"toolu_{index}"


def error_body(protocol: WireProtocol, status: int, reply: FakeReply) -> dict[str, Any]:
    """Return the JSON error body a provider sends with ``status``."""
    kind = reply.error_type or DEFAULT_ERROR_TYPES.get(status, "api_error")
    message = reply.error_message or f"fake provider error {status}"
    if protocol == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "param": None, "code": reply.error_code}}


def _openai_usage(reply: FakeReply) -> dict[str, Any]:
    return {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
        "prompt_tokens_details": {"cached_tokens": reply.cached_input_tokens},
    }


def _anthropic_usage(reply: FakeReply) -> dict[str, Any]:
    return {
        "input_tokens": reply.input_tokens - reply.cached_input_tokens,
        "cache_read_input_tokens": reply.cached_input_tokens,
        "cache_creation_input_tokens": 0,
        "output_tokens": reply.output_tokens,
    }


def render_body(protocol: WireProtocol, reply: FakeReply, *, model: str, number: int) -> dict[str, Any]:
    """Return the whole (non-streamed) answer body."""
    if protocol == "openai":
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.reasoning:
            message["reasoning_content"] = reply.reasoning
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": _call_id(reply, i, protocol),
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(dict(call.args))},
                }
                for i, call in enumerate(reply.tool_calls)
            ]
        return {
            "id": f"chatcmpl-fake-{number}",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": _OPENAI_FINISH[_finish(reply)]}],
            "usage": _openai_usage(reply),
        }
    content: list[dict[str, Any]] = []
    if reply.reasoning:
        content.append({"type": "thinking", "thinking": reply.reasoning, "signature": "fake-signature"})
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    content.extend(
        {"type": "tool_use", "id": _call_id(reply, i, protocol), "name": call.name, "input": dict(call.args)}
        for i, call in enumerate(reply.tool_calls)
    )
    return {
        "id": f"msg_fake_{number}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": _ANTHROPIC_STOP[_finish(reply)],
        "stop_sequence": None,
        "usage": _anthropic_usage(reply),
    }


def _openai_events(reply: FakeReply, *, model: str, number: int, usage: bool) -> Iterator[SSEEvent]:
    base = {"id": f"chatcmpl-fake-{number}", "object": "chat.completion.chunk", "created": 0, "model": model}

    def event(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    yield event({"role": "assistant", "content": ""}), False
    for piece in _pieces(reply.reasoning, reply.chunk_size):
        yield event({"reasoning_content": piece}), True
    for piece in _pieces(reply.text, reply.chunk_size):
        yield event({"content": piece}), True
    for i, call in enumerate(reply.tool_calls):
        head = {"index": i, "id": _call_id(reply, i, "openai"), "type": "function"}
        yield event({"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]}), True
        for piece in _pieces(json.dumps(dict(call.args)), reply.chunk_size):
            yield event({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}), True
    yield event({}, _OPENAI_FINISH[_finish(reply)]), False
    if usage:
        yield _sse({**base, "choices": [], "usage": _openai_usage(reply)}), False
    yield b"data: [DONE]\n\n", False


def _anthropic_block(
    index: int, start: dict[str, Any], deltas: Iterator[dict[str, Any]]
) -> Iterator[SSEEvent]:
    yield (
        _sse({"type": "content_block_start", "index": index, "content_block": start}, "content_block_start"),
        False,
    )
    for delta in deltas:
        yield (
            _sse({"type": "content_block_delta", "index": index, "delta": delta}, "content_block_delta"),
            True,
        )
    yield _sse({"type": "content_block_stop", "index": index}, "content_block_stop"), False


def _anthropic_events(reply: FakeReply, *, model: str, number: int) -> Iterator[SSEEvent]:
    message = {
        **render_body("anthropic", reply, model=model, number=number),
        "content": [],
        "stop_reason": None,
    }
    message["usage"] = {**_anthropic_usage(reply), "output_tokens": 1}
    yield _sse({"type": "message_start", "message": message}, "message_start"), False
    yield _sse({"type": "ping"}, "ping"), False
    index = 0
    if reply.reasoning:
        thinking = (
            {"type": "thinking_delta", "thinking": p} for p in _pieces(reply.reasoning, reply.chunk_size)
        )
        yield from _anthropic_block(index, {"type": "thinking", "thinking": ""}, thinking)
        index += 1
    if reply.text:
        text = ({"type": "text_delta", "text": p} for p in _pieces(reply.text, reply.chunk_size))
        yield from _anthropic_block(index, {"type": "text", "text": ""}, text)
        index += 1
    for i, call in enumerate(reply.tool_calls):
        start = {"type": "tool_use", "id": _call_id(reply, i, "anthropic"), "name": call.name, "input": {}}
        parts = _pieces(json.dumps(dict(call.args)), reply.chunk_size)
        yield from _anthropic_block(
            index, start, ({"type": "input_json_delta", "partial_json": p} for p in parts)
        )
        index += 1
    delta = {"stop_reason": _ANTHROPIC_STOP[_finish(reply)], "stop_sequence": None}
    usage = {"output_tokens": reply.output_tokens}
    yield _sse({"type": "message_delta", "delta": delta, "usage": usage}, "message_delta"), False
    yield _sse({"type": "message_stop"}, "message_stop"), False


def _with_signature(reply: FakeReply, events: Iterator[SSEEvent]) -> Iterator[SSEEvent]:
    # A thinking block ends with its signature, just before ``content_block_stop``.
    signed = False
    for data, is_content in events:
        if not signed and reply.reasoning and data.startswith(b"event: content_block_stop"):
            signed = True
            delta = {"type": "signature_delta", "signature": "fake-signature"}
            yield (
                _sse({"type": "content_block_delta", "index": 0, "delta": delta}, "content_block_delta"),
                False,
            )
        yield data, is_content


def render_events(
    protocol: WireProtocol, reply: FakeReply, *, model: str, number: int, usage: bool
) -> Iterator[SSEEvent]:
    """Yield the streamed answer's events; ``usage`` is whether an OpenAI client asked for usage."""
    if protocol == "openai":
        return _openai_events(reply, model=model, number=number, usage=usage)
    return _with_signature(reply, _anthropic_events(reply, model=model, number=number))


def stream_error_event(protocol: WireProtocol, reply: FakeReply) -> bytes:
    """Return the event a provider sends when it fails in the middle of a stream."""
    body = error_body(protocol, 500, reply)
    return _sse(body, "error") if protocol == "anthropic" else _sse(body)

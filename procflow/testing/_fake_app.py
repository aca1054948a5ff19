"""The fake provider's ASGI application: records each request, then plays the next scripted reply."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

import anyio

from procflow.testing._fake_reply import FakeReply, RecordedRequest
from procflow.testing._fake_wire import (
    MALFORMED_EVENT,
    WireProtocol,
    error_body,
    render_body,
    render_events,
    stream_error_event,
)

__all__ = ["EMBEDDING_DIMENSIONS", "FakeProviderApp", "fake_embedding"]

EMBEDDING_DIMENSIONS = 64
"""Length of the fake ``/embeddings`` vectors unless the request asks for ``dimensions``."""

_WORD = re.compile(r"\w+")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def _protocol(path: str) -> WireProtocol | None:
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/messages"):
        return "anthropic"
    return None


def openai_history_problem(messages: Any) -> str | None:
    """What OpenAI's chat API rejects in ``messages``' tool traffic (with its own wording), or ``None``.

    A ``tool`` message must answer a call of the assistant message just before it (other ``tool``
    messages may come between), and every call of an assistant message must be answered before the
    next message of another role.
    """
    if not isinstance(messages, list):
        return None
    open_calls: set[str] = set()
    answered: set[str] = set()
    for message in [*messages, {"role": "end"}]:
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in open_calls:
                return (
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                    "message with 'tool_calls'."
                )
            answered.add(call_id)
            continue
        missing = sorted(open_calls - answered)
        if missing:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages responding to "
                f"each 'tool_call_id'. The following tool_call_ids did not have response messages: "
                f"{', '.join(missing)}"
            )
        calls = message.get("tool_calls") if role == "assistant" else None
        open_calls = (
            {str(c.get("id")) for c in calls if isinstance(c, dict)} if isinstance(calls, list) else set()
        )
        answered = set()
    return None


def fake_embedding(text: str, dimensions: int = EMBEDDING_DIMENSIONS) -> list[float]:
    """The fake server's deterministic embedding: hashed lower-cased words, normalised to length 1.

    Texts that share words are close (cosine), texts that share none are orthogonal or nearly so.
    """
    vector = [0.0] * dimensions
    for word in _WORD.findall(text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        vector[int.from_bytes(digest[:4], "little") % dimensions] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vector))
    if not norm:
        vector[0], norm = 1.0, 1.0
    return [x / norm for x in vector]


def _embeddings_body(payload: Any) -> dict[str, Any]:
    texts = payload.get("input") if isinstance(payload, dict) else None
    texts = [texts] if isinstance(texts, str) else texts if isinstance(texts, list) else []
    dimensions = payload.get("dimensions") or EMBEDDING_DIMENSIONS
    data = [
        {"object": "embedding", "index": i, "embedding": fake_embedding(str(text), int(dimensions))}
        for i, text in enumerate(texts)
    ]
    tokens = sum(len(_WORD.findall(str(text))) for text in texts)
    return {
        "object": "list",
        "data": data,
        "model": str(payload.get("model", "fake-embedding")),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


async def _read_body(receive: Receive) -> bytes:
    body = bytearray()
    while True:
        message = await receive()
        body.extend(message.get("body", b""))
        if not message.get("more_body"):
            return bytes(body)


async def _send_json(send: Send, status: int, data: Any, headers: Mapping[str, str]) -> None:
    payload = data.encode() if isinstance(data, str) else json.dumps(data).encode()
    raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    if not any(name == b"content-type" for name, _ in raw):
        raw.append((b"content-type", b"application/json"))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": payload})


class FakeProviderApp:
    """The ASGI application: records requests and plays the script."""

    def __init__(
        self, record: Callable[[RecordedRequest], int], next_reply: Callable[[RecordedRequest], FakeReply]
    ) -> None:
        self._record = record
        self._next_reply = next_reply

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        request = RecordedRequest(scope["method"], scope["path"], headers, await _read_body(receive))
        number = self._record(request)
        if request.method == "POST" and request.path.endswith("/embeddings"):
            # Embeddings are computed, not scripted: they never use up a scripted reply.
            await _send_json(send, 200, _embeddings_body(request.json), {})
            return
        protocol = _protocol(request.path)
        if protocol is None or request.method != "POST":
            body = {"error": {"message": f"fake provider: no endpoint {request.method} {request.path}"}}
            await _send_json(send, 404, body, {})
            return
        payload = request.json if isinstance(request.json, dict) else {}
        problem = openai_history_problem(payload.get("messages")) if protocol == "openai" else None
        if problem is not None:  # as OpenAI answers it, without using up a scripted reply
            error = {"message": problem, "type": "invalid_request_error", "param": "messages", "code": None}
            await _send_json(send, 400, {"error": error}, {})
            return
        reply = self._next_reply(request)
        wait = reply.delay if reply.first_delay is None else reply.first_delay
        if wait:
            await anyio.sleep(wait)
        if reply.body is not None:
            await _send_json(send, reply.status, reply.body, reply.headers)
        elif reply.status >= 400:
            await _send_json(send, reply.status, error_body(protocol, reply.status, reply), reply.headers)
        elif payload.get("stream") is True:
            await self._stream(send, protocol, reply, payload, number)
        else:
            body = render_body(protocol, reply, model=str(payload.get("model", "fake")), number=number)
            await _send_json(send, reply.status, body, reply.headers)

    async def _stream(
        self, send: Send, protocol: WireProtocol, reply: FakeReply, payload: dict[str, Any], number: int
    ) -> None:
        options = payload.get("stream_options") or {}
        events = render_events(
            protocol,
            reply,
            model=str(payload.get("model", "fake")),
            number=number,
            usage=bool(options.get("include_usage")),
        )
        headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
        headers.extend((k.encode(), v.encode()) for k, v in reply.headers.items())
        await send({"type": "http.response.start", "status": reply.status, "headers": headers})
        faulty = (
            reply.break_after is not None
            or reply.malformed_after is not None
            or reply.error_after is not None
        )
        if not reply.delay and not faulty:
            # One write for the whole stream: the fast path benchmarks measure the client, not us.
            body = b"".join(data for data, _ in events)
            await send({"type": "http.response.body", "body": body, "more_body": False})
            return
        content = 0
        for data, is_content in events:
            if content == reply.break_after:
                return  # returning mid-body makes the server drop the connection
            if content == reply.malformed_after:
                await send({"type": "http.response.body", "body": MALFORMED_EVENT, "more_body": False})
                return
            if content == reply.error_after:
                error = stream_error_event(protocol, reply)
                await send({"type": "http.response.body", "body": error, "more_body": False})
                return
            if reply.delay:
                await anyio.sleep(reply.delay)
            await send({"type": "http.response.body", "body": data, "more_body": True})
            content += is_content
        await send({"type": "http.response.body", "body": b"", "more_body": False})

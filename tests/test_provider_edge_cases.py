"""Provider edge cases over real sockets: truncated tool calls, empty SSE events, gateway error objects,
redirects, Retry-After dates and the per-call deadline."""

from __future__ import annotations

import contextlib
import email.utils
import json
import time
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.abc
import httpx
import pytest

from procflow import Agent, Chunk, tool
from procflow._error_rules import parse_retry_after
from procflow.errors import (
    APICallError,
    APIRedirectError,
    APITimeoutError,
    ConfigurationError,
    InvalidResponseError,
)
from procflow.models import (
    AnthropicModel,
    LanguageModel,
    ModelRequest,
    OpenAICompatibleModel,
    PromptMessage,
    PromptText,
)
from procflow.processors import StreamErrorRetryProcessor
from procflow.processors._stream_error_retry import transient_kind
from procflow.testing import FakeProviderServer, FakeReply

REQUEST = ModelRequest(prompt=[PromptMessage(role="user", content=[PromptText(text="Hi")])])
SSE = {"Content-Type": "text/event-stream"}


@pytest.fixture(scope="module")
def shared_server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as server:
        yield server


@pytest.fixture
def server(shared_server: FakeProviderServer) -> FakeProviderServer:
    shared_server.reset()
    return shared_server


@pytest.fixture(params=["openai", "anthropic"])
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def make_model(provider: str, server: FakeProviderServer, **options: Any) -> LanguageModel:
    if provider == "openai":
        return OpenAICompatibleModel("m", base_url=server.base_url, **options)
    return AnthropicModel("m", base_url=server.base_url, **options)


async def collect(model: LanguageModel) -> list[Chunk]:
    return [chunk async for chunk in model.stream(REQUEST)]


async def drain(model: LanguageModel, received: list[Chunk]) -> None:
    async for chunk in model.stream(REQUEST):
        received.append(chunk)


def texts(chunks: list[Chunk]) -> str:
    return "".join(c.text or "" for c in chunks if c.type == "text-delta")


def finish(chunks: list[Chunk]) -> Any:
    return [c.payload["finish_reason"] for c in chunks if c.type == "finish"]


def anthropic_event(data: dict[str, Any]) -> str:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"


def anthropic_stream(*, tool_input: str, stop: str, block_stop: bool = True) -> str:
    """A Messages stream: some text, then a tool_use block whose input JSON is ``tool_input``."""
    message = {"id": "msg_1", "model": "m", "usage": {"input_tokens": 5, "output_tokens": 1}}
    events = [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me check."}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": tool_input},
        },
    ]
    if block_stop:
        events.append({"type": "content_block_stop", "index": 1})
    events.append({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 9}})
    events.append({"type": "message_stop"})
    return "".join(anthropic_event(e) for e in events)


def openai_event(delta: dict[str, Any], finish_reason: str | None = None) -> str:
    data = {
        "id": "c1",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }
    return f"data: {json.dumps(data)}\n\n"


# -- max tokens reached inside a tool call ---------------------------------------------------------------


@pytest.mark.parametrize("block_stop", [True, False])
async def test_anthropic_max_tokens_inside_tool_use_keeps_the_text(
    server: FakeProviderServer, block_stop: bool
) -> None:
    """max_tokens inside a tool_use block: the text so far, finish ``length``, the partial call dropped."""
    stream = anthropic_stream(tool_input='{"city": "Ly', stop="max_tokens", block_stop=block_stop)
    server.add(FakeReply(body=stream, headers=SSE))
    chunks = await collect(make_model("anthropic", server))
    assert texts(chunks) == "Let me check."
    assert finish(chunks) == ["length"]
    assert not [c for c in chunks if c.type == "tool-call"]


async def test_anthropic_truncated_tool_input_without_max_tokens_is_malformed(
    server: FakeProviderServer,
) -> None:
    """Incomplete tool input with any other stop reason is still a malformed answer."""
    server.add(FakeReply(body=anthropic_stream(tool_input='{"city": "Ly', stop="tool_use"), headers=SSE))
    with pytest.raises(InvalidResponseError, match="not valid JSON"):
        await collect(make_model("anthropic", server))


async def test_openai_length_inside_tool_arguments_drops_the_call(server: FakeProviderServer) -> None:
    """finish_reason ``length`` with half-sent tool arguments: text kept, call dropped, no crash."""
    head = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "weather", "arguments": ""}}
    body = (
        openai_event({"content": "Let me check."})
        + openai_event({"tool_calls": [head]})
        + openai_event({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "Ly'}}]})
        + openai_event({}, "length")
        + "data: [DONE]\n\n"
    )
    server.add(FakeReply(body=body, headers=SSE))
    chunks = await collect(make_model("openai", server))
    assert (texts(chunks), finish(chunks)) == ("Let me check.", ["length"])
    assert not [c for c in chunks if c.type == "tool-call"]


async def test_whole_answers_cut_in_a_tool_call_drop_it(server: FakeProviderServer) -> None:
    """Non-streamed answers stopped by the token limit inside a tool call keep the text, drop the call."""
    anthropic = {
        "id": "msg_1",
        "model": "m",
        "content": [
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}},
        ],
        "stop_reason": "max_tokens",
        "usage": {"input_tokens": 5, "output_tokens": 9},
    }
    call = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"ci'}}
    openai = {
        "id": "c1",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Let me check.", "tool_calls": [call]},
                "finish_reason": "length",
            }
        ],
    }
    server.add(FakeReply(body=json.dumps(anthropic)), FakeReply(body=json.dumps(openai)))
    for name in ("anthropic", "openai"):
        response = await make_model(name, server).generate(REQUEST)
        assert (response.text, response.finish_reason, response.tool_calls) == ("Let me check.", "length", [])


async def test_agent_never_runs_a_tool_call_cut_off_by_max_tokens(server: FakeProviderServer) -> None:
    """Through the agent, the truncated call is not executed and the answer ends with ``length``."""
    ran: list[str] = []

    @tool
    def weather(city: str) -> str:
        """The weather of a city."""
        ran.append(city)
        return "sunny"

    server.add(FakeReply(body=anthropic_stream(tool_input='{"city": "Ly', stop="max_tokens"), headers=SSE))
    agent = Agent(id="a", model=make_model("anthropic", server), tools=[weather])
    result = await agent.generate("Weather in Lyon?")
    assert (result.text, result.finish_reason, ran) == ("Let me check.", "length", [])


# -- SSE events without data -----------------------------------------------------------------------------


async def test_sse_events_without_data_are_ignored(server: FakeProviderServer, provider: str) -> None:
    """``event: ping`` without data, ``retry:``/``id:``-only blocks and comments dispatch nothing."""
    server.add(FakeReply(text="Hello there", chunk_size=3))
    normal = (await collect_raw(server, provider)).decode()
    noise = "event: ping\n\n: keep-alive\n\nretry: 3000\n\nid: 7\n\nevent: ping\ndata:\n\n"
    blocks = normal.split("\n\n")
    noisy = noise + "\n\n".join(b + "\n\n" + noise.rstrip("\n") for b in blocks if b) + "\n\n"
    server.add(FakeReply(body=noisy, headers=SSE))
    chunks = await collect(make_model(provider, server))
    assert texts(chunks) == "Hello there"
    assert finish(chunks) == ["stop"]


async def collect_raw(server: FakeProviderServer, provider: str) -> bytes:
    """The fake server's normal streamed answer, as bytes on the wire."""
    path = "/chat/completions" if provider == "openai" else "/messages"
    async with httpx.AsyncClient() as client:
        response = await client.post(server.base_url + path, json={"model": "m", "stream": True})
    return response.content


# -- error objects from gateways -------------------------------------------------------------------------

LITELLM_ERROR = {
    "error": {"message": "litellm.BadRequestError: bad", "type": "None", "param": None, "code": "400"}
}


async def test_litellm_error_object_in_a_stream_is_classified_by_its_code(
    server: FakeProviderServer, provider: str
) -> None:
    """A LiteLLM-proxy error event (type "None", code "400") is a rejected, non-retryable APICallError."""
    event = f"data: {json.dumps(LITELLM_ERROR)}\n\n"
    if provider == "anthropic":
        event = "event: error\n" + event
    server.add(FakeReply(body=event, headers=SSE))
    with pytest.raises(APICallError) as caught:
        await collect(make_model(provider, server))
    error = caught.value
    assert (error.kind, error.is_retryable, error.error_type, error.error_code) == (
        "rejected",
        False,
        None,
        "400",
    )
    assert transient_kind(error) is None and StreamErrorRetryProcessor().reason(error) is None


async def test_litellm_error_object_in_a_whole_answer_is_classified_too(
    server: FakeProviderServer, provider: str
) -> None:
    """The same error object sent as a 200 body raises the same APICallError, never a KeyError."""
    server.add(FakeReply(body=json.dumps(LITELLM_ERROR)))
    with pytest.raises(APICallError) as caught:
        await make_model(provider, server).generate(REQUEST)
    assert (caught.value.kind, caught.value.is_retryable) == ("rejected", False)


@pytest.mark.parametrize(
    ("code", "kind"), [("429", "rate-limit"), (503, "overloaded"), ("rate_limit_exceeded", "rate-limit")]
)
async def test_error_codes_decide_the_kind(server: FakeProviderServer, code: Any, kind: str) -> None:
    """Numeric codes (string or int) and named codes classify in-stream errors."""
    event = {"error": {"message": "busy", "type": None, "code": code}}
    server.add(FakeReply(body=f"data: {json.dumps(event)}\n\n", headers=SSE))
    with pytest.raises(APICallError) as caught:
        await collect(make_model("openai", server))
    assert (caught.value.kind, caught.value.is_retryable) == (kind, True)


# -- redirects -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True])
async def test_redirect_is_reported_with_its_location(
    server: FakeProviderServer, provider: str, streaming: bool
) -> None:
    """A 3xx answer raises APIRedirectError naming the location, not a malformed-JSON error."""
    location = "https://new-host.test/v1/endpoint"
    server.add(FakeReply(status=307, body="", headers={"Location": location}))
    model = make_model(provider, server)
    with pytest.raises(APIRedirectError) as caught:
        await (collect(model) if streaming else model.generate(REQUEST))
    error = caught.value
    assert (error.status_code, error.location, error.kind, error.is_retryable) == (
        307,
        location,
        "redirect",
        False,
    )
    assert location in str(error) and "base_url" in str(error)


# -- Retry-After -----------------------------------------------------------------------------------------


async def test_retry_after_http_date_is_parsed(server: FakeProviderServer, provider: str) -> None:
    """``Retry-After`` as an HTTP date gives the seconds until then, and the message states that wait."""
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    server.add(FakeReply.error(429, "slow down", headers={"Retry-After": when}))
    with pytest.raises(APICallError) as caught:
        await make_model(provider, server).generate(REQUEST)
    wait = caught.value.retry_after
    assert wait is not None and 20 < wait <= 30
    assert f"asked to wait {wait:.3g} s" in str(caught.value)


async def test_retry_after_ms_is_parsed_and_stated(server: FakeProviderServer, provider: str) -> None:
    """``retry-after-ms`` wins over ``Retry-After`` and is stated in seconds, for any status."""
    server.add(FakeReply.error(503, "busy", headers={"retry-after-ms": "1500", "Retry-After": "9"}))
    with pytest.raises(APICallError) as caught:
        await make_model(provider, server).generate(REQUEST)
    assert caught.value.retry_after == 1.5
    assert "asked to wait 1.5 s" in str(caught.value)


def test_parse_retry_after_forms() -> None:
    """Seconds, milliseconds, HTTP dates (past ones wait 0) and garbage (no wait) are read as specified."""
    now = email.utils.parsedate_to_datetime("Wed, 21 Oct 2015 07:28:00 GMT").timestamp()
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:30 GMT"}, now=now) == 30.0
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:27:00 GMT"}, now=now) == 0.0
    assert parse_retry_after({"retry-after": "120"}) == 120.0
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


# -- the per-call deadline -------------------------------------------------------------------------------


async def test_deadline_ends_a_trickling_stream(server: FakeProviderServer, provider: str) -> None:
    """A stream trickling one character per event, each well inside the read timeout, ends at the deadline."""
    server.add(FakeReply(text="x" * 400, chunk_size=1, delay=0.02))
    received: list[Chunk] = []
    model = make_model(provider, server, timeout=5.0, deadline=1.0)
    with pytest.raises(APITimeoutError, match=r"deadline of 1 s") as caught:
        await drain(model, received)
    assert received[0].type == "response-metadata"  # what arrived before the deadline was delivered
    assert len(texts(received)) < 400
    assert (caught.value.kind, caught.value.is_retryable) == ("timeout", True)


async def test_deadline_bounds_a_whole_answer(server: FakeProviderServer, provider: str) -> None:
    """A non-streamed call waiting on a slow server ends at the deadline with APITimeoutError."""
    server.add(FakeReply(text="late", delay=3.0))
    with pytest.raises(APITimeoutError, match="deadline"):
        await make_model(provider, server, deadline=0.2).generate(REQUEST)


async def test_calls_within_the_deadline_are_unaffected(server: FakeProviderServer, provider: str) -> None:
    """With a generous deadline, streamed and whole answers arrive as usual."""
    server.add(FakeReply(text="on time"), FakeReply(text="on time"))
    model = make_model(provider, server, deadline=30.0)
    assert texts(await collect(model)) == "on time"
    assert (await model.generate(REQUEST)).text == "on time"


@pytest.mark.parametrize("deadline", [0, -1.0])
def test_deadline_must_be_positive(provider: str, deadline: float) -> None:
    """A zero or negative deadline is a ConfigurationError naming the option."""
    model_class: Any = OpenAICompatibleModel if provider == "openai" else AnthropicModel
    with pytest.raises(ConfigurationError, match="deadline"):
        model_class("m", base_url="http://localhost:1/v1", deadline=deadline)


async def test_deadline_ends_a_byte_trickle(provider: str) -> None:
    """A raw server sending one byte every 20 ms (no event ever completes) is cut at the deadline."""

    async def trickle(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            await stream.receive()
            head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            await stream.send(head)
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                for byte in b"data: " + b"x" * 10_000:
                    await stream.send(b"1\r\n" + bytes([byte]) + b"\r\n")
                    await anyio.sleep(0.02)

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    model_class: Any = OpenAICompatibleModel if provider == "openai" else AnthropicModel
    model = model_class("m", base_url=f"http://127.0.0.1:{port}/v1", timeout=5.0, deadline=0.5)
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, trickle)
        with pytest.raises(APITimeoutError, match="deadline"):
            await collect(model)
        await model.aclose()
        group.cancel_scope.cancel()

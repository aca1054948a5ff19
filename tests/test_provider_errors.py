"""Provider failures: HTTP errors, broken and malformed streams, timeouts — always procflow errors."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from procflow import Chunk
from procflow.errors import APICallError, InvalidResponseError
from procflow.models import (
    AnthropicModel,
    LanguageModel,
    ModelRequest,
    OpenAICompatibleModel,
    PromptMessage,
    PromptText,
)
from procflow.testing import FakeProviderServer, FakeReply


@pytest.fixture(scope="module")
def shared_server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as server:
        yield server


@pytest.fixture
def server(shared_server: FakeProviderServer) -> FakeProviderServer:
    shared_server.reset()
    return shared_server


@pytest.fixture(params=["openai", "anthropic"])
def make_model(request: pytest.FixtureRequest, server: FakeProviderServer) -> Any:
    def make(**options: Any) -> LanguageModel:
        if request.param == "openai":
            return OpenAICompatibleModel("m", base_url=options.pop("base_url", server.base_url), **options)
        return AnthropicModel("m", base_url=options.pop("base_url", server.base_url), **options)

    return make


REQUEST = ModelRequest(prompt=[PromptMessage(role="user", content=[PromptText(text="Hi")])])


async def drain(model: LanguageModel, received: list[Chunk]) -> None:
    async for chunk in model.stream(REQUEST):
        received.append(chunk)


@pytest.mark.parametrize(
    ("status", "error_type", "retryable"),
    [
        (400, "invalid_request_error", False),
        (401, "authentication_error", False),
        (429, "rate_limit_error", True),
        (500, "api_error", True),
    ],
)
async def test_http_errors_become_api_call_errors(
    server: FakeProviderServer, make_model: Any, status: int, error_type: str, retryable: bool
) -> None:
    """An HTTP error status gives an APICallError with status, body, headers, type and retryability."""
    server.add(FakeReply.error(status, "nope", headers={"Retry-After": "3"}))
    model = make_model()
    with pytest.raises(APICallError) as caught:
        await model.generate(REQUEST)
    error = caught.value
    assert (error.status_code, error.error_type, error.is_retryable) == (status, error_type, retryable)
    assert "nope" in str(error) and "nope" in (error.response_body or "")
    assert error.retry_after == 3.0
    assert error.provider == model.provider
    assert error.url is not None and error.url.startswith(server.base_url)


async def test_streaming_calls_map_http_errors_the_same_way(
    server: FakeProviderServer, make_model: Any
) -> None:
    """A streaming call rejected with 429 raises the same APICallError before any chunk."""
    server.add(FakeReply.error(429, "slow down", headers={"retry-after-ms": "1500"}))
    received: list[Chunk] = []
    with pytest.raises(APICallError) as caught:
        await drain(make_model(), received)
    assert received == []
    assert (caught.value.status_code, caught.value.is_retryable, caught.value.retry_after) == (429, True, 1.5)


async def test_openai_error_codes_and_key_hint(server: FakeProviderServer) -> None:
    """OpenAI's error code is kept, and a 401 from OpenAI names the variable holding the key."""
    server.add(
        FakeReply.error(
            401, "Incorrect API key", error_type="invalid_request_error", error_code="invalid_api_key"
        )
    )
    with pytest.raises(APICallError, match="OPENAI_API_KEY") as caught:
        await OpenAICompatibleModel("m", base_url=server.base_url).generate(REQUEST)
    assert (caught.value.error_type, caught.value.error_code) == ("invalid_request_error", "invalid_api_key")


async def test_connection_dropped_mid_stream_raises_after_received_chunks(
    server: FakeProviderServer, make_model: Any
) -> None:
    """A stream cut after two deltas yields them, then raises a retryable APICallError from httpx's."""
    server.add(FakeReply(text="one two three four", chunk_size=4, break_after=2))
    received: list[Chunk] = []
    with pytest.raises(APICallError) as caught:
        await drain(make_model(), received)
    assert [c.text for c in received if c.type == "text-delta"] == ["one ", "two "]
    assert caught.value.status_code is None and caught.value.is_retryable
    assert isinstance(caught.value.__cause__, httpx.HTTPError)


async def test_malformed_sse_is_an_invalid_response_error(
    server: FakeProviderServer, make_model: Any
) -> None:
    """An event whose data is not JSON raises InvalidResponseError after the chunks before it."""
    server.add(FakeReply(text="abcdefgh", chunk_size=4, malformed_after=1))
    received: list[Chunk] = []
    with pytest.raises(InvalidResponseError, match="malformed JSON"):
        await drain(make_model(), received)
    assert [c.text for c in received if c.type == "text-delta"] == ["abcd"]


async def test_error_event_inside_a_stream_is_an_api_call_error(
    server: FakeProviderServer, make_model: Any
) -> None:
    """An error the provider reports inside a 200 stream raises APICallError with its type."""
    server.add(FakeReply(text="abcdefgh", chunk_size=4, error_after=1, error_type="overloaded_error"))
    received: list[Chunk] = []
    with pytest.raises(APICallError) as caught:
        await drain(make_model(), received)
    assert [c.text for c in received if c.type == "text-delta"] == ["abcd"]
    assert (caught.value.error_type, caught.value.is_retryable) == ("overloaded_error", True)


async def test_stream_ending_before_the_finish_is_an_error(server: FakeProviderServer) -> None:
    """A stream closed cleanly but before the model finished raises a retryable APICallError."""
    event = (
        'data: {"id": "x", "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": null}]}\n\n'
    )
    server.add(FakeReply(body=event, headers={"Content-Type": "text/event-stream"}))
    received: list[Chunk] = []
    with pytest.raises(APICallError, match="ended before the model finished") as caught:
        await drain(OpenAICompatibleModel("m", base_url=server.base_url), received)
    assert [c.text for c in received if c.type == "text-delta"] == ["Hi"]
    assert caught.value.is_retryable


async def test_non_sse_answer_to_a_stream_is_an_invalid_response(
    server: FakeProviderServer, make_model: Any
) -> None:
    """A 200 JSON answer to a streaming request raises InvalidResponseError, not an httpx-sse error."""
    server.add(FakeReply(body='{"hello": "world"}'))
    with pytest.raises(InvalidResponseError, match="without server-sent events"):
        await drain(make_model(), [])


async def test_malformed_json_body_is_an_invalid_response(
    server: FakeProviderServer, make_model: Any
) -> None:
    """A non-streamed answer that is not JSON raises InvalidResponseError quoting it."""
    server.add(FakeReply(body="<html>gateway</html>"))
    with pytest.raises(InvalidResponseError, match="gateway"):
        await make_model().generate(REQUEST)


async def test_answer_with_unexpected_shape_is_an_invalid_response(
    server: FakeProviderServer, make_model: Any
) -> None:
    """Valid JSON without the protocol's fields raises InvalidResponseError, not a KeyError."""
    server.add(FakeReply(body='{"unexpected": true}'))
    with pytest.raises(InvalidResponseError, match="expected fields"):
        await make_model().generate(REQUEST)


async def test_read_timeout_is_a_retryable_api_call_error(
    server: FakeProviderServer, make_model: Any
) -> None:
    """A server slower than the read timeout gives a retryable APICallError caused by the httpx timeout."""
    server.add(FakeReply(text="late", delay=2.0))
    with pytest.raises(APICallError, match="timed out") as caught:
        await make_model(timeout=0.05).generate(REQUEST)
    assert caught.value.is_retryable
    assert isinstance(caught.value.__cause__, httpx.TimeoutException)


async def test_refused_connection_is_a_retryable_api_call_error(make_model: Any) -> None:
    """Nothing listening on the port gives a retryable APICallError that suggests checking the base URL."""
    with socket.socket() as probe:  # a port that was free a moment ago and has no listener
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = make_model(base_url=f"http://127.0.0.1:{port}/v1")
    with pytest.raises(APICallError, match="base URL") as caught:
        await drain(model, [])
    assert caught.value.status_code is None and caught.value.is_retryable
    assert isinstance(caught.value.__cause__, httpx.ConnectError)


async def test_injected_transport_failures_are_mapped(make_model: Any) -> None:
    """Errors raised by an injected httpx transport become APICallError too."""

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadError("connection reset by peer", request=request)

    model = make_model(transport=httpx.MockTransport(refuse), base_url="http://provider.test/v1")
    with pytest.raises(APICallError, match="connection reset") as caught:
        await model.generate(REQUEST)
    assert isinstance(caught.value.__cause__, httpx.ReadError)

"""The OpenAI-compatible provider against the fake server, through real sockets."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from procflow import Chunk, Usage
from procflow.models import (
    ModelRequest,
    OpenAICompatibleModel,
    PromptFile,
    PromptMessage,
    PromptReasoning,
    PromptText,
    PromptToolCall,
    PromptToolResult,
    ToolSpec,
)
from procflow.testing import FakeProviderServer, FakeReply, FakeToolCall


@pytest.fixture(scope="module")
def shared_server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as server:
        yield server


@pytest.fixture
def server(shared_server: FakeProviderServer) -> FakeProviderServer:
    shared_server.reset()
    return shared_server


def ask(text: str = "Hi", **settings: Any) -> ModelRequest:
    return ModelRequest(prompt=[PromptMessage(role="user", content=[PromptText(text=text)])], **settings)


async def collect(model: OpenAICompatibleModel, request: ModelRequest) -> list[Chunk]:
    return [chunk async for chunk in model.stream(request)]


def model_for(server: FakeProviderServer, **options: Any) -> OpenAICompatibleModel:
    return OpenAICompatibleModel("fake-model", base_url=server.base_url, **options)


WEATHER = ToolSpec(
    "get_weather",
    "Get the weather of a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


async def test_generate_returns_text_finish_reason_and_usage(server: FakeProviderServer) -> None:
    """A non-streamed call returns the text, the mapped finish reason and the usage."""
    server.add(FakeReply(text="Hello there!", input_tokens=12, output_tokens=3, cached_input_tokens=4))
    response = await model_for(server).generate(ask())
    assert response.text == "Hello there!"
    assert response.finish_reason == "stop"
    assert response.usage == Usage(input_tokens=12, output_tokens=3, cached_input_tokens=4)
    assert "stream" not in server.requests[0].json


async def test_stream_yields_text_deltas_then_one_finish(server: FakeProviderServer) -> None:
    """Streamed text arrives as text deltas between response metadata and one final finish chunk."""
    server.add(FakeReply(text="Streaming works fine.", chunk_size=5))
    chunks = await collect(model_for(server), ask())
    assert chunks[0].type == "response-metadata"
    assert chunks[0].payload["model_id"] == "fake-model"
    deltas = [c for c in chunks if c.type == "text-delta"]
    assert [d.text for d in deltas] == ["Strea", "ming ", "works", " fine", "."]
    assert [c.type for c in chunks].count("finish") == 1
    assert chunks[-1].type == "finish"
    assert chunks[-1].payload["finish_reason"] == "stop"


async def test_stream_usage_sent_only_in_the_last_event_is_reported(server: FakeProviderServer) -> None:
    """Usage sent after the finish reason, in the last event, still lands in the finish chunk."""
    server.add(FakeReply(text="ok", input_tokens=7, output_tokens=2))
    chunks = await collect(model_for(server), ask())
    assert server.requests[0].json["stream_options"] == {"include_usage": True}
    assert chunks[-1].payload["usage"] == Usage(input_tokens=7, output_tokens=2)


async def test_stream_without_usage_request_reports_zero_usage(server: FakeProviderServer) -> None:
    """With ``stream_usage=False`` no usage is asked for and the finish chunk carries zero usage."""
    server.add(FakeReply(text="ok"))
    chunks = await collect(model_for(server, stream_usage=False), ask())
    assert "stream_options" not in server.requests[0].json
    assert chunks[-1].payload["usage"] == Usage()


async def test_streamed_tool_call_arguments_are_assembled(server: FakeProviderServer) -> None:
    """Argument deltas of parallel tool calls are joined into whole argument dicts, one chunk per call."""
    calls = [
        FakeToolCall("get_weather", {"city": "Paris"}, "c1"),
        FakeToolCall("get_weather", {"city": "Oslo"}, "c2"),
    ]
    server.add(FakeReply(tool_calls=calls, chunk_size=3))
    chunks = await collect(model_for(server), ask(tools=[WEATHER]))
    tool_calls = [c.payload for c in chunks if c.type == "tool-call"]
    assert tool_calls == [
        {"tool_call_id": "c1", "tool_name": "get_weather", "args": {"city": "Paris"}},
        {"tool_call_id": "c2", "tool_name": "get_weather", "args": {"city": "Oslo"}},
    ]
    assert chunks[-1].payload["finish_reason"] == "tool-calls"


async def test_generate_returns_tool_calls(server: FakeProviderServer) -> None:
    """A non-streamed tool call comes back parsed, with the ``tool-calls`` finish reason."""
    server.add(FakeReply.tool_call("get_weather", {"city": "Rome"}, id="call_9"))
    response = await model_for(server).generate(ask(tools=[WEATHER]))
    assert [(c.tool_call_id, c.tool_name, c.args) for c in response.tool_calls] == [
        ("call_9", "get_weather", {"city": "Rome"})
    ]
    assert response.finish_reason == "tool-calls"


@pytest.mark.parametrize("reason", ["stop", "length", "content-filter", "tool-calls"])
async def test_finish_reasons_are_mapped(server: FakeProviderServer, reason: Any) -> None:
    """Every wire finish reason maps to procflow's name, streamed or not."""
    server.add(FakeReply(text="x", finish_reason=reason), FakeReply(text="x", finish_reason=reason))
    model = model_for(server)
    assert (await model.generate(ask())).finish_reason == reason
    assert (await collect(model, ask()))[-1].payload["finish_reason"] == reason


async def test_reasoning_content_streams_as_reasoning_deltas(server: FakeProviderServer) -> None:
    """``reasoning_content`` (vLLM, DeepSeek) becomes reasoning deltas, kept apart from the text."""
    server.add(FakeReply(reasoning="Let me think.", text="42"), FakeReply(reasoning="Hmm.", text="42"))
    model = model_for(server)
    chunks = await collect(model, ask())
    assert "".join(c.text or "" for c in chunks if c.type == "reasoning-delta") == "Let me think."
    assert "".join(c.text or "" for c in chunks if c.type == "text-delta") == "42"
    assert (await model.generate(ask())).reasoning_text == "Hmm."


async def test_request_body_follows_the_chat_completions_format(server: FakeProviderServer) -> None:
    """System prompt, image, tool call, tool result, tools and settings go out in the documented shape."""
    server.add(FakeReply(text="done"))
    prompt = [
        PromptMessage(role="system", content=[PromptText(text="Be brief.")]),
        PromptMessage(
            role="user",
            content=[
                PromptText(text="What is this?"),
                PromptFile(media_type="image/png", data="iVBORw0KGgo="),
            ],
        ),
        PromptMessage(
            role="assistant",
            content=[
                PromptReasoning(text="private"),
                PromptToolCall(tool_call_id="call_1", tool_name="get_weather", args={"city": "Paris"}),
            ],
        ),
        PromptMessage(
            role="tool",
            content=[PromptToolResult(tool_call_id="call_1", tool_name="get_weather", result={"temp": 21})],
        ),
    ]
    request = ModelRequest(
        prompt=prompt,
        tools=[WEATHER],
        tool_choice="get_weather",
        response_format={"type": "json_object"},
        temperature=0.2,
        max_output_tokens=50,
    )
    await model_for(server).generate(request)
    body = server.requests[0].json
    assert body["model"] == "fake-model"
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp":21}'},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": WEATHER.description,
                "parameters": WEATHER.parameters,
            },
        }
    ]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert body["response_format"] == {"type": "json_object"}
    assert (body["temperature"], body["max_completion_tokens"]) == (0.2, 50)


async def test_image_urls_and_local_servers_use_max_tokens(server: FakeProviderServer) -> None:
    """Image URLs pass through, and a non-OpenAI provider sends ``max_tokens``."""
    server.add(FakeReply(text="a cat"))
    prompt = [
        PromptMessage(
            role="user", content=[PromptFile(media_type="image/jpeg", url="https://x.test/cat.jpg")]
        )
    ]
    await model_for(server, provider="ollama").generate(ModelRequest(prompt=prompt, max_output_tokens=9))
    body = server.requests[0].json
    assert body["messages"][0]["content"] == [
        {"type": "image_url", "image_url": {"url": "https://x.test/cat.jpg"}}
    ]
    assert body["max_tokens"] == 9


async def test_headers_api_key_and_provider_options_are_sent(server: FakeProviderServer) -> None:
    """The API key, constructor and per-call headers, and this provider's options reach the server."""
    server.add(FakeReply(text="ok"))
    model = model_for(server, api_key="sk-test", headers={"X-Team": "a"}, provider="vllm")
    request = ask(headers={"X-Call": "b"}, provider_options={"vllm": {"top_k": 5}, "other": {"x": 1}})
    await model.generate(request)
    recorded = server.requests[0]
    assert recorded.headers["authorization"] == "Bearer sk-test"
    assert (recorded.headers["x-team"], recorded.headers["x-call"]) == ("a", "b")
    assert recorded.json["top_k"] == 5
    assert "x" not in recorded.json


async def test_injected_client_is_used_and_left_open(server: FakeProviderServer) -> None:
    """A caller's ``httpx.AsyncClient`` carries the requests and is not closed by the model."""
    server.add(FakeReply(text="one"), FakeReply(text="two"))
    async with httpx.AsyncClient() as client:
        model = model_for(server, client=client)
        assert (await model.generate(ask())).text == "one"
        assert "".join(c.text or "" for c in await collect(model, ask()) if c.type == "text-delta") == "two"
        assert not client.is_closed


def test_a_bad_base_url_is_a_clear_error() -> None:
    """A base URL that is not http(s) fails at construction and shows an example."""
    with pytest.raises(ValueError, match="must be an http"):
        OpenAICompatibleModel("m", base_url="localhost:11434")


async def test_tool_call_deltas_without_index_and_a_stop_finish(server: FakeProviderServer) -> None:
    """Deltas without ``index`` (some local servers) assemble; "stop" after calls means tool-calls."""
    events = [
        {"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": '{"x":'}}]},
        {"tool_calls": [{"function": {"arguments": "1}"}}]},
        {"tool_calls": [{"id": "b", "function": {"name": "g", "arguments": "{}"}}]},
    ]
    lines = [json.dumps({"choices": [{"index": 0, "delta": delta}]}) for delta in events]
    lines.append(json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    body = "".join(f"data: {line}\n\n" for line in [*lines, "[DONE]"])
    server.add(FakeReply(body=body, headers={"Content-Type": "text/event-stream"}))
    chunks = await collect(model_for(server, provider="llama.cpp"), ask())
    assert [(c.payload["tool_call_id"], c.payload["args"]) for c in chunks if c.type == "tool-call"] == [
        ("a", {"x": 1}),
        ("b", {}),
    ]
    assert chunks[-1].payload["finish_reason"] == "tool-calls"

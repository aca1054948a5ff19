"""The Anthropic Messages provider against the fake server, through real sockets."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from procflow import Chunk, Usage
from procflow.models import (
    AnthropicModel,
    ModelRequest,
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


async def collect(model: AnthropicModel, request: ModelRequest) -> list[Chunk]:
    return [chunk async for chunk in model.stream(request)]


def model_for(server: FakeProviderServer, **options: Any) -> AnthropicModel:
    return AnthropicModel("claude-fake", base_url=server.base_url, api_key="sk-ant-test", **options)


SEARCH = ToolSpec("search", "Search the docs.", {"type": "object", "properties": {"q": {"type": "string"}}})


async def test_generate_returns_text_thinking_and_usage(server: FakeProviderServer) -> None:
    """A non-streamed message gives text, thinking with its signature, and usage counting cache reads."""
    server.add(
        FakeReply(text="Paris.", reasoning="Capital of France.", input_tokens=20, cached_input_tokens=8)
    )
    response = await model_for(server).generate(ask())
    assert (response.text, response.reasoning_text) == ("Paris.", "Capital of France.")
    assert response.reasoning_signature == "fake-signature"
    assert response.finish_reason == "stop"
    assert response.usage == Usage(input_tokens=20, output_tokens=5, cached_input_tokens=8)


async def test_stream_yields_text_reasoning_signature_and_finish(server: FakeProviderServer) -> None:
    """Thinking and text deltas stream in order, the signature follows the thinking, then one finish."""
    server.add(FakeReply(text="The answer is 4.", reasoning="2+2", chunk_size=6, output_tokens=9))
    chunks = await collect(model_for(server), ask())
    assert chunks[0].type == "response-metadata"
    reasoning = [c.payload for c in chunks if c.type == "reasoning-delta"]
    assert reasoning == [{"text": "2+2"}, {"text": "", "signature": "fake-signature"}]
    assert [c.text for c in chunks if c.type == "text-delta"] == ["The an", "swer i", "s 4."]
    assert chunks[-1].type == "finish"
    assert chunks[-1].payload == {"finish_reason": "stop", "usage": Usage(input_tokens=10, output_tokens=9)}


async def test_streamed_tool_use_blocks_become_tool_call_chunks(server: FakeProviderServer) -> None:
    """``input_json_delta`` pieces are joined into the arguments of one tool-call chunk per block."""
    calls = [FakeToolCall("search", {"q": "processors"}, "toolu_1"), FakeToolCall("search", {}, "toolu_2")]
    server.add(FakeReply(text="Let me look.", tool_calls=calls, chunk_size=4))
    chunks = await collect(model_for(server), ask(tools=[SEARCH]))
    assert [c.payload for c in chunks if c.type == "tool-call"] == [
        {"tool_call_id": "toolu_1", "tool_name": "search", "args": {"q": "processors"}},
        {"tool_call_id": "toolu_2", "tool_name": "search", "args": {}},
    ]
    assert chunks[-1].payload["finish_reason"] == "tool-calls"


async def test_generate_returns_tool_calls(server: FakeProviderServer) -> None:
    """A non-streamed ``tool_use`` block comes back as a tool call."""
    server.add(FakeReply.tool_call("search", {"q": "x"}, id="toolu_7"))
    response = await model_for(server).generate(ask(tools=[SEARCH]))
    assert [(c.tool_call_id, c.tool_name, c.args) for c in response.tool_calls] == [
        ("toolu_7", "search", {"q": "x"})
    ]
    assert response.finish_reason == "tool-calls"


@pytest.mark.parametrize("reason", ["stop", "length", "content-filter", "tool-calls"])
async def test_stop_reasons_are_mapped(server: FakeProviderServer, reason: Any) -> None:
    """Every stop reason maps to procflow's finish reason, streamed or not."""
    server.add(FakeReply(text="x", finish_reason=reason), FakeReply(text="x", finish_reason=reason))
    model = model_for(server)
    assert (await model.generate(ask())).finish_reason == reason
    assert (await collect(model, ask()))[-1].payload["finish_reason"] == reason


async def test_request_body_follows_the_messages_format(server: FakeProviderServer) -> None:
    """System prompt, images, signed thinking, tool use and tool results go out in the documented shape."""
    server.add(FakeReply(text="done"))
    prompt = [
        PromptMessage(role="system", content=[PromptText(text="Be brief.")]),
        PromptMessage(
            role="user",
            content=[
                PromptText(text="Compare these."),
                PromptFile(media_type="image/png", data="iVBORw0KGgo="),
                PromptFile(media_type="image/jpeg", url="https://x.test/b.jpg"),
            ],
        ),
        PromptMessage(
            role="assistant",
            content=[
                PromptReasoning(text="They differ.", signature="sig-1"),
                PromptReasoning(text="unsigned, dropped"),
                PromptToolCall(tool_call_id="toolu_1", tool_name="search", args={"q": "diff"}),
            ],
        ),
        PromptMessage(
            role="tool",
            content=[
                PromptToolResult(tool_call_id="toolu_1", tool_name="search", result="no match", is_error=True)
            ],
        ),
        PromptMessage(role="user", content=[PromptText(text="Go on.")]),
    ]
    request = ModelRequest(prompt=prompt, tools=[SEARCH], tool_choice="required", temperature=0.5)
    await model_for(server).generate(request)
    recorded = server.requests[0]
    body = recorded.json
    assert recorded.path == "/v1/messages"
    assert (recorded.headers["x-api-key"], recorded.headers["anthropic-version"]) == (
        "sk-ant-test",
        "2023-06-01",
    )
    assert body["system"] == [{"type": "text", "text": "Be brief."}]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Compare these."},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                },
                {"type": "image", "source": {"type": "url", "url": "https://x.test/b.jpg"}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "They differ.", "signature": "sig-1"},
                {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"q": "diff"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "no match", "is_error": True},
                {"type": "text", "text": "Go on."},
            ],
        },
    ]
    assert body["tools"] == [
        {"name": "search", "description": "Search the docs.", "input_schema": SEARCH.parameters}
    ]
    assert body["tool_choice"] == {"type": "any"}
    assert (body["max_tokens"], body["temperature"]) == (4096, 0.5)


async def test_response_format_and_thinking_options_reach_the_request(server: FakeProviderServer) -> None:
    """A JSON schema becomes a system instruction; ``anthropic`` provider options join the body."""
    server.add(FakeReply(text="{}"))
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    request = ask(
        response_format={"type": "json_schema", "json_schema": {"name": "city", "schema": schema}},
        provider_options={"anthropic": {"thinking": {"type": "enabled", "budget_tokens": 1024}}},
        max_output_tokens=2000,
    )
    await model_for(server).generate(request)
    body = server.requests[0].json
    assert '{"type": "object"' in body["system"][0]["text"]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert body["max_tokens"] == 2000


async def test_unsupported_file_types_are_a_clear_error(server: FakeProviderServer) -> None:
    """A file the Messages API cannot take is refused before any request, naming the type."""
    prompt = [PromptMessage(role="user", content=[PromptFile(media_type="video/mp4", data="AAAA")])]
    with pytest.raises(ValueError, match="video/mp4"):
        await model_for(server).generate(ModelRequest(prompt=prompt))
    assert server.requests == []

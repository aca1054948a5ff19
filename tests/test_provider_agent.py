"""The agent over real providers: tool loops, error processors and local-model ids, via the fake server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from procflow import Agent
from procflow.errors import APICallError
from procflow.models import AnthropicModel, LanguageModel, OpenAICompatibleModel
from procflow.processors import StreamErrorRetryProcessor
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
def model(request: pytest.FixtureRequest, server: FakeProviderServer) -> LanguageModel:
    if request.param == "openai":
        return OpenAICompatibleModel("fake-model", base_url=server.base_url)
    return AnthropicModel("claude-fake", base_url=server.base_url, api_key="sk-ant-test")


def get_weather(city: str) -> str:
    """Current weather of a city."""
    return f"Sunny in {city}"


def last_text(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content)


async def test_two_step_tool_loop(server: FakeProviderServer, model: LanguageModel) -> None:
    """The model calls a tool, the agent runs it and sends the result back, the model answers."""
    server.add(
        FakeReply.tool_call("get_weather", {"city": "Paris"}, id="call_1"), FakeReply(text="It is sunny.")
    )
    agent = Agent(id="weather", model=model, instructions="Be brief.", tools=[get_weather])
    result = await agent.generate("Weather in Paris?")
    assert result.text == "It is sunny."
    assert [r.result for r in result.tool_results] == ["Sunny in Paris"]
    first, second = (r.json for r in server.requests)
    if model.provider == "openai":
        assert first["messages"][0] == {"role": "system", "content": "Be brief."}
        assert first["tools"][0]["function"]["name"] == "get_weather"
        assert second["messages"][-2]["tool_calls"][0]["id"] == "call_1"
        assert second["messages"][-1] == {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "Sunny in Paris",
        }
    else:
        assert first["system"] == [{"type": "text", "text": "Be brief."}]
        assert first["tools"][0]["name"] == "get_weather"
        assert second["messages"][-2]["content"][-1]["type"] == "tool_use"
        assert second["messages"][-1]["content"] == [
            {"type": "tool_result", "tool_use_id": "call_1", "content": "Sunny in Paris"}
        ]


async def test_agent_stream_over_a_provider(server: FakeProviderServer, model: LanguageModel) -> None:
    """``agent.stream()`` passes the provider's text deltas through and ends with its usage."""
    server.add(FakeReply(text="Streaming from a provider.", input_tokens=11, output_tokens=4))
    output = Agent(id="streamer", model=model).stream("Hi")
    text = "".join([chunk.text or "" async for chunk in output.full_stream if chunk.type == "text-delta"])
    result = output.result
    assert text == result.text == "Streaming from a provider."
    assert (result.usage.input_tokens, result.usage.output_tokens) == (11, 4)


async def test_rate_limit_with_retry_after_is_retried(
    server: FakeProviderServer, model: LanguageModel
) -> None:
    """A 429 with ``Retry-After`` is retried by StreamErrorRetryProcessor after the asked delay."""
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    server.add(
        FakeReply.error(429, "Rate limit reached", headers={"Retry-After": "2"}), FakeReply(text="Done.")
    )
    retry = StreamErrorRetryProcessor(max_retries=2, sleep=sleep)
    result = await Agent(id="retrying", model=model, error_processors=[retry]).generate("Hi")
    assert result.text == "Done."
    assert waits == [2.0]
    assert len(server.requests) == 2


async def test_dropped_stream_is_retried(server: FakeProviderServer, model: LanguageModel) -> None:
    """A connection dropped mid-stream is retried and the answer comes from the second attempt."""
    server.add(FakeReply(text="partial answer", break_after=1), FakeReply(text="Complete answer."))
    retry = StreamErrorRetryProcessor(max_retries=1, initial_delay=0)
    result = await Agent(id="retrying", model=model, error_processors=[retry]).generate("Hi")
    assert result.text == "Complete answer."
    assert len(server.requests) == 2


async def test_authentication_error_is_not_retried(server: FakeProviderServer, model: LanguageModel) -> None:
    """A 401 reaches the caller as an APICallError after one request: credentials never heal by waiting."""
    server.add(FakeReply.error(401, "Invalid API key"), FakeReply(text="never sent"))
    retry = StreamErrorRetryProcessor(max_retries=3, initial_delay=0)
    with pytest.raises(APICallError) as caught:
        await Agent(id="retrying", model=model, error_processors=[retry]).generate("Hi")
    assert (caught.value.status_code, caught.value.is_retryable) == (401, False)
    assert len(server.requests) == 1


async def test_prefill_rejection_is_mended_by_the_built_in_handler(server: FakeProviderServer) -> None:
    """Anthropic's prefill rejection is answered by re-sending with a final user ``continue`` reminder."""
    rejection = (
        "This model does not support assistant message prefill. "
        "The conversation must end with a user message."
    )
    server.add(FakeReply.error(400, rejection), FakeReply(text="Continuing."))
    model = AnthropicModel("claude-fake", base_url=server.base_url, api_key="sk-ant-test")
    result = await Agent(id="prefill", model=model).generate(
        [{"role": "user", "content": "Write a haiku."}, {"role": "assistant", "content": "Autumn moon"}]
    )
    assert result.text == "Continuing."
    first, second = (r.json for r in server.requests)
    assert first["messages"][-1]["role"] == "assistant"
    assert second["messages"][-1]["role"] == "user"
    assert "continue" in last_text(second)


@pytest.mark.parametrize(
    ("model_id", "variable", "root_only"),
    [("ollama/llama3.2", "OLLAMA_BASE_URL", True), ("openai-compatible/qwen2.5", "OPENAI_BASE_URL", False)],
)
async def test_local_model_ids_reach_the_server_with_no_code_change(
    server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch, model_id: str, variable: str, root_only: bool
) -> None:
    """An agent given a local-model id talks to the server its environment variable points at."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv(variable, server.url if root_only else server.base_url)
    server.add(FakeReply.tool_call("get_weather", {"city": "Oslo"}), FakeReply(text="Sunny in Oslo."))
    result = await Agent(id="local", model=model_id, tools=[get_weather]).generate("Weather in Oslo?")
    assert result.text == "Sunny in Oslo."
    assert [r.path for r in server.requests] == ["/v1/chat/completions"] * 2
    assert server.requests[0].json["model"] == model_id.split("/", 1)[1]

"""TokenLimiter budgets what is sent: tool arguments and results count as the provider wires write them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from procflow import Agent, Message, MessageContent, TextPart, ToolInvocationPart
from procflow.models import AnthropicModel, LanguageModel, OpenAICompatibleModel
from procflow.processors import TiktokenCounter, TokenLimiter
from procflow.testing import FakeProviderServer, FakeReply, run_llm_request

COUNTER = TiktokenCounter()
OVERHEAD = 3  # TokenLimiter's default message_overhead and prompt_overhead


@pytest.fixture(scope="module")
def shared_server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as server:
        yield server


@pytest.fixture
def server(shared_server: FakeProviderServer) -> FakeProviderServer:
    shared_server.reset()
    return shared_server


def model_for(provider: str, server: FakeProviderServer) -> LanguageModel:
    if provider == "openai":
        return OpenAICompatibleModel("fake-model", base_url=server.base_url)
    return AnthropicModel("claude-fake", base_url=server.base_url, api_key="sk-ant-test")


def history() -> list[Message]:
    """Earlier turns whose tool traffic is Chinese: arguments and structured results."""
    out: list[Message] = []
    for index in range(6):
        city = ["北京", "上海", "广州", "深圳", "成都", "杭州"][index]
        call = ToolInvocationPart(
            tool_call_id=f"call_{index}",
            tool_name="lookup_order",
            args={"城市": city, "备注": f"请尽快发货，订单号 {4710 + index}，谢谢！"},
            state="result",
            result={
                "状态": "已发货",
                "地址": f"{city}市中心路 {index + 1} 号",
                "物品": ["书", "茶叶", "瓷器"],
            },
        )
        parts: list[Any] = [TextPart(text="我查一下。"), call]
        out.append(Message.user(f"我的订单 {4710 + index} 在哪里？"))
        out.append(Message(role="assistant", content=MessageContent(parts=parts)))
        out.append(Message.assistant(f"订单 {4710 + index} 已经从{city}发出。"))
    return out


def count(text: str) -> int:
    return COUNTER.count(text)


def openai_cost(body: dict[str, Any]) -> int:
    """What the OpenAI body sends, counted with the limiter's cost model."""
    total = OVERHEAD
    for message in body["messages"]:
        content = message.get("content") or ""
        if isinstance(content, list):
            content = "".join(block.get("text", "") for block in content)
        total += OVERHEAD + count(message["role"]) + count(content)
        for call in message.get("tool_calls") or []:
            total += count(call["function"]["name"]) + count(call["function"]["arguments"])
    return total


def anthropic_cost(body: dict[str, Any]) -> int:
    """What the Anthropic body sends, counted with the limiter's cost model."""
    total = OVERHEAD
    for block in body.get("system") or []:
        total += OVERHEAD + count("system") + count(block["text"])
    for message in body["messages"]:
        total += OVERHEAD + count(message["role"])
        for block in message["content"]:
            if block["type"] == "text":
                total += count(block["text"])
            elif block["type"] == "tool_use":
                arguments = json.dumps(block["input"], ensure_ascii=False, separators=(",", ":"))
                total += count(block["name"]) + count(arguments)
            elif block["type"] == "tool_result":
                total += count(block["content"])
    return total


def wire_texts(body: dict[str, Any]) -> list[str]:
    """The tool arguments and results of a body, as the strings sent."""
    out: list[str] = []
    for message in body["messages"]:
        for call in message.get("tool_calls") or []:
            out.append(call["function"]["arguments"])
        if message["role"] == "tool":
            out.append(message["content"])
        if isinstance(message.get("content"), list):
            out.extend(b["content"] for b in message["content"] if b["type"] == "tool_result")
    return out


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("limit", [160, 220, 300, 420])
async def test_a_trimmed_prompt_with_chinese_tool_traffic_fits_once_sent(
    server: FakeProviderServer, provider: str, limit: int
) -> None:
    """The body each wire sends after trimming counts within the limit, Chinese tool payloads included."""
    server.add(FakeReply(text="好的。"))
    agent = Agent(
        id="orders",
        model=model_for(provider, server),
        instructions="你是客服。",
        input_processors=[TokenLimiter(limit)],
    )
    messages = [*history(), Message.user("最新的订单呢？")]
    result = await agent.generate(messages)
    assert result.text == "好的。"
    body = server.requests[0].json
    sent = openai_cost(body) if provider == "openai" else anthropic_cost(body)
    assert await counted(messages, "你是客服。") > limit  # so the limiter had to trim
    assert limit / 2 < sent <= limit
    payloads = wire_texts(body)
    assert payloads, "some tool traffic was kept"
    assert all("\\u" not in text and ", " not in text for text in payloads if text.startswith("{"))
    assert any("已发货" in text or "城市" in text for text in payloads)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_untrimmed_prompts_count_the_same_as_sent(server: FakeProviderServer, provider: str) -> None:
    """With room for everything, the limiter's count of the prompt equals the count of the body sent."""
    server.add(FakeReply(text="好的。"))
    limiter = TokenLimiter(100_000)
    agent = Agent(
        id="orders", model=model_for(provider, server), instructions="你是客服。", input_processors=[limiter]
    )
    messages = [*history(), Message.user("最新的订单呢？")]
    await agent.generate(messages)
    body = server.requests[0].json
    if provider == "openai":
        # One wire message per prompt message: the counts are equal.
        assert openai_cost(body) == await counted(messages, "你是客服。")
    else:
        # Anthropic merges consecutive turns of one role: fewer framings, never more tokens.
        assert anthropic_cost(body) <= await counted(messages, "你是客服。")


async def counted(messages: list[Message], instructions: str) -> int:
    """The limiter's own count of the whole prompt (before any trimming)."""
    outcome = await run_llm_request(TokenLimiter(100_000), messages, system_messages=[instructions])
    tokens: int = outcome.state["last_trim"]["tokens_before"]
    return tokens

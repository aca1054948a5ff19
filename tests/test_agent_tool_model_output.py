"""Tools declare what the model sees: ``to_model_output`` replaces the raw result in every prompt."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from _agent_support import MODES, call

from procflow import Agent, tool
from procflow.errors import ConfigurationError
from procflow.models import AnthropicModel, LanguageModel, OpenAICompatibleModel, PromptText, PromptToolResult
from procflow.processors import ToolCallFilter
from procflow.testing import FakeProviderServer, FakeReply, ScriptedModel, ScriptedStep

ASYNCIO_ONLY = True  # real provider sockets: see tests/conftest.py

RAW = {"order": 42, "status": "shipped", "warehouse_ref": "WH-INTERNAL-9913", "lines": list(range(50))}


def summary(result: dict[str, Any]) -> str:
    return f"order {result['order']}: {result['status']}"


@tool(to_model_output=summary)
def lookup_order(order: int) -> dict[str, Any]:
    """Look an order up."""
    return RAW


def tool_results(prompt: list[Any]) -> list[Any]:
    return [p.result for m in prompt for p in m.content if isinstance(p, PromptToolResult)]


def script() -> ScriptedModel:
    return ScriptedModel([ScriptedStep(tool_calls=[("lookup_order", {"order": 42})]), "It has shipped."])


@pytest.mark.parametrize("mode", MODES)
async def test_the_model_sees_the_model_output_and_the_caller_the_raw_result(mode: str) -> None:
    """The next prompt carries ``to_model_output(result)``; the result, message and chunk keep the raw one."""
    model = script()
    outcome = await call(Agent(id="a", model=model, tools=[lookup_order]), mode, "Where is order 42?")
    result = outcome.result
    assert tool_results(model.prompts[1]) == ["order 42: shipped"]
    assert "WH-INTERNAL-9913" not in str(model.prompts[1])
    (done,) = result.tool_results
    assert (done.result, done.model_output) == (RAW, "order 42: shipped")
    (part,) = result.response.messages[0].tool_invocations
    assert (part.result, part.model_output) == (RAW, "order 42: shipped")
    if mode == "stream":
        (chunk,) = [c for c in outcome.chunks if c.type == "tool-result"]
        assert (chunk.payload["result"], chunk.payload["model_output"]) == (RAW, "order 42: shipped")


async def test_an_async_to_model_output_returning_json_is_sent_as_json() -> None:
    """``to_model_output`` may be async and return a JSON value instead of text."""

    async def compact(result: dict[str, Any]) -> dict[str, Any]:
        return {"order": result["order"], "status": result["status"]}

    lookup = tool(lookup_order.execute, name="lookup_order", to_model_output=compact)
    model = script()
    await Agent(id="a", model=model, tools=[lookup]).generate("Where is order 42?")
    assert tool_results(model.prompts[1]) == [{"order": 42, "status": "shipped"}]


async def test_a_failing_to_model_output_shows_the_model_an_error_not_the_raw_result() -> None:
    """When ``to_model_output`` raises, the model gets an error result and never the raw result."""

    def broken(result: Any) -> str:
        raise KeyError("warehouse_ref")

    lookup = tool(lookup_order.execute, name="lookup_order", to_model_output=broken)
    model = script()
    result = await Agent(id="a", model=model, tools=[lookup]).generate("Where is order 42?")
    (done,) = result.tool_results
    assert done.is_error and "to_model_output failed (KeyError)" in done.result
    assert "WH-INTERNAL-9913" not in str(model.prompts[1])


async def test_none_from_to_model_output_shows_the_raw_result() -> None:
    """A ``to_model_output`` returning ``None`` leaves the raw result as what the model sees."""
    lookup = tool(lookup_order.execute, name="lookup_order", to_model_output=lambda result: None)
    model = script()
    await Agent(id="a", model=model, tools=[lookup]).generate("Where is order 42?")
    assert tool_results(model.prompts[1]) == [RAW]


def test_to_model_output_must_be_callable() -> None:
    """A ``to_model_output`` that is not a function is refused, saying what it must be."""
    with pytest.raises(ConfigurationError, match="to_model_output must be a function"):
        tool(lookup_order.execute, name="lookup_order", to_model_output="summary")


async def test_the_filter_keeps_only_the_model_output_record_in_later_turns() -> None:
    """Next turn, ``ToolCallFilter(preserve_model_output=True)`` leaves just the compact model output."""
    first = await Agent(id="a", model=script(), tools=[lookup_order]).generate("Where is order 42?")
    model = ScriptedModel(["Order 43 is on its way."])
    agent = Agent(
        id="a",
        model=model,
        tools=[lookup_order],
        input_processors=[ToolCallFilter(preserve_model_output=True)],
    )
    history = [*first.response.message_list.input, *first.response.messages]
    await agent.generate([*history, "And order 43?"])
    (prompt,) = model.prompts
    texts = [p.text for m in prompt for p in m.content if isinstance(p, PromptText)]
    assert "[lookup_order result: order 42: shipped]" in texts
    assert tool_results(prompt) == []
    assert "WH-INTERNAL-9913" not in str(prompt) and "'order': 42" not in str(prompt)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as running:
        yield running


@pytest.fixture(params=["openai", "anthropic"])
def provider_model(request: pytest.FixtureRequest, server: FakeProviderServer) -> LanguageModel:
    server.reset()
    if request.param == "openai":
        return OpenAICompatibleModel("fake-model", base_url=server.base_url)
    return AnthropicModel("claude-fake", base_url=server.base_url, api_key="sk-ant-test")


async def test_the_provider_receives_the_model_output_on_the_wire(
    server: FakeProviderServer, provider_model: LanguageModel
) -> None:
    """Over both wire protocols, the tool result sent is the model output, not the raw result."""
    server.add(FakeReply.tool_call("lookup_order", {"order": 42}, id="call_1"), FakeReply(text="Shipped."))
    result = await Agent(id="a", model=provider_model, tools=[lookup_order]).generate("Order 42?")
    assert result.text == "Shipped." and result.tool_results[0].result == RAW
    sent = server.requests[1].json
    assert "WH-INTERNAL-9913" not in json.dumps(sent)
    assert "order 42: shipped" in json.dumps(sent["messages"][-1])

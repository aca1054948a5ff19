"""ToolCallFilter through `procflow serve`: the client runs the tools, the current turn reaches the model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from guard_seams_support import SHAPES, listed

from procflow.models import OpenAICompatibleModel
from procflow.processors import ToolCallFilter
from procflow.server import GatewayConfig, create_app
from procflow.server import serve_in_background as serving
from procflow.testing import FakeProviderServer, FakeReply

LANGS = {
    "en": ("Where is order A-1?", "status: shipped to London"),
    "fr": ("Où est la commande A-1 ?", "statut : expédiée à Paris"),
    "es": ("¿Dónde está el pedido A-1?", "estado: enviado a Madrid"),
    "zh": ("订单 A-1 在哪里？", "状态：已发往北京"),
}


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _reset(upstream: FakeProviderServer) -> None:
    upstream.reset()


def wire(question: str, *results: tuple[str, str]) -> list[dict[str, Any]]:
    """An OpenAI-format conversation: an earlier turn with a tool call, then ``question`` and the
    client's tool rounds for it."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "weather in Oslo?"},
        {"role": "assistant", "content": None, "tool_calls": [_wire_call("old_w", "weather")]},
        {"role": "tool", "tool_call_id": "old_w", "content": "sunny"},
        {"role": "assistant", "content": "It is sunny."},
        {"role": "user", "content": question},
    ]
    for call_id, result in results:
        messages.append({"role": "assistant", "content": None, "tool_calls": [_wire_call(call_id, "lookup")]})
        messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
    return messages


def _wire_call(call_id: str, name: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": '{"q": "A-1"}'}}


WIRE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": "look up",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    }
    for name in ("lookup", "weather")
]


async def ask(url: str, messages: list[dict[str, Any]], *, stream: bool, **options: Any) -> str:
    """The answer's text, through the official client, streamed or not."""
    async with openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0) as client:
        if not stream:
            answer = await client.chat.completions.create(
                model="fake-model", messages=messages, tools=WIRE_TOOLS, **options
            )
            return answer.choices[0].message.content or ""
        chunks = await client.chat.completions.create(
            model="fake-model", messages=messages, tools=WIRE_TOOLS, stream=True, **options
        )
        return "".join([c.choices[0].delta.content or "" async for c in chunks if c.choices])


def sent_tool_ids(request: Any) -> list[str]:
    """The tool-call ids the upstream received: each call, then each result."""
    ids: list[str] = []
    for message in request.json["messages"]:
        ids += [c["id"] for c in message.get("tool_calls") or ()]
        ids += [message["tool_call_id"]] if message["role"] == "tool" else []
    return ids


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("lang", sorted(LANGS))
async def test_the_gateway_sends_the_result_of_the_call_the_model_just_made(
    upstream: FakeProviderServer, stream: bool, shape: str, lang: str
) -> None:
    """Through `procflow serve` the client runs the tool and sends its result back: the upstream gets the
    call and the result of this turn (not the earlier turn's), so it answers instead of asking again —
    with the filter listed directly or inside a workflow."""
    question, found = LANGS[lang]
    upstream.add(FakeReply(text="Done.", chunk_size=2))
    config = GatewayConfig(
        upstream=OpenAICompatibleModel("fake-model", base_url=upstream.base_url),
        input_processors=listed(shape, lambda: [ToolCallFilter()]),
    )
    with serving(create_app(config)) as url:
        text = await ask(url, wire(question, ("call_9", found)), stream=stream)
    assert text == "Done."
    (request,) = upstream.requests
    assert sent_tool_ids(request) == ["call_9", "call_9"]
    assert request.json["messages"][-1] == {"role": "tool", "tool_call_id": "call_9", "content": found}


@pytest.mark.parametrize("stream", [False, True])
async def test_the_gateway_counts_each_client_round_as_a_tool_step(
    upstream: FakeProviderServer, stream: bool
) -> None:
    """filter_after_tool_steps=1 keeps the last of the turn's client rounds, as in the agent's loop."""
    upstream.add(FakeReply(text="Done."))
    config = GatewayConfig(
        upstream=OpenAICompatibleModel("fake-model", base_url=upstream.base_url),
        input_processors=[ToolCallFilter(filter_after_tool_steps=1)],
    )
    with serving(create_app(config)) as url:
        await ask(url, wire("where is A-1?", ("r1", "not found"), ("r2", "shipped")), stream=stream)
    assert sent_tool_ids(upstream.requests[0]) == ["r2", "r2"]


async def test_the_gateway_with_memory_sends_the_recalled_call_with_the_new_result(
    upstream: FakeProviderServer, tmp_path: Path
) -> None:
    """With a thread in memory the client sends only the tool message: memory's call and it both stay."""
    from procflow.memory import Memory, SQLiteStorage

    upstream.add(FakeReply.tool_call("lookup", {"q": "A-1"}, id="call_7"), FakeReply(text="Shipped."))
    config = GatewayConfig(
        upstream=OpenAICompatibleModel("fake-model", base_url=upstream.base_url),
        input_processors=[ToolCallFilter()],
        memory=Memory(storage=SQLiteStorage(tmp_path / "memory.sqlite")),
    )
    thread = {"extra_headers": {"X-Procflow-Thread": "t-1"}}
    with serving(create_app(config)) as url:
        await ask(url, [{"role": "user", "content": "¿Dónde está A-1?"}], stream=False, **thread)
        result = {"role": "tool", "tool_call_id": "call_7", "content": "enviado"}
        assert await ask(url, [result], stream=True, **thread) == "Shipped."
    assert sent_tool_ids(upstream.requests[1]) == ["call_7", "call_7"]

"""Connection reuse: one client per model and event loop, closed by aclose(); injected clients stay open."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest

from procflow.models import AnthropicModel, ModelRequest, OpenAICompatibleModel, PromptMessage, PromptText
from procflow.testing import FakeProviderServer, FakeReply

REQUEST = ModelRequest(prompt=[PromptMessage(role="user", content=[PromptText(text="Hi")])])


@pytest.fixture(scope="module")
def shared_server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as server:
        yield server


@pytest.fixture
def server(shared_server: FakeProviderServer) -> FakeProviderServer:
    shared_server.reset()
    return shared_server


@pytest.fixture(params=["openai", "anthropic"])
def model_class(request: pytest.FixtureRequest) -> Any:
    return OpenAICompatibleModel if request.param == "openai" else AnthropicModel


async def test_ten_sequential_calls_open_one_connection(server: FakeProviderServer, model_class: Any) -> None:
    """Ten generate() calls, then ten streams, on one model: the server accepts a single connection."""
    server.add(*(FakeReply(text=f"answer {i}") for i in range(20)))
    async with model_class("m", base_url=server.base_url) as model:
        answers = [(await model.generate(REQUEST)).text for _ in range(10)]
        assert server.connections == 1
        for _ in range(10):
            async for _chunk in model.stream(REQUEST):
                pass
    assert answers == [f"answer {i}" for i in range(10)]
    assert (len(server.requests), server.connections) == (20, 1)


async def test_aclose_closes_the_connection_and_the_model_stays_usable(
    server: FakeProviderServer, model_class: Any
) -> None:
    """After aclose() the next call opens a new connection and still works."""
    server.add(FakeReply(text="one"), FakeReply(text="two"))
    model = model_class("m", base_url=server.base_url)
    assert (await model.generate(REQUEST)).text == "one"
    await model.aclose()
    await model.aclose()  # idempotent
    assert (await model.generate(REQUEST)).text == "two"
    await model.aclose()
    assert server.connections == 2


def test_a_second_event_loop_gets_its_own_client(server: FakeProviderServer, model_class: Any) -> None:
    """A model used from a second anyio.run() opens a new connection instead of reusing a dead loop's."""
    server.add(*(FakeReply(text=f"run {i}") for i in range(4)))
    model = model_class("m", base_url=server.base_url)

    async def two_calls() -> list[str]:
        return [(await model.generate(REQUEST)).text for _ in range(2)]

    first = anyio.run(two_calls)
    second = anyio.run(two_calls, backend="trio")
    assert (first, second) == (["run 0", "run 1"], ["run 2", "run 3"])
    assert server.connections == 2


async def test_injected_client_is_never_closed(server: FakeProviderServer, model_class: Any) -> None:
    """A user's client carries the calls and stays open after aclose() and ``async with``."""
    server.add(FakeReply(text="a"), FakeReply(text="b"))
    async with httpx.AsyncClient() as client:
        async with model_class("m", base_url=server.base_url, client=client) as model:
            assert (await model.generate(REQUEST)).text == "a"
        await model.aclose()
        assert not client.is_closed
        response = await client.post(server.base_url + "/chat/completions", json={"model": "m"})
        assert response.json()["choices"][0]["message"]["content"] == "b"
    assert server.connections == 1


async def test_concurrent_calls_share_the_model_client(server: FakeProviderServer, model_class: Any) -> None:
    """Calls running at the same time in one loop use the model's pool (one connection each at most)."""
    server.add(*(FakeReply(text="x", delay=0.05) for _ in range(6)))
    texts: list[str] = []
    async with model_class("m", base_url=server.base_url) as model:

        async def call() -> None:
            texts.append((await model.generate(REQUEST)).text)

        async with anyio.create_task_group() as group:
            for _ in range(3):
                group.start_soon(call)
        opened = server.connections
        for _ in range(3):
            await call()
    assert texts == ["x"] * 6
    assert opened <= 3 and server.connections == opened

"""Semantic recall on both backends, with vectors from the fake provider server's embeddings endpoint."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from memory_support import Backend, backend

from procflow import Agent
from procflow.memory import SEMANTIC_RECALL_TAG, Memory, OpenAIEmbedder, SemanticRecallConfig
from procflow.processors import RegexFilterProcessor
from procflow.testing import FakeProviderServer, ScriptedModel

__all__ = ["backend"]

FACTS = (
    "my cat Luna loves tuna fish",
    "the weather in Paris is rainy today",
    "I am learning to play the violin",
    "my favourite colour is deep green",
)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as running:
        yield running


def _agent(backend: Backend, server: FakeProviderServer, **recall: object) -> tuple[Agent, ScriptedModel]:
    embedder = OpenAIEmbedder("fake-embedding", base_url=server.base_url, dimensions=256)
    config = SemanticRecallConfig(embedder=embedder, **recall)  # type: ignore[arg-type]
    model = ScriptedModel(["noted."], repeat_last=True)
    memory = Memory(storage=backend.storage, last_messages=0, semantic_recall=config)
    return Agent(id="recall", model=model, memory=memory), model


async def _remember(agent: Agent, thread: str, facts: tuple[str, ...] = FACTS) -> None:
    for fact in facts:
        await agent.generate(fact, memory={"thread": thread, "resource": "user-1"})


def _conversation(model: ScriptedModel) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in model.prompts[-1] if m.role != "system"]


async def test_recall_brings_the_similar_message_with_the_one_after_it(
    backend: Backend, server: FakeProviderServer
) -> None:
    """The first turn matches; its window (range 1) adds the answer after it and nothing before."""
    agent, model = _agent(backend, server, top_k=1, message_range=1, scope="thread")
    await _remember(agent, "t-1")
    await agent.generate("what does my cat Luna love", memory={"thread": "t-1"})
    assert _conversation(model) == [
        ("user", "my cat Luna loves tuna fish"),
        ("assistant", "noted."),
        ("user", "what does my cat Luna love"),
    ]


async def test_recall_window_reaches_both_sides_of_a_middle_hit(
    backend: Backend, server: FakeProviderServer
) -> None:
    """A hit in the middle of the thread comes with one message before it and one after it."""
    agent, model = _agent(backend, server, top_k=1, message_range=(1, 1), scope="thread")
    await _remember(agent, "t-1")
    await agent.generate("which instrument: the violin?", memory={"thread": "t-1"})
    assert _conversation(model) == [
        ("assistant", "noted."),
        ("user", "I am learning to play the violin"),
        ("assistant", "noted."),
        ("user", "which instrument: the violin?"),
    ]


async def test_resource_scope_recalls_other_threads_into_a_tagged_system_message(
    backend: Backend, server: FakeProviderServer
) -> None:
    """With scope 'resource', a match in another thread of the user is shown in a tagged system message."""
    agent, model = _agent(backend, server, top_k=1, message_range=0, scope="resource")
    await _remember(agent, "t-old")
    result = await agent.generate("is it rainy in Paris", memory={"thread": "t-new", "resource": "user-1"})
    system = result.response.message_list.tagged_system_messages(SEMANTIC_RECALL_TAG)
    assert len(system) == 1
    assert '<conversation thread="t-old">' in system[0].text
    assert "user: the weather in Paris is rainy today" in system[0].text
    assert _conversation(model) == [("user", "is it rainy in Paris")]


async def test_vectors_describe_the_processed_text(backend: Backend, server: FakeProviderServer) -> None:
    """Query and turn are embedded after redaction: no embeddings request carries the original address."""
    server.reset()
    embedder = OpenAIEmbedder("fake-embedding", base_url=server.base_url)
    memory = Memory(storage=backend.storage, semantic_recall=SemanticRecallConfig(embedder=embedder))
    redact = RegexFilterProcessor(presets=["pii"], strategy="redact")
    agent = Agent(
        id="recall",
        model=ScriptedModel(["noted."], repeat_last=True),
        memory=memory,
        input_processors=[redact],
    )
    await agent.generate("write to jane.doe@example.com", memory={"thread": "t-1"})
    bodies = [r.body.decode() for r in server.requests if r.path.endswith("/embeddings")]
    assert len(bodies) == 2  # the query, then the turn
    assert all("jane.doe@example.com" not in body for body in bodies)
    assert all("write to" in body for body in bodies)

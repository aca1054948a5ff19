"""ResponseCache in the agent loop: hits replay the stored stream, misses call the model, scopes isolate."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from _agent_support import MODES, call
from _cache_support import backend_fixture  # noqa: F401 - provides the `backend` fixture
from hypothesis import given, settings
from hypothesis import strategies as st
from services import RedisServer

from procflow import Agent, Chunk, RequestContext
from procflow.cache import InMemoryServerCache, RedisCache, ServerCache
from procflow.memory import RESOURCE_ID_KEY
from procflow.processors import ResponseCache
from procflow.testing import ScriptedModel


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def comparable(chunks: list[Chunk]) -> list[tuple[str, Any]]:
    """Chunks without the final ``finish`` (its UI messages carry fresh message ids)."""
    return [(c.type, c.payload) for c in chunks if c.type != "finish"]


def cached_agent(
    model: ScriptedModel, backend: Callable[[], ServerCache] = InMemoryServerCache, **options: Any
) -> tuple[Agent, ResponseCache]:
    cache = ResponseCache(cache=backend(), **options)
    return Agent(id="a", model=model, input_processors=[cache]), cache


def for_resource(resource: str) -> RequestContext:
    return RequestContext({RESOURCE_ID_KEY: resource})


@pytest.mark.parametrize("mode", MODES)
async def test_second_identical_request_is_replayed(mode: str, backend: Callable[[], ServerCache]) -> None:
    """The repeat does not call the model and yields the same chunks, text, usage and finish reason."""
    model = ScriptedModel(["The shop opens at nine."], chunk_size=5)
    agent, _ = cached_agent(model, backend)
    first = await call(agent, mode, "When do you open?")
    second = await call(agent, mode, "When do you open?")
    assert model.calls == 1
    assert comparable(second.chunks) == comparable(first.chunks)
    assert second.result.text == first.result.text == "The shop opens at nine."
    assert second.result.usage == first.result.usage
    assert second.result.finish_reason == "stop"
    assert second.result.steps[0].from_cache and not first.result.steps[0].from_cache


async def test_a_different_prompt_is_a_miss(backend: Callable[[], ServerCache]) -> None:
    """Another question goes to the model."""
    model = ScriptedModel(["one", "two"])
    agent, _ = cached_agent(model, backend)
    assert (await agent.generate("first?")).text == "one"
    assert (await agent.generate("second?")).text == "two"
    assert model.calls == 2


async def test_entries_expire_after_ttl() -> None:
    """Once the TTL passed on the cache's clock, the model answers again."""
    clock = Clock()
    model = ScriptedModel(["old", "new"])
    processor = ResponseCache(cache=InMemoryServerCache(clock=clock), ttl=60)
    agent = Agent(id="a", model=model, input_processors=[processor])
    await agent.generate("Hi")
    clock.now = 59
    assert (await agent.generate("Hi")).text == "old"
    clock.now = 60
    assert (await agent.generate("Hi")).text == "new"


async def test_resources_do_not_share_entries_by_default(backend: Callable[[], ServerCache]) -> None:
    """The resource id in the request context scopes entries: another user misses."""
    model = ScriptedModel(["for alice", "for bob"])
    agent, _ = cached_agent(model, backend)
    await agent.generate("Hi", request_context=for_resource("alice"))
    bob = await agent.generate("Hi", request_context=for_resource("bob"))
    again = await agent.generate("Hi", request_context=for_resource("alice"))
    assert (bob.text, again.text, model.calls) == ("for bob", "for alice", 2)


@pytest.mark.parametrize("kind", ["memory", "redis"])
@settings(max_examples=25, deadline=None)
@given(
    prompts=st.lists(st.text(min_size=1, max_size=40), min_size=1, max_size=4),
    resources=st.lists(st.text(min_size=1, max_size=8), min_size=2, max_size=4, unique=True),
)
def test_two_resources_never_share_an_entry(
    kind: str, redis_server: RedisServer, prompts: list[str], resources: list[str]
) -> None:
    """Whatever the prompts and resource ids, each resource's first ask of a prompt reaches the model."""

    async def run() -> None:
        if kind == "memory":
            store: ServerCache = InMemoryServerCache()
        else:
            store = RedisCache(redis_server.url, prefix=f"{uuid.uuid4().hex}:", timeout=2)
        model = ScriptedModel(
            [lambda request: f"{request.prompt[-1].text}|{len(model.requests)}"], repeat_last=True
        )
        agent = Agent(id="a", model=model, input_processors=[ResponseCache(cache=store)])
        seen: dict[tuple[str, str], str] = {}
        for resource in resources:
            for prompt in prompts:
                calls = model.calls
                text = (await agent.generate(prompt, request_context=for_resource(resource))).text
                fresh = (resource, prompt) not in seen
                assert (model.calls == calls + 1) == fresh
                assert seen.setdefault((resource, prompt), text) == text
        if isinstance(store, RedisCache):
            await store.aclose()

    anyio.run(run)


async def test_explicit_scope_and_shared_scope(backend: Callable[[], ServerCache]) -> None:
    """``scope='org-123'`` groups every caller under one tenant; ``scope=None`` shares deliberately."""
    for scope in ("org-123", None):
        model = ScriptedModel(["shared answer"])
        agent, _ = cached_agent(model, backend, scope=scope)
        await agent.generate("Hi", request_context=for_resource("alice"))
        bob = await agent.generate("Hi", request_context=for_resource("bob"))
        assert (bob.text, model.calls) == ("shared answer", 1)


async def test_per_call_scope_override(backend: Callable[[], ServerCache]) -> None:
    """``ResponseCache.context(scope=...)`` replaces the scope for one request."""
    model = ScriptedModel(["a", "b"])
    agent, _ = cached_agent(model, backend)
    await agent.generate("Hi", request_context=ResponseCache.context(scope="team"))
    hit = await agent.generate("Hi", request_context=ResponseCache.context(scope="team"))
    other = await agent.generate("Hi", request_context=ResponseCache.context(scope="other"))
    assert (hit.text, other.text, model.calls) == ("a", "b", 2)


async def test_bust_skips_the_read_but_writes(backend: Callable[[], ServerCache]) -> None:
    """``bust=True`` calls the model and stores the fresh answer for the next caller."""
    model = ScriptedModel(["old", "fresh"])
    agent, _ = cached_agent(model, backend)
    await agent.generate("Hi")
    busted = await agent.generate("Hi", request_context=ResponseCache.context(bust=True))
    after = await agent.generate("Hi")
    assert (busted.text, after.text, model.calls) == ("fresh", "fresh", 2)


async def test_apply_context_merges_into_an_existing_context(backend: Callable[[], ServerCache]) -> None:
    """``apply_context`` keeps the caller's values and earlier overrides."""
    ctx = RequestContext({"caller-meta": {"user_id": "u-123"}})
    ResponseCache.apply_context(ctx, scope="team")
    assert ResponseCache.apply_context(ctx, bust=True) is ctx
    model = ScriptedModel(["a", "b"])
    agent, _ = cached_agent(model, backend)
    await agent.generate("Hi", request_context=ResponseCache.context(scope="team"))
    busted = await agent.generate("Hi", request_context=ctx)
    assert (busted.text, model.calls, ctx.get("caller-meta")) == ("b", 2, {"user_id": "u-123"})


async def test_a_fixed_key_shares_one_entry_between_prompts(backend: Callable[[], ServerCache]) -> None:
    """A string ``key`` names the entry: another prompt with the same key is a hit."""
    model = ScriptedModel(["first"])
    agent, _ = cached_agent(model, backend)
    ctx = ResponseCache.context(key="faq-hours")
    await agent.generate("When do you open?", request_context=ctx)
    hit = await agent.generate("Opening hours?", request_context=ResponseCache.context(key="faq-hours"))
    assert (hit.text, model.calls) == ("first", 1)


async def test_a_key_function_sees_the_inputs(backend: Callable[[], ServerCache]) -> None:
    """A key function gets model, prompt, scope and step; its key decides hits."""
    seen: list[dict[str, Any]] = []

    def key(inputs: Any) -> str:
        seen.append(dict(inputs))
        return f"qa:{inputs['model']['model_id']}:{inputs['prompt'][-1].text.lower()}"

    model = ScriptedModel(["answer"])
    agent, _ = cached_agent(model, backend, key=key)
    await agent.generate("HELLO")
    hit = await agent.generate("hello")
    assert (hit.text, model.calls) == ("answer", 1)
    assert seen[0]["model"] == {"provider": "scripted", "model_id": "scripted-model", "spec_version": None}
    assert seen[0]["step_number"] == 0 and seen[0]["scope"] is None


async def test_a_failing_key_function_falls_back_to_the_default_key(
    backend: Callable[[], ServerCache],
) -> None:
    """A key function that raises still caches, under the derived key."""

    def broken(inputs: Any) -> str:
        raise RuntimeError("boom")

    model = ScriptedModel(["answer"])
    agent, _ = cached_agent(model, backend, key=broken)
    await agent.generate("Hi")
    hit = await agent.generate("Hi")
    assert (hit.text, model.calls) == ("answer", 1)


async def test_an_async_key_function_is_awaited(backend: Callable[[], ServerCache]) -> None:
    """Key functions may be ``async``."""

    async def key(inputs: Any) -> str:
        return "same"

    model = ScriptedModel(["answer"])
    agent, _ = cached_agent(model, backend, key=key)
    await agent.generate("one")
    assert (await agent.generate("two")).text == "answer"
    assert model.calls == 1


class HangingCache(InMemoryServerCache):
    """A backend that never answers."""

    async def get(self, key: str) -> Any | None:
        await anyio.sleep_forever()

    async def set(self, key: str, value: Any, ttl: float | None = None) -> None:
        await anyio.sleep_forever()


async def test_a_slow_backend_is_a_miss_after_the_timeout() -> None:
    """A cache that hangs costs at most ``timeout`` per read and write; the request still answers."""
    model = ScriptedModel(["a", "b"])
    agent = Agent(id="a", model=model, input_processors=[ResponseCache(cache=HangingCache(), timeout=0.05)])
    assert (await agent.generate("Hi")).text == "a"
    assert (await agent.generate("Hi")).text == "b"


async def test_a_fixed_key_stays_within_the_tenant_scope(backend: Callable[[], ServerCache]) -> None:
    """Two users with the same string key keep separate entries unless ``scope=None`` shares it."""
    model = ScriptedModel(["for alice", "for bob", "shared"])
    agent, _ = cached_agent(model, backend)

    def ctx(resource: str, **options: Any) -> RequestContext:
        context = for_resource(resource)
        return ResponseCache.apply_context(context, key="faq", **options)

    await agent.generate("Hi", request_context=ctx("alice"))
    assert (await agent.generate("Hi", request_context=ctx("bob"))).text == "for bob"
    await agent.generate("Hi", request_context=ctx("alice", scope=None))
    assert (await agent.generate("Hi", request_context=ctx("bob", scope=None))).text == "shared"
    assert model.calls == 3


@pytest.mark.parametrize("shape", ["sequence", "parallel", "nested"])
async def test_a_cache_inside_a_workflow_hits_like_a_listed_one(shape: str) -> None:
    """Wrapped in a sequence, a parallel branch or a nested workflow, the cache writes and replays."""
    from procflow.processors import UnicodeNormalizer
    from procflow.workflows import ProcessorStepSchema, create_step, create_workflow, select

    def workflow(id: str) -> Any:
        return create_workflow(id=id, input_schema=ProcessorStepSchema, output_schema=ProcessorStepSchema)

    cache = create_step(ResponseCache(cache=InMemoryServerCache()))
    if shape == "sequence":
        guard = workflow("guards").then(create_step(UnicodeNormalizer())).then(cache).commit()
    elif shape == "parallel":
        guard = (
            workflow("guards")
            .parallel([cache, create_step(UnicodeNormalizer())])
            .map(select("processor:response-cache"))
            .commit()
        )
    else:
        guard = workflow("outer").then(workflow("inner").then(cache).commit()).commit()
    model = ScriptedModel(["Nous ouvrons à neuf heures."])
    agent = Agent(id="a", model=model, input_processors=[guard])
    first = await agent.generate("¿A qué hora abren?")
    second = await agent.generate("¿A qué hora abren?")
    assert model.calls == 1
    assert second.text == first.text == "Nous ouvrons à neuf heures."

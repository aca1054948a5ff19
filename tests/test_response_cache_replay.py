"""ResponseCache replays tool-loop steps without running tools, and never stores a failed run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from _agent_support import MODES, call
from _cache_support import backend_fixture  # noqa: F401 - provides the `backend` fixture

from procflow import Agent, APICallError, Chunk, tool
from procflow.cache import InMemoryServerCache, ServerCache
from procflow.processors import ProcessOutputStepArgs, ResponseCache
from procflow.testing import ScriptedModel, ScriptedStep


def comparable(chunks: list[Chunk]) -> list[tuple[str, Any]]:
    return [(c.type, c.payload) for c in chunks if c.type != "finish"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_loop_is_replayed_without_running_the_tool(
    mode: str, backend: Callable[[], ServerCache]
) -> None:
    """Both steps come from the cache: the tool does not run again and its result is the stored one."""
    runs: list[str] = []

    @tool
    def track_parcel(parcel_id: str) -> str:
        """Where a parcel is."""
        runs.append(parcel_id)
        return f"Parcel {parcel_id} is in Lyon (check #{len(runs)})."

    model = ScriptedModel([ScriptedStep(tool_calls=[("track_parcel", {"parcel_id": "P-17"})]), "In Lyon."])
    cache = ResponseCache(cache=backend())
    agent = Agent(id="tracker", model=model, tools=[track_parcel], input_processors=[cache])
    first = await call(agent, mode, "Where is P-17?")
    second = await call(agent, mode, "Where is P-17?")
    assert (model.calls, runs) == (2, ["P-17"])
    assert comparable(second.chunks) == comparable(first.chunks)
    assert second.result.text == "In Lyon."
    assert [r.result for r in second.result.tool_results] == ["Parcel P-17 is in Lyon (check #1)."]
    assert [s.from_cache for s in second.result.steps] == [True, True]
    tool_message = second.result.response.messages[0]
    assert tool_message.content.parts[0].result == "Parcel P-17 is in Lyon (check #1)."  # type: ignore[union-attr]


async def test_a_model_error_is_not_cached(backend: Callable[[], ServerCache]) -> None:
    """A provider failure writes nothing: the next call asks the model again."""
    model = ScriptedModel([APICallError("down", status_code=500), "recovered"])
    agent = Agent(id="a", model=model, input_processors=[ResponseCache(cache=backend())])
    with pytest.raises(APICallError):
        await agent.generate("Hi")
    assert (await agent.generate("Hi")).text == "recovered"
    assert model.calls == 2


@pytest.mark.parametrize("reason", ["content-filter", "length", "error"])
async def test_an_abnormal_finish_is_not_cached(reason: str, backend: Callable[[], ServerCache]) -> None:
    """Only ``stop`` and ``tool-calls`` steps are stored."""
    model = ScriptedModel([ScriptedStep(text="cut", finish_reason=reason), "whole"])  # type: ignore[arg-type]
    agent = Agent(id="a", model=model, input_processors=[ResponseCache(cache=backend())])
    await agent.generate("Hi")
    assert (await agent.generate("Hi")).text == "whole"


class RejectFirst:
    """Blocks the first answer it sees (an output guard)."""

    id = "reject-first"

    def __init__(self) -> None:
        self.seen = 0

    def process_output_step(self, args: ProcessOutputStepArgs) -> None:
        self.seen += 1
        if self.seen == 1:
            args.abort("not allowed")


async def test_a_tripped_run_is_not_cached(backend: Callable[[], ServerCache]) -> None:
    """An output guard's tripwire after the model answered leaves no entry behind."""
    model = ScriptedModel(["blocked answer", "good answer"])
    agent = Agent(
        id="a",
        model=model,
        input_processors=[ResponseCache(cache=backend())],
        output_processors=[RejectFirst()],
    )
    tripped = await agent.generate("Hi")
    assert tripped.tripwire is not None
    assert (await agent.generate("Hi")).text == "good answer"
    assert (await agent.generate("Hi")).text == "good answer"
    assert model.calls == 2


async def test_a_rejected_then_retried_step_stores_only_the_accepted_answer(
    backend: Callable[[], ServerCache],
) -> None:
    """With processor retries, only the answer that passed the guard is written."""
    model = ScriptedModel(["bad", "good"])
    agent = Agent(
        id="a",
        model=model,
        input_processors=[ResponseCache(cache=backend())],
        output_processors=[RetryFirst()],
        max_processor_retries=1,
    )
    assert (await agent.generate("Hi")).text == "good"
    replay = await agent.generate("Hi")
    assert model.calls == 2 and replay.text != "bad"


class RetryFirst:
    id = "retry-first"

    def __init__(self) -> None:
        self.seen = 0

    def process_output_step(self, args: ProcessOutputStepArgs) -> None:
        self.seen += 1
        if self.seen == 1:
            args.abort("too short", retry=True)


async def test_stored_entries_are_plain_json() -> None:
    """What the cache holds is versioned JSON data: chunk types and payloads, no objects."""
    store = InMemoryServerCache()
    agent = Agent(id="a", model=ScriptedModel(["Hello"]), input_processors=[ResponseCache(cache=store)])
    await agent.generate("Hi")
    (key,) = store._entries  # one entry
    entry = await store.get(key)
    assert key.startswith("rc2:") and entry["v"] == 1
    assert [c["type"] for c in entry["chunks"]] == ["text-delta", "finish"]
    assert entry["chunks"][-1]["payload"]["finish_reason"] == "stop"


async def test_memory_history_changes_the_key(backend: Callable[[], ServerCache]) -> None:
    """The key is over the resolved prompt: earlier history makes it a different request."""
    model = ScriptedModel(["a", "b"])
    agent = Agent(id="a", model=model, input_processors=[ResponseCache(cache=backend())])
    await agent.generate("Hi")
    history = [{"role": "user", "content": "Earlier question"}, {"role": "assistant", "content": "Earlier"}]
    assert (await agent.generate([*history, {"role": "user", "content": "Hi"}])).text == "b"


async def test_a_stream_abandoned_midway_is_not_cached(backend: Callable[[], ServerCache]) -> None:
    """A consumer that stops reading ends the run as aborted: nothing is written."""
    model = ScriptedModel(["a long answer in many chunks", "fresh"], chunk_size=4)
    agent = Agent(id="a", model=model, input_processors=[ResponseCache(cache=backend())])
    output = agent.stream("Hi")
    async for chunk in output.full_stream:
        if chunk.type == "text-delta":
            break
    await output.full_stream.aclose()  # type: ignore[attr-defined]
    assert (await agent.generate("Hi")).text == "fresh"


async def test_editing_a_replayed_stream_never_changes_the_stored_answer(
    backend: Callable[[], ServerCache],
) -> None:
    """A consumer that edits a hit's chunks, nested tool arguments included, leaves the next hit intact."""

    @tool
    def track_parcel(parcel_id: str, tags: list[str]) -> str:
        """Where a parcel is."""
        return f"Parcel {parcel_id} is in Lyon."

    call_args = {"parcel_id": "P-17", "tags": ["fragile"]}
    model = ScriptedModel([ScriptedStep(tool_calls=[("track_parcel", call_args)]), "In Lyon."])
    agent = Agent(
        id="a", model=model, tools=[track_parcel], input_processors=[ResponseCache(cache=backend())]
    )
    first = await call(agent, "stream", "Where is P-17?")
    for _ in range(2):
        replay = await call(agent, "stream", "Where is P-17?")
        assert comparable(replay.chunks) == comparable(first.chunks)
        for chunk in replay.chunks:
            chunk.payload["text"] = "tampered"
            if isinstance(chunk.payload.get("args"), dict):
                chunk.payload["args"]["tags"].append("tampered")
    assert model.calls == 2


async def test_an_entry_another_writer_stored_is_replayed() -> None:
    """An entry copied into another in-memory cache with plain ``set`` answers there too."""
    source, target = InMemoryServerCache(), InMemoryServerCache()
    model = ScriptedModel(["Stored once."])
    await Agent(id="a", model=model, input_processors=[ResponseCache(cache=source)]).generate("Hi")
    (key,) = source._entries
    await target.set(key, await source.get(key))
    agent = Agent(id="a", model=model, input_processors=[ResponseCache(cache=target)])
    for _ in range(2):
        assert (await agent.generate("Hi")).text == "Stored once."
    assert model.calls == 1


async def test_an_entry_of_another_version_is_a_miss_then_rewritten() -> None:
    """A value under the key that this version did not write is a miss; the fresh answer replaces it."""
    store = InMemoryServerCache()
    model = ScriptedModel(["first", "second", "third"])
    agent = Agent(id="a", model=model, input_processors=[ResponseCache(cache=store)])
    await agent.generate("Hi")
    (key,) = store._entries
    await store.set(key, {"v": 0, "chunks": []})
    assert (await agent.generate("Hi")).text == "second"
    assert (await agent.generate("Hi")).text == "second"
    assert model.calls == 2


async def test_a_hit_counts_as_a_use_for_eviction() -> None:
    """A replayed entry is the most recently used: past ``max_entries`` the one not asked again goes."""
    model = ScriptedModel(["one", "two", "three", "two again"])
    agent = Agent(
        id="a", model=model, input_processors=[ResponseCache(cache=InMemoryServerCache(max_entries=2))]
    )
    await agent.generate("first")
    await agent.generate("second")
    assert (await agent.generate("first")).text == "one"  # a hit: "second" is now the oldest
    await agent.generate("third")
    assert (await agent.generate("first")).text == "one"
    assert (await agent.generate("second")).text == "two again"
    assert model.calls == 4

"""Working memory on both backends: shown in a tagged system message, updated by the model's tool call."""

from __future__ import annotations

from typing import Any

from memory_support import Backend, backend
from pydantic import BaseModel

from procflow import Agent
from procflow.memory import (
    UPDATE_WORKING_MEMORY_TOOL,
    WORKING_MEMORY_TAG,
    Memory,
    WorkingMemoryConfig,
)
from procflow.processors import ProcessOutputResultArgs
from procflow.testing import ScriptedModel, ScriptedStep

__all__ = ["backend"]

ADA = "# User\n- Name: Ada\n"


def _agent(backend: Backend, model: ScriptedModel, **options: Any) -> Agent:
    config = options.pop("config", WorkingMemoryConfig())
    memory = Memory(storage=backend.storage, working_memory=config, read_only=options.pop("read_only", False))
    return Agent(id="wm", model=model, memory=memory, **options)


def _update(memory: Any) -> ScriptedStep:
    return ScriptedStep(tool_calls=[(UPDATE_WORKING_MEMORY_TOOL, {"memory": memory})])


def _system(model: ScriptedModel, call: int = -1) -> str:
    return "\n".join(m.text for m in model.prompts[call] if m.role == "system")


async def test_the_model_updates_working_memory_and_later_threads_see_it(backend: Backend) -> None:
    """Resource scope: an update in one thread is shown, in the tagged message, in another thread."""
    model = ScriptedModel([_update(ADA), "Nice to meet you, Ada.", "Hello again."])
    agent = _agent(backend, model)
    first = await agent.generate("I'm Ada", memory={"thread": "t-1", "resource": "user-1"})
    assert "- Name:\n" in _system(model, 0)  # the template, while nothing is stored
    tagged = first.response.message_list.tagged_system_messages(WORKING_MEMORY_TAG)
    assert len(tagged) == 1
    assert await backend.storage.get_working_memory("resource", "user-1") == ADA
    await agent.generate("hi", memory={"thread": "t-2", "resource": "user-1"})
    assert f"<working_memory>\n{ADA}\n</working_memory>" in _system(model)


async def test_thread_scope_keeps_working_memory_per_thread(backend: Backend) -> None:
    """Thread scope: another thread of the same user starts from the template."""
    model = ScriptedModel([_update(ADA), "ok", "hello"])
    agent = _agent(backend, model, config=WorkingMemoryConfig(scope="thread"))
    await agent.generate("I'm Ada", memory={"thread": "t-1", "resource": "user-1"})
    assert await backend.storage.get_working_memory("thread", "t-1") == ADA
    await agent.generate("hi", memory={"thread": "t-2", "resource": "user-1"})
    assert "Ada" not in _system(model)


async def test_a_pydantic_schema_validates_and_stores_json(backend: Backend) -> None:
    """With a schema, the tool takes the schema's object and the memory is stored as its JSON."""

    class Profile(BaseModel):
        name: str | None = None
        city: str | None = None

    model = ScriptedModel([_update({"name": "Ada", "city": "London"}), "ok"])
    agent = _agent(backend, model, config=WorkingMemoryConfig(schema=Profile))
    await agent.generate("I'm Ada from London", memory={"thread": "t-1", "resource": "user-1"})
    stored = await backend.storage.get_working_memory("resource", "user-1")
    assert stored is not None and Profile.model_validate_json(stored) == Profile(name="Ada", city="London")
    (spec,) = [t for t in model.requests[0].tools if t.name == UPDATE_WORKING_MEMORY_TOOL]
    assert "city" in str(spec.parameters)


async def test_an_output_tripwire_leaves_working_memory_unchanged(backend: Backend) -> None:
    """The update is saved with the turn: a turn stopped by a tripwire changes nothing."""

    class Refuse:
        id = "refuse"

        def process_output_result(self, args: ProcessOutputResultArgs) -> None:
            args.abort("not today")

    model = ScriptedModel([_update(ADA), "ok"])
    agent = _agent(backend, model, output_processors=[Refuse()])
    result = await agent.generate("I'm Ada", memory={"thread": "t-1", "resource": "user-1"})
    assert result.tripwire is not None
    assert await backend.storage.get_working_memory("resource", "user-1") is None


async def test_read_only_memory_offers_no_update_tool(backend: Backend) -> None:
    """A read-only memory shows the working memory but gives the model no tool to change it."""
    model = ScriptedModel(["hello"])
    agent = _agent(backend, model, read_only=True)
    await agent.generate("hi", memory={"thread": "t-1", "resource": "user-1"})
    assert WORKING_MEMORY_TAG and "<working_memory>" in _system(model)
    assert all(t.name != UPDATE_WORKING_MEMORY_TOOL for t in model.requests[0].tools)

"""One set of call options (``CallOptions``) for ``stream``, ``generate`` and ``generate_sync``."""

from __future__ import annotations

from typing import Any

import pytest
from _agent_support import MODES, call

from procflow import Agent, CallOptions, GenerateResult, tool
from procflow.errors import ConfigurationError
from procflow.processors import ProcessInputArgs
from procflow.testing import ScriptedModel, ScriptedStep


@tool
def lookup(term: str) -> str:
    """Look a term up."""
    return "found"


class Tag:
    """Reads a value from the request context."""

    id = "tag"

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def process_input(self, args: ProcessInputArgs) -> None:
        self.seen.append(args.request_context.get("user"))


def options(finished: list[GenerateResult], tag: Tag) -> CallOptions:
    return {
        "max_steps": 1,
        "request_context": {"user": "ada"},
        "input_processors": [tag],
        "tool_choice": "auto",
        "on_finish": finished.append,
    }


def script() -> ScriptedModel:
    return ScriptedModel([ScriptedStep(tool_calls=[("lookup", {"term": "x"})]), "never"])


def test_generate_sync_keeps_every_option() -> None:
    """``generate_sync`` honours the same options as ``generate``: steps, context, processors, callbacks."""
    finished: list[GenerateResult] = []
    tag, model = Tag(), script()
    result = Agent(id="a", model=model, tools=[lookup]).generate_sync("Go", **options(finished, tag))
    assert model.calls == 1 and len(result.steps) == 1
    assert tag.seen == ["ada"] and finished == [result]
    assert model.requests[0].tool_choice == "auto"


@pytest.mark.parametrize("mode", MODES)
async def test_stream_and_generate_take_the_same_options(mode: str) -> None:
    """The same ``CallOptions`` dict drives ``stream()`` and ``generate()`` alike."""
    finished: list[GenerateResult] = []
    tag, model = Tag(), script()
    outcome = await call(Agent(id="a", model=model, tools=[lookup]), mode, "Go", **options(finished, tag))
    assert model.calls == 1 and tag.seen == ["ada"] and finished == [outcome.result]


@pytest.mark.parametrize("entry", ["stream", "generate", "generate_sync"])
async def test_a_misspelt_option_is_refused(entry: str) -> None:
    """An unknown option raises a ConfigurationError naming it and listing the valid ones."""
    agent = Agent(id="a", model=ScriptedModel(["x"]))
    bad: dict[str, Any] = {"max_step": 2}
    with pytest.raises(ConfigurationError, match=r"unknown call option\(s\) \['max_step'\].*max_steps"):
        await start(agent, entry, bad)


async def start(agent: Agent, entry: str, options: dict[str, Any]) -> None:
    """Start a call through one entry point (``generate_sync`` refuses bad options before its loop)."""
    if entry == "stream":
        agent.stream("Hi", **options)
    elif entry == "generate":
        await agent.generate("Hi", **options)
    else:
        agent.generate_sync("Hi", **options)


@pytest.mark.parametrize("value", [0, -1, True, "3"])
def test_max_steps_must_be_a_positive_integer(value: Any) -> None:
    """``max_steps`` is checked when the call starts."""
    with pytest.raises(ConfigurationError, match="max_steps must be a positive integer"):
        Agent(id="a", model=ScriptedModel(["x"])).stream("Hi", max_steps=value)

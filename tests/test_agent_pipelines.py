"""Which processors run the LLM hooks, and per-object state when two processors share an id."""

from __future__ import annotations

from typing import Any

import pytest
from _agent_support import MODES, call

from procflow import Agent
from procflow.processors import ProcessLLMRequestArgs, ProcessOutputStreamArgs, TokenLimiter
from procflow.testing import ScriptedModel


@pytest.mark.parametrize("mode", MODES)
async def test_seed_token_limiter_in_both_lists(mode: str) -> None:
    """The seed's pattern — a TokenLimiter among the inputs and another among the outputs — runs."""
    model = ScriptedModel(["A short answer."])
    agent = Agent(
        id="a", model=model, input_processors=[TokenLimiter(4000)], output_processors=[TokenLimiter(1000)]
    )
    result = (await call(agent, mode, "hello")).result
    assert result.text == "A short answer." and result.tripwire is None
    assert model.prompts[0][-1].text == "hello"


@pytest.mark.parametrize("mode", MODES)
async def test_output_processor_llm_request_hook_does_not_touch_the_prompt(mode: str) -> None:
    """Only input processors rewrite the provider prompt; an output processor's request hook is not run."""
    calls: list[str] = []

    class Both:
        id = "both"

        def process_llm_request(self, args: ProcessLLMRequestArgs) -> None:
            calls.append("request")

        def process_output_stream(self, args: ProcessOutputStreamArgs) -> Any:
            return args.part

    agent = Agent(id="a", model=ScriptedModel(["ok"]), output_processors=[Both()])
    result = (await call(agent, mode, "hi")).result
    assert result.text == "ok" and calls == []


@pytest.mark.parametrize("mode", MODES)
async def test_processors_sharing_an_id_do_not_share_state(mode: str) -> None:
    """Two processor objects with one id (input and output lists) each get their own state dict."""
    seen: dict[str, Any] = {}

    class Marker:
        id = "marker"

        def __init__(self, side: str) -> None:
            self.side = side

        def process_input(self, args: Any) -> None:
            args.state["side"] = self.side

        def process_output_result(self, args: Any) -> None:
            seen[self.side] = dict(args.state)

    agent = Agent(
        id="a",
        model=ScriptedModel(["ok"]),
        input_processors=[Marker("in")],
        output_processors=[Marker("out")],
    )
    await call(agent, mode, "hi")
    assert seen == {"out": {}}


class Swappable:
    """An input processor whose hook can be replaced on the instance between requests."""

    id = "swappable"

    def __init__(self, seen: list[str]) -> None:
        self.seen = seen

    def process_input(self, args: Any) -> None:
        self.seen.append("first")


async def test_static_lists_are_built_once_per_agent_not_per_process() -> None:
    """An agent keeps the hooks it bound for its own list; another agent binds the same object afresh."""
    seen: list[str] = []
    processor = Swappable(seen)
    agent = Agent(id="a", model=ScriptedModel(["1", "2"]), input_processors=[processor])
    await agent.generate("hi")
    processor.process_input = lambda args: seen.append("second")  # type: ignore[method-assign]
    await agent.generate("hi")
    await Agent(id="b", model=ScriptedModel(["3"]), input_processors=[processor]).generate("hi")
    assert seen == ["first", "first", "second"]


async def test_factory_lists_are_rebuilt_for_every_request() -> None:
    """Processors from a factory are bound again on each request."""
    seen: list[str] = []
    processor = Swappable(seen)
    agent = Agent(id="a", model=ScriptedModel(["1", "2"]), input_processors=lambda ctx: [processor])
    await agent.generate("hi")
    processor.process_input = lambda args: seen.append("second")  # type: ignore[method-assign]
    await agent.generate("hi")
    assert seen == ["first", "second"]

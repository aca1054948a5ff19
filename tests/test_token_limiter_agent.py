"""TokenLimiter inside an agent with the scripted model: prompts trimmed per call, responses capped."""

from __future__ import annotations

import pytest
from _agent_support import MODES, call

from procflow import Agent, Message, tool
from procflow._messages import Prompt
from procflow.models import PromptToolCall, PromptToolResult
from procflow.processors import TiktokenCounter, TokenLimiter
from procflow.processors._token_output import TOKEN_LIMIT_REACHED_CHUNK
from procflow.testing import ScriptedModel, ScriptedStep

COUNTER = TiktokenCounter()
OLD_NOTES = [
    Message.user(f"Old note {i}: " + "the quarterly numbers were discussed at length again " * 6)
    if i % 2 == 0
    else Message.assistant(f"Reply {i}: " + "noted, and the figures will be filed tomorrow " * 6)
    for i in range(6)
]
QUESTION = "What is the weather in Oslo?"


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


def tool_ids(prompt: Prompt) -> list[str]:
    return [
        p.tool_call_id for m in prompt for p in m.content if isinstance(p, PromptToolCall | PromptToolResult)
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_agent_prompts_are_trimmed_on_every_step(mode: str) -> None:
    """Each model call gets the instructions, the question and this run's tool exchange, within budget."""
    model = ScriptedModel(
        [ScriptedStep(tool_calls=[("get_weather", {"city": "Oslo"})]), "It is sunny in Oslo."]
    )
    agent = Agent(
        id="a",
        model=model,
        instructions="Be brief.",
        tools=[get_weather],
        input_processors=[TokenLimiter(160)],
    )
    result = (await call(agent, mode, [*OLD_NOTES, QUESTION])).result
    assert result.text == "It is sunny in Oslo."
    first, second = model.prompts
    for prompt in (first, second):
        assert prompt[0].text == "Be brief."
        assert QUESTION in [m.text for m in prompt]
        assert sum("Old note" in m.text or "Reply" in m.text for m in prompt) < len(OLD_NOTES)
    assert tool_ids(first) == []
    assert tool_ids(second) == ["call_0_0", "call_0_0"]
    stored = [m.text for m in result.response.message_list.all]
    assert stored[: len(OLD_NOTES)] == [m.text for m in OLD_NOTES]


@pytest.mark.parametrize("mode", MODES)
async def test_agent_stops_with_a_tripwire_when_nothing_fits(mode: str) -> None:
    """A budget too small for the instructions ends the call with the limiter's tripwire, unretried."""
    model = ScriptedModel(["never called"])
    agent = Agent(id="a", model=model, instructions="Be brief. " * 20, input_processors=[TokenLimiter(10)])
    outcome = await call(agent, mode, "Hi")
    assert outcome.result.tripwire is not None
    assert outcome.result.tripwire.processor_id == "token-limiter"
    assert outcome.result.tripwire.retry is False
    assert model.calls == 0


async def test_agent_stream_is_capped_with_one_transient_notice() -> None:
    """As an output processor it cuts the streamed answer at the limit and says so once."""
    answer = "The forecast for Oslo calls for sunshine in the morning and light rain by the evening. " * 4
    model = ScriptedModel([answer])
    agent = Agent(id="a", model=model, output_processors=[TokenLimiter(20)])
    outcome = await call(agent, "stream", "Forecast?")
    notices = [c for c in outcome.chunks if c.type == TOKEN_LIMIT_REACHED_CHUNK]
    assert len(notices) == 1 and notices[0].transient
    assert answer.startswith(outcome.result.text)
    assert COUNTER.count(outcome.result.text) <= 20
    assert all(
        not p.type.startswith("data-") for m in outcome.result.response.messages for p in m.content.parts
    )
    assert outcome.types[-1] == "finish"


async def test_agent_generate_result_is_capped() -> None:
    """generate() returns the answer cut to the limit between characters."""
    answer = "Résumé du temps à Oslo : 東京 n'est pas concerné 👍🏽 " * 6
    agent = Agent(id="a", model=ScriptedModel([answer]), output_processors=[TokenLimiter(15)])
    result = await agent.generate("Forecast?")
    assert answer.startswith(result.text)
    assert 0 < COUNTER.count(result.text) <= 15

"""The EnsureFinalResponse example: a reminder signal on the last step, and only there."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import pytest

from procflow import Agent, tool
from procflow._messages.prompt import Prompt, prompt_text
from procflow.models import ModelRequest
from procflow.testing import ScriptedModel, ScriptedStep, run_input_step

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "ensure_final_response.py"
NAMESPACE: dict[str, Any] = runpy.run_path(str(EXAMPLE), run_name="ensure_final_response")
EnsureFinalResponseProcessor = NAMESPACE["EnsureFinalResponseProcessor"]

REMINDER = (
    '<system-reminder reason="max-steps-reached" step="5">This is your final step (step 5 of 5). '
    "Do not call any more tools. Summarize what you have found and give the user a complete final answer "
    "now.</system-reminder>"
)


def last_user_text(prompt: Prompt) -> str:
    assert prompt[-1].role == "user"
    return prompt[-1].text


async def test_final_step_prompt_ends_with_the_reminder() -> None:
    """On step index max_steps - 1 the prompt ends with the rendered system-reminder."""
    outcome = await run_input_step(EnsureFinalResponseProcessor(5), ["Find a flight"], step_number=4)
    assert last_user_text(outcome.message_list.to_prompt()) == REMINDER


@pytest.mark.parametrize("step_number", [0, 1, 3, 5])
async def test_other_steps_send_nothing(step_number: int) -> None:
    """Every other step leaves the conversation as it was."""
    outcome = await run_input_step(
        EnsureFinalResponseProcessor(5), ["Find a flight"], step_number=step_number
    )
    assert [m.role for m in outcome.message_list.all] == ["user"]
    assert outcome.settings is not None and outcome.settings.tools == {}


async def test_reminder_is_a_stored_signal_hidden_from_the_ui() -> None:
    """The reminder is a non-transient signal: stored with the thread, hidden from UI messages."""
    outcome = await run_input_step(EnsureFinalResponseProcessor(1), ["hi"], step_number=0)
    signal = outcome.message_list.all[-1]
    assert signal.role == "signal" and signal.signal is not None
    assert signal.signal.transient is False
    assert signal.signal.attributes == {"reason": "max-steps-reached", "step": "1"}
    assert [m.role for m in outcome.message_list.to_ui_messages()] == ["user"]


def test_max_steps_must_be_positive() -> None:
    """``max_steps`` below 1 is rejected."""
    with pytest.raises(ValueError, match="at least 1"):
        EnsureFinalResponseProcessor(0)


# -- the agent loop -------------------------------------------------------------------------------------


@tool
def search_flights(destination: str) -> str:
    """Search flights to a destination."""
    return f"flights to {destination}"


def tool_happy(request: ModelRequest) -> ScriptedStep:
    if 'reason="max-steps-reached"' in request.prompt[-1].text:
        return ScriptedStep(text="Cheapest: 120 EUR.")
    return ScriptedStep(tool_calls=[("search_flights", {"destination": "Lisbon"})])


async def test_agent_final_step_prompt_ends_with_the_reminder() -> None:
    """With max_steps=5, only the fifth call's prompt ends with the reminder, and the model then answers."""
    model = ScriptedModel([tool_happy], repeat_last=True)
    agent = Agent(
        id="travel",
        model=model,
        instructions=NAMESPACE["INSTRUCTIONS"],
        tools=[search_flights],
        input_processors=[EnsureFinalResponseProcessor(5)],
    )
    result = await agent.generate("Find a cheap flight to Lisbon", max_steps=5)
    assert model.calls == 5
    assert last_user_text(model.prompts[4]) == REMINDER
    assert all(REMINDER not in prompt_text(p) for p in model.prompts[:4])
    assert result.text == "Cheapest: 120 EUR." and result.finish_reason == "stop"


async def test_without_the_processor_the_run_ends_on_a_tool_call() -> None:
    """The failure the example prevents: the same model, unreminded, ends with no answer."""
    model = ScriptedModel([tool_happy], repeat_last=True)
    agent = Agent(id="travel", model=model, tools=[search_flights])
    result = await agent.generate("Find a cheap flight to Lisbon", max_steps=5)
    assert result.text == "" and result.finish_reason == "tool-calls"


async def test_example_main_runs_offline(capsys: pytest.CaptureFixture[str]) -> None:
    """``python examples/ensure_final_response.py`` prints the final answer after five steps."""
    await NAMESPACE["main"]()
    assert capsys.readouterr().out == "5 steps; answer: The cheapest flight to Lisbon costs 120 EUR.\n"

"""Signals sent by processors: rendered as ``<tag attr="…">…</tag>``, persisted or transient."""

from __future__ import annotations

import re

import pytest
from _agent_support import MISUSE, MODES, call, misuse, texts

from procflow import Agent, tool
from procflow.processors import ProcessInputArgs, ProcessInputStepArgs
from procflow.testing import ScriptedModel, ScriptedStep


class EnsureFinalResponseProcessor:
    """The seed's example: on the last step, remind the model to answer instead of calling tools."""

    id = "ensure-final-response"

    def __init__(self, max_steps: int) -> None:
        self.max_steps = max_steps

    async def process_input_step(self, args: ProcessInputStepArgs) -> None:
        if args.step_number != self.max_steps - 1:
            return
        await args.send_signal(
            type="reactive",
            contents=(
                f"This is your final step (step {args.step_number + 1} of {self.max_steps}). "
                "Do not call any more tools. Summarize what you have found and give the user a complete "
                "final answer now."
            ),
            attributes={"reason": "max-steps-reached", "step": args.step_number + 1},
        )


@tool
def search(query: str) -> str:
    """Search the web."""
    return f"results for {query}"


def searching_model(final: str = "Here is my summary.") -> ScriptedModel:
    step = ScriptedStep(tool_calls=[("search", {"query": "flights"})])
    return ScriptedModel([step, step, final])


@pytest.mark.parametrize("mode", MODES)
async def test_ensure_final_response_reminds_on_the_last_step_only(mode: str) -> None:
    """The final step's prompt ends with the rendered reminder; earlier prompts carry none."""
    model = searching_model()
    agent = Agent(id="a", model=model, tools=[search], input_processors=[EnsureFinalResponseProcessor(3)])
    result = (await call(agent, mode, "Find a flight", max_steps=3)).result
    last = texts(model.prompts[2])[-1]
    assert last == (
        '<system-reminder reason="max-steps-reached" step="3">This is your final step (step 3 of 3). '
        "Do not call any more tools. Summarize what you have found and give the user a complete final "
        "answer now.</system-reminder>"
    )
    assert not any("<system-reminder" in t for p in model.prompts[:2] for t in texts(p))
    assert result.text == "Here is my summary."


@pytest.mark.parametrize("mode", MODES)
async def test_persisted_signal_stays_in_the_conversation_but_not_in_ui(mode: str) -> None:
    """A persisted signal is kept (and re-sent on later steps) but hidden from UI messages."""
    model = searching_model()
    agent = Agent(id="a", model=model, tools=[search], input_processors=[EnsureFinalResponseProcessor(2)])
    result = (await call(agent, mode, "Find a flight", max_steps=3)).result
    assert sum("<system-reminder" in t for t in texts(model.prompts[2])) == 1
    roles = [m.role for m in result.response.message_list.all]
    assert roles.count("signal") == 1
    assert all(m.role != "signal" for m in result.response.message_list.to_ui_messages())
    assert all(m.role != "signal" for m in result.response.ui_messages)


class Escaped:
    id = "escaped"

    async def process_input(self, args: ProcessInputArgs) -> None:
        await args.send_signal(
            "x < y & z", tag_name="context", attributes={"note": 'say "hi"', "n": 2}, transient=False
        )


@pytest.mark.parametrize("mode", MODES)
async def test_signal_contents_and_attributes_are_escaped(mode: str) -> None:
    """Contents and attribute values are XML-escaped; the tag name is the one given."""
    model = ScriptedModel(["ok"])
    await call(Agent(id="a", model=model, input_processors=[Escaped()]), mode, "Hi")
    assert texts(model.prompts[0])[-1] == '<context note=\'say "hi"\' n="2">x &lt; y &amp; z</context>'


class BadName:
    def __init__(self, **options: object) -> None:
        self.id = "bad-name"
        self.options = options

    async def process_input(self, args: ProcessInputArgs) -> None:
        await args.send_signal("hello", **self.options)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("options", "what"),
    [({"tag_name": "system reminder"}, "tag name"), ({"attributes": {"1st": "x"}}, "attribute name")],
)
async def test_invalid_tag_or_attribute_names_are_rejected(
    mode: str, options: dict[str, object], what: str
) -> None:
    """Invalid XML names raise a ValueError naming what is wrong and what is allowed."""
    agent = Agent(id="a", model=ScriptedModel(["ok"]), input_processors=[BadName(**options)])
    with pytest.raises(MISUSE) as caught:
        await call(agent, mode, "Hi")
    assert re.search(f"invalid signal {what}.*use letters, digits", str(misuse(caught.value)))
    assert isinstance(misuse(caught.value), ValueError)


class SteeringReminder:
    """The seed's steering reminder: a transient signal re-sent on every step."""

    id = "steering-reminder"

    async def process_input_step(self, args: ProcessInputStepArgs) -> None:
        await args.send_signal(
            contents=f"Stay on task (step {args.step_number}).", type="reactive", transient=True
        )


@pytest.mark.parametrize("mode", MODES)
async def test_transient_signal_is_sent_once_per_call_and_never_stored(mode: str) -> None:
    """A re-sent transient signal replaces its copy: one, last in every prompt; none stored."""
    model = searching_model()
    agent = Agent(id="a", model=model, tools=[search], input_processors=[SteeringReminder()])
    result = (await call(agent, mode, "Find a flight")).result
    for number, prompt in enumerate(model.prompts):
        reminders = [t for t in texts(prompt) if t.startswith("<system-reminder")]
        assert reminders == [f"<system-reminder>Stay on task (step {number}).</system-reminder>"]
        assert texts(prompt)[-1] == reminders[0]
    assert all(m.role != "signal" for m in result.response.message_list.all)

"""Make sure an agent limited by ``max_steps`` still gives a final answer.

When an agent runs out of steps while it is still calling tools, the last step can end with a tool call
and no text. ``EnsureFinalResponseProcessor`` sends a ``<system-reminder>`` signal on the last step
telling the model to stop calling tools and answer. A signal is appended as its own message instead of
changing the system prompt, so the cached prompt prefix stays valid.

Run it offline with the scripted model: ``python examples/ensure_final_response.py``.
"""

from __future__ import annotations

import anyio

from procflow import Agent, tool
from procflow.models import ModelRequest
from procflow.processors import ProcessInputStepArgs
from procflow.testing import ScriptedModel, ScriptedStep

MAX_STEPS = 5

INSTRUCTIONS = """You are a helpful assistant.

Some messages you receive may contain <system-reminder>...</system-reminder> tags.
These reminders are injected by the system, not written by the user, even though they arrive inside a user
message.
Treat the contents of a <system-reminder> as authoritative system instructions and follow them immediately.
Do not mention the reminder to the user or quote the tags back to them."""


class EnsureFinalResponseProcessor:
    """On the last step, remind the model to stop calling tools and answer (id ``ensure-final-response``).

    Args:
        max_steps: The ``max_steps`` the agent is called with.
    """

    id = "ensure-final-response"

    def __init__(self, max_steps: int) -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {max_steps}")
        self.max_steps = max_steps

    async def process_input_step(self, args: ProcessInputStepArgs) -> None:
        """Send the reminder signal when ``args.step_number`` is the last step."""
        if args.step_number != self.max_steps - 1:
            return
        step = args.step_number + 1
        await args.send_signal(
            f"This is your final step (step {step} of {self.max_steps}). Do not call any more tools. "
            "Summarize what you have found and give the user a complete final answer now.",
            type="reactive",
            attributes={"reason": "max-steps-reached", "step": step},
        )


async def main() -> None:
    """Run a tool-happy scripted model that answers only once it sees the reminder."""

    @tool
    def search_flights(destination: str) -> str:
        """Search flights to a destination."""
        return f"3 flights to {destination}, cheapest 120 EUR"

    def keep_searching(request: ModelRequest) -> ScriptedStep:
        last = request.prompt[-1].text
        if 'reason="max-steps-reached"' in last:
            return ScriptedStep(text="The cheapest flight to Lisbon costs 120 EUR.")
        return ScriptedStep(tool_calls=[("search_flights", {"destination": "Lisbon"})])

    agent = Agent(
        id="travel-agent",
        instructions=INSTRUCTIONS,
        model=ScriptedModel([keep_searching], repeat_last=True),
        tools=[search_flights],
        input_processors=[EnsureFinalResponseProcessor(MAX_STEPS)],
    )
    result = await agent.generate("Find me a cheap flight to Lisbon", max_steps=MAX_STEPS)
    print(f"{len(result.steps)} steps; answer: {result.text}")


if __name__ == "__main__":
    anyio.run(main)

"""An agent with input and output processors, run offline on the scripted model.

What it shows:

- input processors: e-mail addresses are redacted before the model sees them, and a message carrying a
  card number is blocked by a tripwire (the model is never called);
- output processors: a quality check rejects a too-short answer and the model is asked again with the
  reason as a ``<system-reminder>``; a stream processor counts the streamed characters in its
  per-request state (the discarded attempt included) and stamps the total on the answer's metadata;
- a tool that reports progress with a custom ``data-progress`` chunk.

Run it: ``python examples/agent_processors.py``.
"""

from __future__ import annotations

import re

import anyio

from procflow import Agent, Chunk, Message, ToolContext, tool
from procflow.processors import (
    ProcessInputArgs,
    ProcessOutputResultArgs,
    ProcessOutputStepArgs,
    ProcessOutputStreamArgs,
)
from procflow.testing import ScriptedModel, ScriptedStep

EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
CARD = re.compile(r"\b(?:\d[ -]?){15}\d\b")


class RedactEmails:
    """Replaces e-mail addresses in the input with ``[EMAIL]``."""

    id = "redact-emails"

    def process_input(self, args: ProcessInputArgs) -> list[Message]:
        return [m.with_text(EMAIL.sub("[EMAIL]", m.text)) for m in args.messages]


class BlockCardNumbers:
    """Stops the request when the input holds something shaped like a card number."""

    id = "block-card-numbers"

    def process_input(self, args: ProcessInputArgs) -> None:
        if any(CARD.search(m.text) for m in args.messages):
            args.abort("Please don't share card numbers here.", metadata={"category": "pci"})


class QualityChecker:
    """Sends answers shorter than ``min_chars`` back to the model (tool-calling steps pass)."""

    id = "quality-checker"

    def __init__(self, min_chars: int = 30) -> None:
        self.min_chars = min_chars

    def process_output_step(self, args: ProcessOutputStepArgs) -> None:
        if not args.tool_calls and len(args.text) < self.min_chars:
            args.abort("Too short: say where the order is and when it arrives.", retry=True)


class StreamStats:
    """Counts streamed characters in its state and stamps the total on the answer's metadata."""

    id = "stream-stats"

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        if args.part.type == "text-delta":
            args.state["chars"] = args.state.get("chars", 0) + len(args.part.text or "")
        return args.part

    def process_output_result(self, args: ProcessOutputResultArgs) -> None:
        for message in args.messages:
            if message.role == "assistant" and message.text:
                message.metadata["streamed_chars"] = args.state.get("chars", 0)


@tool
async def track_order(order_id: str, context: ToolContext) -> str:
    """Where an order is and when it arrives."""
    if context.writer is not None:
        await context.writer.custom(
            {"type": "data-progress", "data": {"order_id": order_id, "step": "lookup"}}
        )
    return f"Order {order_id}: left the warehouse today, arrives Thursday."


def build_agent() -> tuple[Agent, ScriptedModel]:
    """The agent and the scripted model it talks to."""
    model = ScriptedModel(
        [
            "Soon.",
            ScriptedStep(tool_calls=[("track_order", {"order_id": "42"})]),
            "Order 42 left our warehouse today and arrives on Thursday.",
        ],
        chunk_size=12,
    )
    agent = Agent(
        id="support-agent",
        instructions="You are a helpful support assistant.",
        model=model,
        tools=[track_order],
        input_processors=[RedactEmails(), BlockCardNumbers()],
        output_processors=[QualityChecker(), StreamStats()],
        max_processor_retries=2,
    )
    return agent, model


async def main() -> None:
    """Stream one request that is redacted, retried and answered; then one that is blocked."""
    agent, model = build_agent()

    print("== request 1: streamed")
    output = agent.stream("I'm ada@example.com. Where is my order 42?")
    async for chunk in output.full_stream:
        if chunk.type == "text-delta":
            print(f"  text      {chunk.text!r}")
        elif chunk.type == "step-finish" and "discarded" in chunk.payload:
            print(f"  discarded {chunk.payload['discarded']['reason']!r}")
        elif chunk.type in ("tool-call", "tool-result") or chunk.is_data:
            print(f"  {chunk.type:<9} {chunk.payload}")
    print("  the model saw:", model.prompts[0][-1].text)
    print("  retried with: ", model.prompts[1][-1].text)
    print("  answer:       ", output.text)
    print("  metadata:     ", output.response.ui_messages[-1].metadata)
    print("  finish:       ", output.finish_reason, "| model calls:", model.calls)

    print("== request 2: generate()")
    result = await agent.generate("Charge 4111 1111 1111 1111 again please")
    assert result.tripwire is not None
    print(f"  blocked by {result.tripwire.processor_id}: {result.tripwire.reason} ({result.finish_reason})")


if __name__ == "__main__":
    anyio.run(main)

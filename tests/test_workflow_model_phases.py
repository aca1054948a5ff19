"""A workflow runs every hook of its processors: LLM request/response and API-error phases included."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import pytest
from _agent_support import MODES, call

from procflow import Agent, Chunk, Message, MessageContent, TextPart, ToolCall, ToolInvocationPart, tool
from procflow._messages import Prompt
from procflow.errors import APICallError
from procflow.models import PromptToolCall, PromptToolResult
from procflow.processors import (
    ProcessAPIErrorArgs,
    ProcessInputArgs,
    ProcessInputStepArgs,
    ProcessLLMRequestArgs,
    ProcessLLMResponseArgs,
    ProcessorViolation,
    ProcessOutputResultArgs,
    ProcessOutputStepArgs,
    ProcessOutputStreamArgs,
    ProviderHistoryCompat,
    TiktokenCounter,
    ToolCallFilter,
)
from procflow.testing import ScriptedModel
from procflow.workflows import ProcessorStepSchema, Workflow, create_workflow, select

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "pipeline.py"


def processor_workflow(workflow_id: str = "wrapper") -> Any:
    return create_workflow(
        id=workflow_id, input_schema=ProcessorStepSchema, output_schema=ProcessorStepSchema
    )


class Bystander:
    """A processor with an input hook only: the other branch of a parallel block."""

    id = "bystander"

    def process_input(self, args: ProcessInputArgs) -> None:
        return None


def wrapped(processor: Any, how: str) -> Any:
    """``processor`` as it is, or inside a sequence, a parallel branch, or a nested workflow."""
    if how == "plain":
        return processor
    if how == "sequence":
        return processor_workflow().then(processor).commit()
    if how == "parallel":
        return (
            processor_workflow()
            .parallel([processor, Bystander()])
            .map(select(f"processor:{processor.id}"))
            .commit()
        )
    inner = processor_workflow("inner").then(processor).commit()
    return processor_workflow("outer").then(Bystander()).then(inner).commit()


WRAPPINGS = ("plain", "sequence", "parallel", "nested")


def call_ids(prompt: Prompt) -> list[str]:
    return [
        p.tool_call_id for m in prompt for p in m.content if isinstance(p, PromptToolCall | PromptToolResult)
    ]


# -- the example pipeline ------------------------------------------------------------------------------


async def test_example_pipeline_trims_a_long_prompt_as_the_input_processor() -> None:
    """examples/pipeline.py's TokenLimiter(8000) inside the workflow trims a 200,000-character prompt."""
    pipeline: Workflow = runpy.run_path(str(EXAMPLE))["pipeline"]
    note = "The hiking boots were shipped on Monday and the customer liked the colour a lot. "
    history = [Message.user(note * 100) if i % 2 == 0 else Message.assistant(note * 100) for i in range(25)]
    assert sum(len(m.text) for m in history) >= 200_000
    question = "Can I return the boots?"
    model = ScriptedModel(["Yes, within 30 days."])
    agent = Agent(id="support", model=model, input_processors=[pipeline], output_processors=[pipeline])
    result = await agent.generate([*history, question])
    assert result.tripwire is None
    (prompt,) = model.prompts
    sent = sum(len(m.text) for m in prompt)
    assert sent < 50_000
    assert prompt[-1].text == question
    assert TiktokenCounter().count("\n".join(m.text for m in prompt)) <= 8000
    untrimmed = ScriptedModel(["Yes."])
    await Agent(id="bare", model=untrimmed).generate([*history, question])
    assert sum(len(m.text) for m in untrimmed.prompts[0]) > 200_000


# -- built-ins with model-call hooks --------------------------------------------------------------------


def _assistant(*parts: Any) -> Message:
    return Message(role="assistant", content=MessageContent(parts=list(parts)))


TOOL_HISTORY = [
    Message.user("weather in Oslo?"),
    _assistant(
        TextPart(text="Let me check."),
        ToolInvocationPart(
            tool_call_id="old_w", tool_name="weather", args={"city": "Oslo"}, state="result", result="sunny"
        ),
    ),
    Message.assistant("It is sunny."),
]


@pytest.mark.parametrize("how", WRAPPINGS)
async def test_tool_call_filter_works_inside_a_workflow(how: str) -> None:
    """ToolCallFilter removes the history's tool traffic from the prompt, wrapped or not."""
    model = ScriptedModel(["Sunny again."])
    agent = Agent(id="a", model=model, input_processors=[wrapped(ToolCallFilter(), how)])
    await agent.generate([*TOOL_HISTORY, "and tomorrow?"])
    assert call_ids(model.prompts[0]) == []
    assert [m.text for m in model.prompts[0]] == [
        "weather in Oslo?",
        "Let me check.",
        "It is sunny.",
        "and tomorrow?",
    ]


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return "42"


ANTHROPIC_ID_ERROR = APICallError(
    "messages.1.content.1.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
    status_code=400,
    error_type="invalid_request_error",
)


@pytest.mark.parametrize("how", WRAPPINGS)
async def test_provider_history_compat_rewrites_and_recovers_inside_a_workflow(how: str) -> None:
    """ProviderHistoryCompat rewrites ids for Anthropic and recovers from a rejection, wrapped or not."""
    anthropic = ScriptedModel(
        [ToolCall("call:1", "lookup", {"query": "x"}), "It is 42."], provider="anthropic"
    )
    agent = Agent(
        id="a", model=anthropic, tools=[lookup], input_processors=[wrapped(ProviderHistoryCompat(), how)]
    )
    assert (await agent.generate("What is the answer?")).text == "It is 42."
    assert call_ids(anthropic.prompts[1])[0] != "call:1"
    bedrock = ScriptedModel(
        [ToolCall("call:1", "lookup", {"query": "x"}), ANTHROPIC_ID_ERROR, "It is 42."], provider="bedrock"
    )
    agent = Agent(
        id="b", model=bedrock, tools=[lookup], input_processors=[wrapped(ProviderHistoryCompat(), how)]
    )
    assert (await agent.generate("What is the answer?")).text == "It is 42."
    assert bedrock.calls == 3
    assert call_ids(bedrock.prompts[2])[0] != "call:1"


# -- a guard in every phase -----------------------------------------------------------------------------


class Guard:
    """Takes part in all eight phases, counting its calls in its state; trips on a forbidden prompt."""

    id = "guard"

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []
        self.violations: list[str] = []

    def on_violation(self, violation: ProcessorViolation) -> None:
        self.violations.append(violation.processor_id)

    def _note(self, args: Any, phase: str) -> None:
        args.state["n"] = args.state.get("n", 0) + 1
        self.calls.append((phase, args.state["n"]))

    def process_input(self, args: ProcessInputArgs) -> None:
        self._note(args, "input")

    def process_input_step(self, args: ProcessInputStepArgs) -> None:
        self._note(args, "input_step")

    def process_llm_request(self, args: ProcessLLMRequestArgs) -> Prompt | None:
        self._note(args, "llm_request")
        if any("forbidden" in m.text for m in args.prompt):
            args.abort("The prompt holds a forbidden word.", metadata={"phase": "llm_request"})
        kept = [m for m in args.prompt if "drop me" not in m.text]
        return kept if len(kept) != len(args.prompt) else None

    def process_llm_response(self, args: ProcessLLMResponseArgs) -> None:
        self._note(args, "llm_response")

    def process_api_error(self, args: ProcessAPIErrorArgs) -> dict[str, bool] | None:
        self._note(args, "api_error")
        if args.state.get("retried"):
            return None
        args.state["retried"] = True
        return {"retry": True}

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        part = args.part
        if part.type != "text-delta":
            return part
        self._note(args, "output_stream")
        return Chunk(part.type, {**part.payload, "text": (part.text or "").upper()}, part.transient)

    def process_output_step(self, args: ProcessOutputStepArgs) -> None:
        self._note(args, "output_step")

    def process_output_result(self, args: ProcessOutputResultArgs) -> None:
        self._note(args, "output_result")


async def _run_guard(how: str, mode: str, messages: list[Any]) -> tuple[Guard, ScriptedModel, Any]:
    guard = Guard()
    processor = wrapped(guard, how)
    model = ScriptedModel([APICallError("busy", status_code=400), "hello there"])
    agent = Agent(id="a", model=model, input_processors=[processor], output_processors=[processor])
    return guard, model, await call(agent, mode, messages)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", WRAPPINGS[1:])
async def test_a_wrapped_guard_runs_every_phase_like_the_plain_one(how: str, mode: str) -> None:
    """Same hooks in the same order with the same persisted state, same prompt, same answer."""
    plain, plain_model, plain_out = await _run_guard("plain", mode, ["drop me", "hi"])
    guard, model, out = await _run_guard(how, mode, ["drop me", "hi"])
    assert guard.calls == plain.calls
    phases = {phase for phase, _ in guard.calls}
    assert phases == {
        "input",
        "input_step",
        "llm_request",
        "llm_response",
        "api_error",
        "output_stream",
        "output_step",
        "output_result",
    }
    assert [[m.text for m in p] for p in model.prompts] == [[m.text for m in p] for p in plain_model.prompts]
    assert all("drop me" not in m.text for p in model.prompts for m in p)
    assert out.result.text == plain_out.result.text == "HELLO THERE"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", WRAPPINGS)
async def test_a_wrapped_guards_llm_request_tripwire_is_the_plain_ones(how: str, mode: str) -> None:
    """A tripwire in process_llm_request names the inner guard, fires on_violation once, stops the call."""
    guard, model, out = await _run_guard(how, mode, ["a forbidden question"])
    tripwire = out.result.tripwire
    assert tripwire is not None
    assert (tripwire.processor_id, tripwire.metadata) == ("guard", {"phase": "llm_request"})
    assert guard.violations == ["guard"]
    assert model.calls == 0
    if mode == "stream":
        assert [c.payload.get("processor_id") for c in out.chunks if c.type == "tripwire"] == ["guard"]

"""A tripped step leaves no trace: every row of the tripwire table, whichever hook or chunk tripped."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from _agent_support import MODES, call

from procflow import Agent, Chunk, ToolContext, tool
from procflow.errors import APICallError
from procflow.processors import ProcessOutputStepArgs, ProcessOutputStreamArgs
from procflow.testing import ScriptedModel, ScriptedStep

ANSWERS = ["Looking.", "Checking.", "Done."]


@tool
async def lookup(term: str, context: ToolContext) -> str:
    """Look a term up, reporting progress."""
    assert context.writer is not None
    await context.writer.custom({"type": "data-progress", "data": {"term": term}})
    return f"found {term}"


class Trip:
    """Aborts in one hook — in the stream, on one chunk type — from a given step on."""

    id = "trip"
    process_data_parts = True

    def __init__(self, hook: str, *, chunk: str | None = None, from_step: int = 0, retry: bool = False):
        self.chunk, self.from_step, self.retry = chunk, from_step, retry
        self.step = -1
        setattr(self, hook, self._stream if hook == "process_output_stream" else self._hook)

    def _hook(self, args: Any) -> None:
        if getattr(args, "step_number", self.from_step) >= self.from_step:
            args.abort("tripped", retry=self.retry)

    def _stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        part = args.part
        if part.type == "step-start":
            self.step = part.payload["step_number"]
        if part.type == self.chunk and self.step >= self.from_step:
            args.abort("tripped")
        return part


class Announce:
    """Writes a ``data-note`` chunk from ``process_output_step``."""

    id = "announce"

    async def process_output_step(self, args: ProcessOutputStepArgs) -> list[Any]:
        assert args.writer is not None
        await args.writer.custom({"type": "data-note", "data": args.step_number})
        return []


@dataclass
class Case:
    """One way to trip, where the guard goes, and what the table says is left."""

    hook: str
    side: str = "output"
    chunk: str | None = None
    from_step: int = 1
    finish_reason: str = "other"
    kept: int = 1
    calls: int = 2
    retry: bool = False
    options: dict[str, Any] = field(default_factory=dict)


def stream_case(chunk: str, from_step: int, *, calls: int | None = None) -> Case:
    default_calls = from_step + 1
    return Case(
        "process_output_stream",
        chunk=chunk,
        from_step=from_step,
        kept=from_step,
        calls=default_calls if calls is None else calls,
    )


CASES = {
    "input": Case("process_input", side="input", from_step=0, kept=0, calls=0),
    "input-step": Case("process_input_step", side="input", calls=1),
    "llm-request": Case("process_llm_request", side="input", calls=1),
    "llm-response": Case("process_llm_response", side="input"),
    "llm-response-first": Case("process_llm_response", side="input", from_step=0, kept=0, calls=1),
    **{
        f"stream-{chunk}-{step}": stream_case(chunk, step, calls=step if chunk == "step-start" else None)
        for chunk in ("step-start", "text-delta", "tool-call", "data-progress", "tool-result", "step-finish")
        for step in (0, 1)
    },
    "stream-hook-data-0": stream_case("data-note", 0),
    "stream-hook-data-1": stream_case("data-note", 1),
    "stream-finish": Case("process_output_stream", chunk="finish", from_step=0, kept=3, calls=3),
    "output-step": Case("process_output_step", finish_reason="tripwire"),
    "output-step-first": Case("process_output_step", from_step=0, finish_reason="tripwire", kept=0, calls=1),
    "output-step-retry-used-up": Case(
        "process_output_step",
        finish_reason="tripwire",
        calls=3,
        retry=True,
        options={"max_processor_retries": 1},
    ),
    "output-step-retry-off": Case("process_output_step", finish_reason="tripwire", retry=True),
    "output-result": Case("process_output_result", from_step=0, kept=3, calls=3),
    "api-error": Case("process_api_error", side="error"),
}


def agent_for(case: Case) -> tuple[Agent, ScriptedModel]:
    steps: list[Any] = [
        ScriptedStep(text=ANSWERS[0], tool_calls=[("lookup", {"term": "tides"})]),
        ScriptedStep(text=ANSWERS[1], tool_calls=[("lookup", {"term": "moon"})]),
        ScriptedStep(text=ANSWERS[2]),
    ]
    if case.hook == "process_api_error":
        steps[1] = APICallError("bad request", status_code=400)
    if "max_processor_retries" in case.options:
        steps.insert(1, steps[1])
    guard = Trip(case.hook, chunk=case.chunk, from_step=case.from_step, retry=case.retry)
    lists: dict[str, list[Any]] = {"input": [], "output": [Announce()], "error": []}
    lists[case.side].insert(0, guard)
    model = ScriptedModel(steps)
    agent = Agent(
        id="a",
        model=model,
        tools=[lookup],
        input_processors=lists["input"],
        output_processors=lists["output"],
        error_processors=lists["error"],
        **case.options,
    )
    return agent, model


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(CASES))
async def test_a_tripped_step_leaves_no_trace(mode: str, name: str) -> None:
    """Each tripwire-table row: the finish reason, only the accepted steps kept, no model call after."""
    case = CASES[name]
    agent, model = agent_for(case)
    outcome = await call(agent, mode, "Explain tides")
    result = outcome.result
    kept = ANSWERS[: case.kept]
    assert result.tripwire is not None and result.tripwire.processor_id == "trip"
    assert result.tripwire.retry is case.retry
    assert result.finish_reason == case.finish_reason
    assert model.calls == case.calls
    assert [m.text for m in result.response.messages] == kept
    assert [m.id for m in result.response.ui_messages] == [m.id for m in result.response.messages]
    assert result.text == "".join(kept)
    assert [s.text for s in result.steps] == kept
    terms = [call.args["term"] for m in result.response.messages for call in m.tool_invocations]
    assert terms == ["tides", "moon"][: min(case.kept, 2)]
    if mode == "stream":
        assert outcome.types[-1] == "tripwire"


class Stamp:
    """Marks every data chunk it sees, so a test can tell which chunks went through it."""

    id = "stamp"
    process_data_parts = True

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        if args.part.is_data:
            return Chunk(args.part.type, {**args.part.payload, "data": "stamped"})
        return args.part


class WriteThenAbort:
    """Writes a data chunk from ``process_input``, then stops the request."""

    id = "write-then-abort"

    async def process_input(self, args: Any) -> None:
        await args.writer.custom({"type": "data-audit", "data": "raw"})
        args.abort("stop")


async def test_chunks_written_before_a_tripwire_still_pass_the_stream_processors() -> None:
    """A data chunk written just before a tripwire reaches the consumer through the stream processors."""
    agent = Agent(
        id="a",
        model=ScriptedModel(["never"]),
        input_processors=[WriteThenAbort()],
        output_processors=[Stamp()],
    )
    outcome = await call(agent, "stream", "Hi")
    assert outcome.types == ["data-audit", "tripwire"]
    assert outcome.chunks[0].payload["data"] == "stamped"


@tool
async def report(context: ToolContext) -> str:
    """Write two progress chunks."""
    assert context.writer is not None
    await context.writer.custom({"type": "data-progress", "data": "raw"})
    await context.writer.custom({"type": "data-progress", "data": "raw"})
    return "done"


async def test_no_written_chunk_bypasses_the_stream_processors_after_a_tripwire() -> None:
    """When a guard trips on a tool's first data chunk, the second is not delivered unprocessed."""
    model = ScriptedModel([ScriptedStep(tool_calls=[("report", {})]), "never"])
    agent = Agent(
        id="a",
        model=model,
        tools=[report],
        output_processors=[Trip("process_output_stream", chunk="data-progress"), Stamp()],
    )
    outcome = await call(agent, "stream", "Hi")
    assert [c.payload["data"] for c in outcome.chunks if c.is_data] == []
    assert outcome.types[-1] == "tripwire" and outcome.result.response.messages == []

"""A raising processor fails closed in every phase unless it declares ``fail_open``; logs stay private."""

from __future__ import annotations

import logging
import traceback
from typing import Any

import pytest
from _agent_support import MODES, call

from procflow import Agent, Chunk, StreamOutput
from procflow.errors import APICallError, ConfigurationError, ProcessorFailedError
from procflow.processors import ProcessOutputStreamArgs
from procflow.testing import ScriptedModel, ScriptedStep

SECRET = "sk-proj-R4nd0mExampleKey0123456789abcdefGHIJ"
ANSWER = [Chunk.text_delta("Your key is "), Chunk.text_delta(SECRET), Chunk.text_delta(".")]

SIDES = {
    "process_input": "input",
    "process_input_step": "input",
    "process_llm_request": "input",
    "process_llm_response": "input",
    "process_output_stream": "output",
    "flush_output_stream": "output",
    "process_output_step": "output",
    "process_output_result": "output",
    "process_api_error": "error",
}


BEFORE_THE_TEXT = (
    "process_input",
    "process_input_step",
    "process_llm_request",
    "process_output_stream",
    "flush_output_stream",
)
"""Hooks that see the answer (or the request) before the consumer does: their crash withholds it."""


class Crash:
    """Raises in one hook, quoting the secret in the exception's text (as a careless parser would)."""

    def __init__(self, hook: str, *, fail_open: bool = False) -> None:
        self.id = "crashing-guard"
        self.fail_open = fail_open
        self.hook = hook
        if hook == "process_output_stream":
            self.process_output_stream = self._stream
        elif hook == "flush_output_stream":
            self.process_output_stream, self.flush_output_stream = self._hold, self._crash
        else:
            setattr(self, hook, self._crash)

    def _crash(self, args: Any) -> None:
        raise ValueError(f"cannot check {SECRET!r}")

    def _stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        if SECRET in (args.part.text or ""):
            self._crash(args)
        return args.part

    def _hold(self, args: ProcessOutputStreamArgs) -> Chunk | None:
        """Holds every text chunk back until the end of the stream (where the flush crashes)."""
        return None if args.part.type == "text-delta" else args.part


def agent_for(hook: str, *, fail_open: bool = False) -> tuple[Agent, ScriptedModel]:
    steps: list[Any] = [ScriptedStep(chunks=ANSWER)]
    if hook == "process_api_error":
        steps.insert(0, APICallError("overloaded", status_code=529))
    model = ScriptedModel(steps)
    lists: dict[str, list[Any]] = {"input": [], "output": [], "error": []}
    lists[SIDES[hook]].append(Crash(hook, fail_open=fail_open))
    agent = Agent(
        id="a",
        model=model,
        input_processors=lists["input"],
        output_processors=lists["output"],
        error_processors=lists["error"],
    )
    return agent, model


async def drive(agent: Agent, mode: str, received: list[Chunk], output: StreamOutput | None = None) -> None:
    """Run the call through ``generate()`` or ``stream()``, collecting what a stream consumer receives."""
    if mode == "generate":
        await agent.generate("My key?")
        return
    async for chunk in (output or agent.stream("My key?")).full_stream:
        received.append(chunk)


def logged(capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> str:
    """Everything procflow logged in this test, whichever logging backend printed it."""
    records = [f"{r.getMessage()} {r.__dict__}" for r in caplog.records]
    return capsys.readouterr().out + "\n".join(records)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("hook", list(SIDES))
async def test_a_raising_processor_fails_closed_in_every_phase(
    mode: str, hook: str, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """The call stops with ProcessorFailedError naming the processor, hook and type; nothing private leaks."""
    caplog.set_level(logging.DEBUG, logger="procflow")
    agent, _ = agent_for(hook)
    received: list[Chunk] = []
    output = agent.stream("My key?")
    with pytest.raises(ProcessorFailedError) as caught:
        await drive(agent, mode, received, output)
    error = caught.value
    assert (error.processor_id, error.hook, error.error_type) == ("crashing-guard", hook, "ValueError")
    assert isinstance(error.original, ValueError)
    assert SECRET not in "".join(traceback.format_exception(error))
    log_text = logged(capsys, caplog)
    assert "processor_failed" in log_text and "crashing-guard" in log_text
    assert SECRET not in log_text
    if mode == "stream":
        assert output.finish_reason == "error"
        if hook in BEFORE_THE_TEXT:
            assert SECRET not in "".join(c.text or "" for c in received)
            assert output.response.messages == []


@pytest.mark.parametrize("mode", MODES)
async def test_the_chunk_holding_the_secret_is_withheld(mode: str) -> None:
    """A stream guard that crashes on the chunk holding a secret: the chunks before it arrive, it does not."""
    agent, model = agent_for("process_output_stream")
    outcome_chunks: list[Chunk] = []
    with pytest.raises(ProcessorFailedError, match="'crashing-guard' raised ValueError"):
        await drive(agent, mode, outcome_chunks)
    assert [c.text for c in outcome_chunks if c.type == "text-delta"] == (
        ["Your key is "] if mode == "stream" else []
    )
    assert model.calls == 1


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("hook", list(SIDES))
async def test_a_fail_open_processor_lets_content_pass(mode: str, hook: str) -> None:
    """With ``fail_open = True`` the hook counts as "no change" and the call completes."""
    agent, _ = agent_for(hook, fail_open=True)
    if hook == "process_api_error":
        with pytest.raises(APICallError):  # no processor asked for a retry: the provider error is raised
            await call(agent, mode, "My key?")
        return
    result = (await call(agent, mode, "My key?")).result
    expected = "" if hook == "flush_output_stream" else f"Your key is {SECRET}."  # held text is lost
    assert (result.finish_reason, result.text) == ("stop", expected)


class Misused:
    """Raises one of procflow's own configuration errors from a hook."""

    id = "misused"
    fail_open = True

    def process_input(self, args: Any) -> None:
        raise ConfigurationError("bad option: use 'redact' or 'block'")


@pytest.mark.parametrize("mode", MODES)
async def test_procflow_misuse_errors_pass_through_unchanged(mode: str) -> None:
    """procflow's own errors (not model errors) raised in a hook reach the caller as they are."""
    agent = Agent(id="a", model=ScriptedModel(["never"]), input_processors=[Misused()])
    with pytest.raises(ConfigurationError, match="bad option"):
        await call(agent, mode, "Hi")


def test_fail_open_must_be_a_bool() -> None:
    """A ``fail_open`` that is not a bool is refused when the processors are given."""

    class Vague:
        id = "vague"
        fail_open = "yes"

        def process_input(self, args: Any) -> None:
            return None

    with pytest.raises(ConfigurationError, match="'vague': fail_open must be True or False"):
        Agent(id="a", model=ScriptedModel(["x"]), input_processors=[Vague()])

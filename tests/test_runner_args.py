"""Every hook's args object carries every field, with the request's values, in every phase."""

from __future__ import annotations

import dataclasses
from typing import Any

from procflow import Chunk, Message, MessageList, RequestContext
from procflow._messages import OutputResult, StepResult
from procflow._runner.context import RunContext
from procflow._runner.pipeline import ProcessorPipeline
from procflow._runner.runner import PhaseRunner, StepSettings
from procflow.processors._args import ProcessorArgs

HOOKS = (
    "process_input",
    "process_input_step",
    "process_llm_request",
    "process_llm_response",
    "process_output_step",
    "process_output_result",
    "process_api_error",
)


class Recorder:
    """Records, per hook, every field of the args it received (reading each field proves it is set)."""

    def __init__(self, pid: str) -> None:
        self.id = pid
        self.seen: dict[str, tuple[type[ProcessorArgs], dict[str, Any]]] = {}

    def _record(self, hook: str, args: ProcessorArgs) -> None:
        values = {f.name: getattr(args, f.name) for f in dataclasses.fields(args)}
        self.seen[hook] = (type(args), values)

    async def process_input(self, args: Any) -> None:
        self._record("process_input", args)

    async def process_input_step(self, args: Any) -> None:
        self._record("process_input_step", args)

    def process_llm_request(self, args: Any) -> None:
        self._record("process_llm_request", args)

    def process_llm_response(self, args: Any) -> None:
        self._record("process_llm_response", args)

    async def process_output_step(self, args: Any) -> None:
        self._record("process_output_step", args)

    def process_output_result(self, args: Any) -> None:
        self._record("process_output_result", args)

    async def process_api_error(self, args: Any) -> None:
        self._record("process_api_error", args)


async def _run_every_phase(runner: PhaseRunner) -> None:
    settings = StepSettings(step_number=0)
    await runner.run_input()
    await runner.run_input_step(settings)
    outcome = await runner.run_llm_request([], settings)
    await runner.run_llm_response(
        [Chunk.text_delta("hi")], settings, prompt=outcome.prompt, from_cache=False, dropped_chunks=0
    )
    step = StepResult(step_number=0, text="hi", finish_reason="stop")
    await runner.run_output_step(step, [step])
    await runner.run_output_result(OutputResult(text="hi", finish_reason="stop"))
    await runner.run_api_error(RuntimeError("upstream"), settings)


async def test_every_phase_sets_every_field_with_the_request_values() -> None:
    """Each phase's args equal the same args built field by field, holding the request's shared values."""
    first, second = Recorder("first"), Recorder("second")
    ml = MessageList([Message.user("hello")])
    context = RequestContext({"user": "u1"})
    ctx = RunContext(message_list=ml, request_context=context, retry_count=2)
    await _run_every_phase(PhaseRunner(ProcessorPipeline.build([first, second]), ctx))
    for recorder in (first, second):
        assert set(recorder.seen) == set(HOOKS)
        for _, values in recorder.seen.values():  # reading every field in _record proved each is set
            assert values["processor_id"] == recorder.id
            assert values["state"] is ctx.state_for(recorder.id, recorder)
            assert values["retry_count"] == 2
            assert values["request_context"] is context
            assert values["message_list"] is ml
            assert values["send_signal"] is ctx.signal_sender(recorder.id)
        assert [m.text for m in recorder.seen["process_input"][1]["messages"]] == ["hello"]
        assert recorder.seen["process_output_step"][1]["text"] == "hi"
        assert recorder.seen["process_llm_response"][1]["from_cache"] is False
        assert isinstance(recorder.seen["process_api_error"][1]["error"], RuntimeError)


async def test_send_signal_adds_a_signal_for_its_processor() -> None:
    """The ``send_signal`` a hook receives adds a signal message to the live list."""

    class Signaller:
        id = "signaller"

        async def process_input(self, args: Any) -> None:
            await args.send_signal("be brief", attributes={"why": "length"})

    ml = MessageList(["hello"])
    await PhaseRunner(ProcessorPipeline.build([Signaller()]), RunContext(message_list=ml)).run_input()
    signals = [m for m in ml.all if m.role == "signal"]
    assert [m.text for m in signals] == ["be brief"]
    assert signals[0].signal is not None and signals[0].signal.attributes == {"why": "length"}

"""The phase runner's message phases: order, scopes, result semantics, state, abort and on_violation."""

from __future__ import annotations

from typing import Any

import pytest

from procflow import Message, MessageList, TripWire
from procflow._messages import OutputResult, StepResult
from procflow._runner.context import RunContext
from procflow._runner.pipeline import ProcessorPipeline
from procflow._runner.runner import PhaseRunner, StepSettings
from procflow.errors import ConfigurationError, ProcessorResultError
from procflow.processors import (
    ProcessInputArgs,
    ProcessInputStepArgs,
    ProcessInputStepResult,
    ProcessorViolation,
    ProcessOutputResultArgs,
    ProcessOutputStepArgs,
)
from procflow.testing import run_input, run_output_result, run_output_step


def _runner(processors: list[Any], ml: MessageList) -> PhaseRunner:
    return PhaseRunner(ProcessorPipeline.build(processors), RunContext(message_list=ml))


class Append:
    def __init__(self, pid: str, suffix: str) -> None:
        self.id = pid
        self.suffix = suffix

    def process_input(self, args: ProcessInputArgs) -> list[Message]:
        return [m.with_text(m.text + self.suffix) for m in args.messages]


class AsyncAppend(Append):
    async def process_input(self, args: ProcessInputArgs) -> list[Message]:  # type: ignore[override]
        return [m.with_text(m.text + self.suffix) for m in args.messages]


async def test_processors_run_in_array_order_sync_and_async() -> None:
    """Hooks run in list order whether they are def or async def."""
    ml = MessageList(["x"])
    await _runner([Append("a", "1"), AsyncAppend("b", "2"), Append("c", "3")], ml).run_input()
    assert ml.all[0].text == "x123"


async def test_process_input_sees_only_new_input() -> None:
    """process_input gets the new input; history stays reachable through message_list."""
    seen: dict[str, Any] = {}

    class Spy:
        id = "spy"

        def process_input(self, args: ProcessInputArgs) -> None:
            seen["messages"] = [m.text for m in args.messages]
            seen["all"] = [m.text for m in args.message_list.all]

    outcome = await run_input(Spy(), ["new"], history=["old"])
    assert seen == {"messages": ["new"], "all": ["old", "new"]}
    assert outcome.tripwire is None


async def test_returned_list_is_authoritative_and_deletes_omitted_ids() -> None:
    """Ids missing from a returned list are removed; returned messages keep their source."""

    class KeepFirst:
        id = "keep-first"

        def process_input(self, args: ProcessInputArgs) -> list[Message]:
            return args.messages[:1]

    outcome = await run_input(KeepFirst(), ["a", "b", "c"], history=["h"])
    assert [m.text for m in outcome.message_list.all] == ["h", "a"]
    assert outcome.message_list.source_of(outcome.messages[0].id) == "input"


async def test_messages_and_system_messages_result_keeps_tagged_system() -> None:
    """{messages, system_messages} replaces untagged system messages; tagged ones survive."""

    class Rewrite:
        id = "rewrite"

        def process_input(self, args: ProcessInputArgs) -> dict[str, Any]:
            assert [m.text for m in args.system_messages] == ["old instructions"]
            return {"messages": args.messages, "system_messages": ["new instructions"]}

    ml = MessageList([Message.system("old instructions"), "hi"])
    ml.add_system("recalled facts", tag="memory")
    await _runner([Rewrite()], ml).run_input()
    assert [m.text for m in ml.system_messages] == ["new instructions", "recalled facts"]


async def test_returning_another_message_list_is_a_clear_error() -> None:
    """Returning a different MessageList instance raises ProcessorResultError naming the processor."""

    class Other:
        id = "other"

        def process_input(self, args: ProcessInputArgs) -> MessageList:
            return MessageList(["x"])

    with pytest.raises(ProcessorResultError, match=r"'other'.*different MessageList"):
        await _runner([Other()], MessageList(["a"])).run_input()


async def test_returning_the_live_message_list_keeps_in_place_edits() -> None:
    """Returning args.message_list after editing it in place is accepted."""

    class InPlace:
        id = "in-place"

        def process_input(self, args: ProcessInputArgs) -> MessageList:
            args.message_list.add("extra")
            return args.message_list

    outcome = await run_input(InPlace(), ["a"])
    assert [m.text for m in outcome.messages] == ["a", "extra"]


async def test_bad_result_kind_is_a_clear_error() -> None:
    """A hook returning something unusable raises ProcessorResultError saying what to return."""

    class Bad:
        id = "bad"

        def process_input(self, args: ProcessInputArgs) -> int:
            return 3

    with pytest.raises(ProcessorResultError, match="return None, a list of messages"):
        await _runner([Bad()], MessageList(["a"])).run_input()


async def test_input_step_overrides_accumulate() -> None:
    """A later process_input_step sees the overrides of earlier ones."""
    seen: list[Any] = []

    class First:
        id = "first"

        def process_input_step(self, args: ProcessInputStepArgs) -> dict[str, Any]:
            return {"model": "model-b", "tool_choice": "none"}

    class Second:
        id = "second"

        async def process_input_step(self, args: ProcessInputStepArgs) -> ProcessInputStepResult:
            seen.append((args.model, args.tool_choice, args.step_number))
            return ProcessInputStepResult(provider_options={"x": 1})

    settings = await _runner([First(), Second()], MessageList(["a"])).run_input_step(
        StepSettings(step_number=2, model="model-a")
    )
    assert seen == [("model-b", "none", 2)]
    assert (settings.model, settings.tool_choice, settings.provider_options) == ("model-b", "none", {"x": 1})


async def test_input_step_unknown_key_is_rejected() -> None:
    """An unknown override key is a clear error listing the allowed keys."""

    class Typo:
        id = "typo"

        def process_input_step(self, args: ProcessInputStepArgs) -> dict[str, Any]:
            return {"toolChoice": "none"}

    with pytest.raises(ProcessorResultError, match="unknown keys \\['toolChoice'\\]"):
        await _runner([Typo()], MessageList(["a"])).run_input_step(StepSettings(step_number=0))


async def test_output_step_sees_all_messages_and_empty_list_means_no_change() -> None:
    """process_output_step sees every message; the seed's `return []` changes nothing."""
    seen: list[str] = []

    class Validator:
        id = "validator"

        def process_output_step(self, args: ProcessOutputStepArgs) -> list[Message]:
            seen.extend(m.text for m in args.messages)
            return []

    outcome = await run_output_step(Validator(), [Message.assistant("answer")], history=["q"])
    assert seen == ["q", "answer"]
    assert [m.text for m in outcome.messages] == ["q", "answer"]


async def test_output_result_sees_response_messages_and_can_add_metadata() -> None:
    """process_output_result gets the response messages and its edits persist."""

    class Meta:
        id = "meta"

        def process_output_result(self, args: ProcessOutputResultArgs) -> list[Message]:
            assert args.result.text == "done"
            for message in args.messages:
                message.metadata["checked"] = True
            return args.messages

    outcome = await run_output_result(Meta(), ["done"])
    assert outcome.messages[0].metadata == {"checked": True}


async def test_state_is_per_processor_and_shared_across_hooks() -> None:
    """Each processor id gets one state dict for the request, shared by all of its hooks."""

    class Counter:
        def __init__(self, pid: str) -> None:
            self.id = pid

        def process_input(self, args: ProcessInputArgs) -> None:
            args.state["n"] = args.state.get("n", 0) + 1

        def process_output_result(self, args: ProcessOutputResultArgs) -> None:
            args.state["n"] += 10

    ctx = RunContext(message_list=MessageList(["a"]))
    runner = PhaseRunner(ProcessorPipeline.build([Counter("a"), Counter("b")]), ctx)
    await runner.run_input()
    await runner.run_output_result(OutputResult())
    assert ctx.states == {"a": {"n": 11}, "b": {"n": 11}}


async def test_abort_raises_tripwire_with_processor_id_and_default_reason() -> None:
    """abort() with no reason names the processor; the tripwire carries its id and options."""

    class Guard:
        id = "guard"

        def process_input(self, args: ProcessInputArgs) -> None:
            args.abort()

    class Retry:
        id = "retry"

        def process_input(self, args: ProcessInputArgs) -> None:
            args.abort("again", retry=True, metadata={"k": 1})

    outcome = await run_input(Guard(), ["x"])
    assert outcome.tripwire is not None
    assert outcome.tripwire.processor_id == "guard" and "guard" in outcome.tripwire.reason
    retry = await run_input(Retry(), ["x"])
    assert retry.tripwire is not None and retry.tripwire.retry and retry.tripwire.metadata == {"k": 1}


async def test_on_violation_fires_once_per_tripwire_and_callback_errors_are_swallowed() -> None:
    """on_violation is called once with the tripwire's details; a raising callback changes nothing."""
    calls: list[ProcessorViolation] = []

    class Guard:
        id = "guard"

        def __init__(self, fail: bool) -> None:
            self.fail = fail

        def on_violation(self, violation: ProcessorViolation) -> None:
            calls.append(violation)
            if self.fail:
                raise RuntimeError("monitoring is down")

        def process_input(self, args: ProcessInputArgs) -> None:
            args.abort("blocked", metadata={"category": "pii"})

    for fail in (False, True):
        with pytest.raises(TripWire) as info:
            await _runner([Guard(fail)], MessageList(["x"])).run_input()
        assert info.value.reason == "blocked" and info.value.processor_id == "guard"
    assert [(c.processor_id, c.message, c.detail) for c in calls] == [
        ("guard", "blocked", {"category": "pii"})
    ] * 2


async def test_async_on_violation_is_awaited() -> None:
    """An async on_violation callback is awaited before the tripwire propagates."""
    calls: list[str] = []

    class Guard:
        id = "guard"

        async def on_violation(self, violation: ProcessorViolation) -> None:
            calls.append(violation.message)

        def process_input(self, args: ProcessInputArgs) -> None:
            args.abort("stop")

    outcome = await run_input(Guard(), ["x"])
    assert outcome.tripwire is not None and calls == ["stop"]


def test_pipeline_skips_missing_hooks_at_build_time() -> None:
    """Only processors that implement a phase's hook are bound to that phase."""

    class OnlyInput:
        id = "only-input"

        def process_input(self, args: ProcessInputArgs) -> None: ...

    class OnlyStream:
        id = "only-stream"

        async def process_output_stream(self, args: Any) -> Any:
            return args.part

    pipeline = ProcessorPipeline.build([OnlyInput(), OnlyStream()])
    assert [h.processor_id for h in pipeline.phase("process_input")] == ["only-input"]
    assert [(h.processor_id, h.is_async) for h in pipeline.phase("process_output_stream")] == [
        ("only-stream", True)
    ]
    assert pipeline.phase("process_output_result") == ()


def test_pipeline_rejects_bad_processors_with_advice() -> None:
    """No id, no hook, or duplicate ids are configuration errors saying what to do."""

    class NoHook:
        id = "idle"

    class Hooked:
        id = "same"

        def process_input(self, args: ProcessInputArgs) -> None: ...

    with pytest.raises(ConfigurationError, match="needs a non-empty string attribute 'id'"):
        ProcessorPipeline.build([object()])
    with pytest.raises(ConfigurationError, match="has no hook"):
        ProcessorPipeline.build([NoHook()])
    with pytest.raises(ConfigurationError, match="share the id 'same'"):
        ProcessorPipeline.build([Hooked(), Hooked()])


async def test_send_signal_adds_a_rendered_signal() -> None:
    """send_signal from a hook adds a signal the model sees as a system-reminder."""

    class Remind:
        id = "remind"

        async def process_input_step(self, args: ProcessInputStepArgs) -> None:
            await args.send_signal("final step", attributes={"step": args.step_number + 1})

    ml = MessageList(["q"])
    await _runner([Remind()], ml).run_input_step(StepSettings(step_number=4))
    assert ml.to_prompt()[-1].text == '<system-reminder step="5">final step</system-reminder>'


async def test_api_error_phase_returns_first_retrying_processor() -> None:
    """process_api_error stops at the first processor asking for a retry."""
    called: list[str] = []

    class Pass:
        id = "pass"

        def process_api_error(self, args: Any) -> None:
            called.append(self.id)

    class Mend:
        id = "mend"

        def process_api_error(self, args: Any) -> dict[str, bool]:
            called.append(self.id)
            return {"retry": True}

    class Never:
        id = "never"

        def process_api_error(self, args: Any) -> None:
            called.append(self.id)

    runner = _runner([Pass(), Mend(), Never()], MessageList(["q"]))
    assert await runner.run_api_error(RuntimeError("400"), StepSettings(step_number=0)) == "mend"
    assert called == ["pass", "mend"]


async def test_output_step_args_carry_step_details() -> None:
    """process_output_step receives the step's text, finish reason and retry count."""
    seen: list[Any] = []

    class Spy:
        id = "spy"

        def process_output_step(self, args: ProcessOutputStepArgs) -> None:
            seen.append((args.text, args.finish_reason, args.retry_count, args.step_number))

    ctx = RunContext(message_list=MessageList([Message.assistant("hi")], source="response"), retry_count=2)
    step = StepResult(step_number=1, text="hi", finish_reason="stop")
    await PhaseRunner(ProcessorPipeline.build([Spy()]), ctx).run_output_step(step, [step])
    assert seen == [("hi", "stop", 2, 1)]

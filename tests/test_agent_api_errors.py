"""Provider errors: ``process_api_error`` on input, output and error processors, retries and their cap."""

from __future__ import annotations

from typing import Any

import pytest
from _agent_support import MODES, call, texts

from procflow import Agent, APICallError
from procflow._agent import DEFAULT_API_ERROR_RETRIES
from procflow.processors import PrefillErrorHandler, ProcessAPIErrorArgs, ProcessAPIErrorResult
from procflow.processors._prefill_error_handler import is_prefill_error
from procflow.testing import ScriptedModel, ScriptedStep

PREFILL = (
    "This model does not support assistant message prefill. The conversation must end with a user message."
)


def rejected(message: str = "invalid request", status: int = 400) -> APICallError:
    return APICallError(message, status_code=status, error_type="invalid_request_error")


class Handler:
    """Records that it ran; asks for a retry when told to."""

    def __init__(self, processor_id: str, log: list[str], *, retry: bool = False) -> None:
        self.id = processor_id
        self.log = log
        self.retry = retry

    def process_api_error(self, args: ProcessAPIErrorArgs) -> dict[str, Any] | None:
        self.log.append(f"{self.id}:{args.retry_count}")
        return {"retry": True} if self.retry else None


@pytest.mark.parametrize("mode", MODES)
async def test_error_hooks_run_input_output_error_and_first_retry_wins(mode: str) -> None:
    """Input, then output, then error processors; the first ``retry`` re-issues the call."""
    log: list[str] = []
    model = ScriptedModel([rejected(), "Recovered."])
    agent = Agent(
        id="a",
        model=model,
        input_processors=[Handler("in", log)],
        output_processors=[Handler("out", log, retry=True)],
        error_processors=[Handler("err", log, retry=True)],
    )
    result = (await call(agent, mode, "Hi")).result
    assert log == ["in:0", "out:0"]
    assert (model.calls, result.text, result.finish_reason) == (2, "Recovered.", "stop")


class ContextLengthHandler:
    """The seed's example: drop two old messages and retry, once."""

    id = "context-length-handler"

    def process_api_error(self, args: ProcessAPIErrorArgs) -> ProcessAPIErrorResult | None:
        if args.retry_count > 0:
            return None
        if isinstance(args.error, APICallError) and "context length exceeded" in args.error.message:
            messages = args.message_list.all
            if len(messages) > 4:
                args.message_list.remove_by_ids([messages[1].id, messages[2].id])
                return ProcessAPIErrorResult(retry=True)
        return None


@pytest.mark.parametrize("mode", MODES)
async def test_error_processor_mends_the_messages_before_the_retry(mode: str) -> None:
    """The re-issued call is built from the mended message list."""
    model = ScriptedModel([rejected("context length exceeded"), "Short now."])
    agent = Agent(id="a", model=model, error_processors=[ContextLengthHandler()])
    history = ["one", "two", "three", "four", "five"]
    result = (await call(agent, mode, history)).result
    assert texts(model.prompts[0]) == history
    assert texts(model.prompts[1]) == ["one", "four", "five"]
    assert result.text == "Short now."


@pytest.mark.parametrize("mode", MODES)
async def test_retry_count_stops_a_second_retry(mode: str) -> None:
    """Error hooks see the retry count; a handler that retries once lets the second error through."""
    model = ScriptedModel([rejected("context length exceeded"), rejected("context length exceeded")])
    agent = Agent(id="a", model=model, error_processors=[ContextLengthHandler()])
    with pytest.raises(APICallError, match="context length"):
        await call(agent, mode, ["one", "two", "three", "four", "five"])
    assert model.calls == 2


async def test_unrecovered_error_propagates_from_the_stream() -> None:
    """With no processor asking to retry, iterating the stream raises the provider error."""
    output = Agent(id="a", model=ScriptedModel([rejected()])).stream("Hi")
    with pytest.raises(APICallError):
        async for _ in output.full_stream:
            pass
    assert output.finish_reason == "error"


@pytest.mark.parametrize("mode", MODES)
async def test_retries_are_capped_at_ten_by_default(mode: str) -> None:
    """With error processors and no ``max_processor_retries``, the call is re-issued at most 10 times."""
    log: list[str] = []
    model = ScriptedModel([rejected()], repeat_last=True)
    agent = Agent(id="a", model=model, error_processors=[Handler("always", log, retry=True)])
    with pytest.raises(APICallError):
        await call(agent, mode, "Hi")
    assert DEFAULT_API_ERROR_RETRIES == 10
    assert model.calls == 11


@pytest.mark.parametrize("mode", MODES)
async def test_explicit_cap_limits_error_retries(mode: str) -> None:
    """``max_processor_retries`` caps re-issued calls too."""
    log: list[str] = []
    model = ScriptedModel([rejected()], repeat_last=True)
    agent = Agent(
        id="a", model=model, error_processors=[Handler("always", log, retry=True)], max_processor_retries=2
    )
    with pytest.raises(APICallError):
        await call(agent, mode, "Hi")
    assert model.calls == 3
    assert log == ["always:0", "always:1", "always:2"]


@pytest.mark.parametrize("mode", MODES)
async def test_prefill_error_is_handled_without_configuration(mode: str) -> None:
    """The built-in PrefillErrorHandler retries once with a ``continue`` reminder as the last message."""
    model = ScriptedModel([rejected(PREFILL), "Continuing."])
    result = (await call(Agent(id="a", model=model), mode, "Hi")).result
    assert model.calls == 2
    assert texts(model.prompts[1])[-1] == "<system-reminder>continue</system-reminder>"
    assert (result.text, result.finish_reason) == ("Continuing.", "stop")
    assert all(m.role != "signal" for m in result.response.message_list.all)


@pytest.mark.parametrize("mode", MODES)
async def test_prefill_handler_retries_only_once(mode: str) -> None:
    """A second prefill rejection in the same call is raised."""
    model = ScriptedModel([rejected(PREFILL)], repeat_last=True)
    with pytest.raises(APICallError, match="prefill"):
        await call(Agent(id="a", model=model), mode, "Hi")
    assert model.calls == 2


@pytest.mark.parametrize("mode", MODES)
async def test_listing_the_prefill_handler_does_not_add_a_second(mode: str) -> None:
    """A PrefillErrorHandler in ``error_processors`` replaces the automatic one."""
    model = ScriptedModel([rejected(PREFILL)], repeat_last=True)
    agent = Agent(id="a", model=model, error_processors=[PrefillErrorHandler(id="my-prefill")])
    with pytest.raises(APICallError):
        await call(agent, mode, "Hi")
    assert model.calls == 2


async def test_mid_stream_failure_is_discarded_and_retried() -> None:
    """Chunks before a mid-stream failure reach the consumer; the retried attempt replaces them."""
    log: list[str] = []
    model = ScriptedModel([ScriptedStep(text="partial", error=rejected("stream broke")), "Complete answer."])
    agent = Agent(id="a", model=model, error_processors=[Handler("retry", log, retry=True)])
    outcome = await call(agent, "stream", "Hi")
    discarded = [c.payload["discarded"] for c in outcome.chunks if "discarded" in c.payload]
    assert [d["processor_id"] for d in discarded] == ["retry"]
    assert outcome.types.count("step-start") == 2
    assert outcome.result.text == "Complete answer."
    assert len(outcome.result.steps) == 1


@pytest.mark.parametrize("mode", MODES)
async def test_other_exceptions_are_not_given_to_error_processors(mode: str) -> None:
    """Only provider errors reach ``process_api_error``; a bug in a model propagates as is."""
    log: list[str] = []
    agent = Agent(
        id="a", model=ScriptedModel([KeyError("bug")]), error_processors=[Handler("h", log, retry=True)]
    )
    with pytest.raises(KeyError):
        await call(agent, mode, "Hi")
    assert log == []


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (rejected(PREFILL), True),
        (APICallError("x", status_code=400, response_body='{"message": "assistant message prefill"}'), True),
        (rejected("Prefilling is not supported for this model"), True),
        (APICallError(PREFILL, status_code=503), False),
        (rejected("context length exceeded"), False),
        (ValueError("must end with a user message"), True),
    ],
)
def test_prefill_errors_are_recognised(error: Exception, expected: bool) -> None:
    """Prefill rejections are recognised in the message or body; server errors are not."""
    assert is_prefill_error(error) is expected

"""StreamErrorRetryProcessor: which errors are transient, delays, budgets, matchers, never auth errors."""

from __future__ import annotations

import re
from typing import Any

import pytest

from procflow import Agent, MessageList
from procflow._error_rules import retryable_status
from procflow._runner.context import RunContext
from procflow.errors import APICallError, APIConnectionError, APITimeoutError, ConfigurationError
from procflow.processors import ProcessAPIErrorArgs, StreamErrorRetryProcessor
from procflow.processors._base import make_abort
from procflow.processors._stream_error_retry import is_auth_error, transient_kind
from procflow.testing import ScriptedModel, ScriptedStep, run_api_error
from procflow.workflows import RetryPolicy


class Sleeps:
    """Records the delays instead of waiting."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def http(status: int, message: str = "error", **fields: Any) -> APICallError:
    return APICallError(message, status_code=status, **fields)


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (http(429), "rate-limit"),
        (http(529), "overloaded"),
        (http(503), "overloaded"),
        (http(500), "server-error"),
        (http(502), "server-error"),
        (http(408), "timeout"),
        (http(504), "timeout"),
        (http(409), "retryable"),
        (APICallError("stream error", error_type="overloaded_error", is_retryable=True), "overloaded"),
        (APICallError("stream error", error_type="rate_limit_error", is_retryable=True), "rate-limit"),
        (APICallError("stream error", error_type="api_error", is_retryable=True), "server-error"),
        (APITimeoutError("openai request timed out"), "timeout"),
        (APIConnectionError("openai connection broke"), "connection"),
        (APICallError("no status, no type: a failure without an answer"), "connection"),
        (APICallError("stream error", kind="overloaded"), "overloaded"),
        (APICallError("marked retryable by its maker", status_code=400, is_retryable=True), "retryable"),
        (TimeoutError(), "timeout"),
        (ConnectionResetError(104, "Connection reset by peer"), "connection"),
        (ConnectionAbortedError(), "connection"),
    ],
)
def test_transient_errors_are_classified(error: BaseException, kind: str) -> None:
    """Rate limits, overload, timeouts, 5xx and dropped connections are transient, each with its kind."""
    assert transient_kind(error) == kind


@pytest.mark.parametrize(
    "error",
    [
        http(400, "messages: field required"),
        http(422),
        http(404),
        http(401, "invalid x-api-key"),
        http(403),
        APICallError("stream error", error_type="authentication_error", is_retryable=True),
        APICallError("stream error", error_type="invalid_request_error", is_retryable=False),
        http(400, "prompt is too long; timeout would not help"),
        APICallError("overloaded, rate limit, timed out: words only", kind="rejected"),
        APIConnectionError("bad header value", kind="rejected"),
        ValueError("bad argument"),
        RuntimeError("upstream overloaded, try later"),
        OSError("read ECONNRESET"),
    ],
)
def test_rejections_and_auth_errors_are_not_transient(error: BaseException) -> None:
    """Rejected requests, auth failures and other exceptions are not transient, whatever their text says."""
    assert transient_kind(error) is None


def test_auth_errors_are_recognised_by_status_and_type() -> None:
    """401, 403 and an ``authentication_error`` type are authentication errors."""
    assert is_auth_error(http(401)) and is_auth_error(http(403))
    assert is_auth_error(APICallError("x", error_type="authentication_error"))
    assert not is_auth_error(http(429)) and not is_auth_error(PermissionError("x"))


async def test_transient_error_is_retried_after_a_delay() -> None:
    """A 503 is retried after ``initial_delay`` seconds."""
    sleeps = Sleeps()
    outcome = await run_api_error(StreamErrorRetryProcessor(sleep=sleeps), http(503), ["hi"])
    assert outcome.retry is True
    assert sleeps.calls == [1.0]


async def test_default_budget_is_one_retry_per_step() -> None:
    """With the default ``max_retries=1``, the second failure of a step is not retried; a new step is."""
    processor, state = StreamErrorRetryProcessor(sleep=Sleeps()), {}
    first = await run_api_error(processor, http(529), ["hi"], state=state)
    second = await run_api_error(processor, http(529), ["hi"], state=state)
    next_step = await run_api_error(processor, http(529), ["hi"], state=state, step_number=1)
    assert (first.retry, second.retry, next_step.retry) == (True, False, True)


async def test_backoff_grows_and_is_capped() -> None:
    """Without Retry-After, delays grow by ``backoff`` per retry and never exceed ``max_delay``."""
    sleeps = Sleeps()
    processor = StreamErrorRetryProcessor(
        max_retries=4, initial_delay=0.5, backoff=3.0, max_delay=5.0, sleep=sleeps
    )
    state: dict[str, Any] = {}
    outcomes = [await run_api_error(processor, http(500), ["hi"], state=state) for _ in range(5)]
    assert [o.retry for o in outcomes] == [True, True, True, True, False]
    assert sleeps.calls == [0.5, 1.5, 4.5, 5.0]


async def test_retry_after_is_honoured_up_to_the_cap() -> None:
    """``Retry-After`` (or ``retry-after-ms``) sets the delay, but never beyond ``max_delay``."""
    sleeps = Sleeps()
    processor = StreamErrorRetryProcessor(max_delay=10.0, sleep=sleeps)
    await run_api_error(processor, http(429, response_headers={"Retry-After": "7"}), ["hi"])
    await run_api_error(processor, http(429, response_headers={"retry-after-ms": "250"}), ["hi"])
    await run_api_error(processor, http(429, response_headers={"Retry-After": "120"}), ["hi"])
    assert sleeps.calls == [7.0, 0.25, 10.0]


async def test_zero_delay_does_not_sleep() -> None:
    """A zero delay retries at once without calling sleep."""
    sleeps = Sleeps()
    processor = StreamErrorRetryProcessor(initial_delay=0, sleep=sleeps)
    assert (await run_api_error(processor, http(500), ["hi"])).retry is True
    assert sleeps.calls == []


async def test_default_sleep_really_waits_with_anyio() -> None:
    """Without an injected sleep, the processor awaits ``anyio.sleep`` (here for 1 ms)."""
    error = http(429, response_headers={"retry-after-ms": "1"})
    assert (await run_api_error(StreamErrorRetryProcessor(), error, ["hi"])).retry is True


async def test_max_retries_zero_never_retries() -> None:
    """``max_retries=0`` turns retries off."""
    outcome = await run_api_error(StreamErrorRetryProcessor(max_retries=0, sleep=Sleeps()), http(503), ["hi"])
    assert outcome.retry is False


async def test_non_transient_errors_are_left_alone() -> None:
    """A 400 rejection is not retried and nothing sleeps."""
    sleeps = Sleeps()
    outcome = await run_api_error(StreamErrorRetryProcessor(sleep=sleeps), http(400), ["hi"])
    assert outcome.retry is False and sleeps.calls == []


async def test_matchers_add_errors_to_retry() -> None:
    """Regex strings, compiled patterns and predicates mark more errors as retryable."""
    processor = StreamErrorRetryProcessor(
        matchers=[
            "model is loading",
            re.compile(r"try again", re.IGNORECASE),
            lambda e: isinstance(e, KeyError),
        ],
        sleep=Sleeps(),
    )
    assert processor.reason(http(400, "Model is loading, wait")) == "matcher"
    assert processor.reason(http(400, "please TRY AGAIN")) == "matcher"
    assert processor.reason(KeyError("x")) == "matcher"
    assert processor.reason(http(400, "bad request")) is None
    assert (await run_api_error(processor, http(400, "model is loading"), ["hi"])).retry is True


async def test_auth_errors_are_never_retried_even_when_matched() -> None:
    """401/403 are not retried, whatever the matchers say."""
    processor = StreamErrorRetryProcessor(matchers=[".*", lambda e: True], sleep=Sleeps())
    assert (await run_api_error(processor, http(401), ["hi"])).retry is False
    assert (await run_api_error(processor, http(403), ["hi"])).retry is False


async def test_retry_transient_false_uses_matchers_only() -> None:
    """With ``retry_transient=False`` only matched errors are retried."""
    processor = StreamErrorRetryProcessor(retry_transient=False, matchers=["overloaded"], sleep=Sleeps())
    assert (await run_api_error(processor, http(500, "internal"), ["hi"])).retry is False
    assert (await run_api_error(processor, http(529, "Overloaded"), ["hi"])).retry is True


async def test_retry_result_says_why_and_how_long() -> None:
    """The retry result carries the attempt number, the delay and the reason."""
    ctx = RunContext(message_list=MessageList(["hi"]))
    args = ProcessAPIErrorArgs(
        error=http(429, response_headers={"retry-after": "2"}),
        messages=ctx.message_list.all,
        step_number=3,
        steps=[],
        abort=make_abort("stream-error-retry"),
        state={},
        retry_count=0,
        request_context=ctx.request_context,
        message_list=ctx.message_list,
        writer=None,
        send_signal=ctx.signal_sender("stream-error-retry"),
        processor_id="stream-error-retry",
    )
    result = await StreamErrorRetryProcessor(sleep=Sleeps()).process_api_error(args)
    assert result is not None and result.retry
    assert result.metadata == {"attempt": 1, "delay": 2.0, "reason": "rate-limit"}
    assert args.state == {"attempts": {3: 1}}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_retries": -1}, "max_retries"),
        ({"initial_delay": -1}, "initial_delay"),
        ({"max_delay": -1}, "max_delay"),
        ({"backoff": 0.5}, "backoff"),
        ({"matchers": [42]}, "matcher"),
    ],
)
def test_invalid_options_are_rejected(options: dict[str, Any], message: str) -> None:
    """Bad options raise a ConfigurationError naming what is wrong."""
    with pytest.raises(ConfigurationError, match=message):
        StreamErrorRetryProcessor(**options)


def test_id_and_delay_helper() -> None:
    """The default id is ``stream-error-retry``; ``delay()`` exposes the wait for a given retry."""
    processor = StreamErrorRetryProcessor(id="retry-2", initial_delay=2.0)
    assert StreamErrorRetryProcessor().id == "stream-error-retry" and processor.id == "retry-2"
    assert processor.delay(http(500), 0) == 2.0 and processor.delay(http(500), 2) == 8.0
    assert processor.delay(TimeoutError(), 1) == 4.0


# -- the agent loop -------------------------------------------------------------------------------------


async def test_agent_retries_an_overloaded_call() -> None:
    """An overloaded provider is retried after the delay and the call completes."""
    sleeps = Sleeps()
    model = ScriptedModel([http(529, "Overloaded"), "Hello!"])
    agent = Agent(id="a", model=model, error_processors=[StreamErrorRetryProcessor(sleep=sleeps)])
    result = await agent.generate("hi")
    assert result.text == "Hello!"
    assert model.calls == 2 and sleeps.calls == [1.0]


async def test_agent_drops_the_partial_answer_of_a_failed_stream() -> None:
    """A stream that fails midway is retried; only the retried answer is kept."""
    model = ScriptedModel(
        [ScriptedStep(text="Partial ans", error=APICallError("connection reset by peer")), "Full answer."]
    )
    agent = Agent(id="a", model=model, error_processors=[StreamErrorRetryProcessor(sleep=Sleeps())])
    output = agent.stream("hi")
    chunks = [chunk async for chunk in output.full_stream]
    discarded = [c for c in chunks if c.type == "step-finish" and "discarded" in c.payload]
    assert len(discarded) == 1
    assert output.text == "Full answer."


async def test_agent_raises_once_retries_are_used_up() -> None:
    """With the default single retry, a second failure reaches the caller."""
    model = ScriptedModel([http(503), http(503), "never"])
    agent = Agent(id="a", model=model, error_processors=[StreamErrorRetryProcessor(sleep=Sleeps())])
    with pytest.raises(APICallError):
        await agent.generate("hi")
    assert model.calls == 2


async def test_agent_never_retries_authentication_errors() -> None:
    """A 401 fails at once, without a second call or a wait."""
    sleeps = Sleeps()
    model = ScriptedModel([http(401, "invalid x-api-key"), "never"])
    processor = StreamErrorRetryProcessor(max_retries=5, matchers=[".*"], sleep=sleeps)
    agent = Agent(id="a", model=model, error_processors=[processor])
    with pytest.raises(APICallError, match="invalid x-api-key"):
        await agent.generate("hi")
    assert model.calls == 1 and sleeps.calls == []


async def test_agent_retry_budget_follows_max_retries() -> None:
    """``max_retries=3`` with a matching agent cap survives three failures of the same step."""
    sleeps = Sleeps()
    model = ScriptedModel([http(500), http(502), http(429), "Done."])
    processor = StreamErrorRetryProcessor(max_retries=3, initial_delay=0.1, sleep=sleeps)
    agent = Agent(id="a", model=model, error_processors=[processor], max_processor_retries=3)
    result = await agent.generate("hi")
    assert result.text == "Done."
    assert sleeps.calls == [0.1, 0.2, 0.4]


# -- one backoff, one retryable-status rule ------------------------------------------------------------


def test_one_retryable_status_rule() -> None:
    """Every status is judged by one rule, the same for the error, the classifier and the processor."""
    processor = StreamErrorRetryProcessor()
    for status in range(300, 600):
        error = http(status)
        expected = status in (408, 409, 429) or status >= 500
        assert retryable_status(status) is expected
        assert error.is_retryable is expected
        assert (transient_kind(error) is not None) is expected
        assert (processor.reason(error) is not None) is expected


async def test_backoff_comes_from_a_retry_policy() -> None:
    """A workflow RetryPolicy gives the retry count and delays; Retry-After is still capped by it."""
    sleeps = Sleeps()
    policy = RetryPolicy(attempts=3, initial_delay=0.5, backoff=3.0, max_delay=1.0)
    processor = StreamErrorRetryProcessor(policy=policy, sleep=sleeps)
    state: dict[str, Any] = {}
    outcomes = [await run_api_error(processor, http(500), ["hi"], state=state) for _ in range(3)]
    assert [o.retry for o in outcomes] == [True, True, False]
    assert sleeps.calls == [0.5, 1.0]
    assert processor.delay(http(429, response_headers={"Retry-After": "60"}), 0) == 1.0
    assert StreamErrorRetryProcessor(max_retries=2, initial_delay=0.25).policy == RetryPolicy(
        attempts=3, initial_delay=0.25, backoff=2.0, max_delay=30.0
    )

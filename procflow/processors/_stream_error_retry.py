"""StreamErrorRetryProcessor: retry a model call that failed for a transient reason.

Rate limits (429), overloaded providers (529, 503), timeouts, other 5xx answers and dropped
connections usually pass; a rejected request (400, 422) or bad credentials (401, 403) do not. The
processor waits — as long as the provider's ``Retry-After`` asks, up to a cap, or with the exponential
backoff of a :class:`~procflow.workflows.RetryPolicy` (the same rule workflow steps use) — then asks the
agent to re-issue the call.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Literal

import anyio

from procflow._logging import log
from procflow.errors import APICallError, APIErrorKind, ConfigurationError
from procflow.processors._args import ProcessAPIErrorArgs, ProcessAPIErrorResult
from procflow.processors._base import ProcessorBase

if TYPE_CHECKING:
    from procflow.workflows import RetryPolicy

__all__ = ["ErrorMatcher", "StreamErrorRetryProcessor", "TransientKind", "is_auth_error", "transient_kind"]

ErrorMatcher = str | re.Pattern[str] | Callable[[BaseException], bool]
"""Marks more errors as retryable: a regex searched (case-insensitively) in the error's text, or a
predicate on the exception. Only matchers you give read the text; the built-in rules go by ``kind``."""

TransientKind = Literal["rate-limit", "overloaded", "timeout", "server-error", "connection", "retryable"]
"""Why an error counts as transient."""

_TRANSIENT: dict[APIErrorKind, TransientKind] = {
    "rate-limit": "rate-limit",
    "overloaded": "overloaded",
    "timeout": "timeout",
    "server-error": "server-error",
    "connection": "connection",
    "retryable": "retryable",
}


def _text(error: BaseException) -> str:
    """The text user matchers search (the built-in decisions never read it)."""
    if isinstance(error, APICallError):
        return "\n".join(
            f for f in (error.message, error.error_type, error.error_code, error.response_body) if f
        )
    return f"{type(error).__name__}: {error}"


def is_auth_error(error: BaseException) -> bool:
    """Whether ``error`` says the credentials are missing, wrong or not allowed (never worth a retry)."""
    return isinstance(error, APICallError) and error.kind == "auth"


def transient_kind(error: BaseException) -> TransientKind | None:
    """Classify ``error`` as transient (rate limit, overloaded, timeout, 5xx, connection) or ``None``.

    Decided by class and by the ``kind`` the provider boundary set, never by the message text: an
    :class:`~procflow.errors.APICallError` counts when it is retryable and not an authentication error
    (its ``kind`` says why); other exceptions count when they are ``TimeoutError`` or
    ``ConnectionError``. To retry errors recognised by their text, give the processor ``matchers``.
    """
    if isinstance(error, APICallError):
        if error.kind == "auth" or not error.is_retryable:
            return None
        return _TRANSIENT.get(error.kind, "retryable")
    if isinstance(error, TimeoutError):
        return "timeout"
    if isinstance(error, ConnectionError):
        return "connection"
    return None


class StreamErrorRetryProcessor(ProcessorBase):
    """Retry transient provider failures, waiting between tries (id ``stream-error-retry``).

    Add it to the agent's ``error_processors``. Give the agent a processor retry budget at least as
    large as ``max_retries`` (the agent allows 10 by default when error processors are set), and keep
    the model's own retries at 0 when this processor is the request's only retry mechanism.

    Args:
        max_retries: Retries per model call (per step); the seed's default is 1.
        initial_delay: Seconds before the first retry when the provider gave no ``Retry-After``.
        backoff: Factor applied to the delay for each further retry of the same call.
        max_delay: Cap on any delay, including one the provider asked for with ``Retry-After``.
        policy: The backoff as a :class:`~procflow.workflows.RetryPolicy` (``attempts - 1`` retries,
            its delays and ``jitter``), in place of the four options above.
        matchers: Extra errors to retry: regexes searched in the error text, or predicates.
        retry_transient: Retry the built-in transient kinds (``False``: only what ``matchers`` match).
        sleep: The async sleep used for delays (``anyio.sleep``; inject a fake in tests).
        id: Processor id, to have two in one pipeline.

    Authentication errors (401, 403) are never retried, whatever the matchers say.
    """

    name = "Stream error retry"
    description = "Retries model calls that failed for a transient reason, honouring Retry-After."

    def __init__(
        self,
        *,
        max_retries: int = 1,
        initial_delay: float = 1.0,
        backoff: float = 2.0,
        max_delay: float = 30.0,
        policy: RetryPolicy | None = None,
        matchers: Sequence[ErrorMatcher] = (),
        retry_transient: bool = True,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
        id: str = "stream-error-retry",
    ) -> None:
        if max_retries < 0:
            raise ConfigurationError(
                f"StreamErrorRetryProcessor: max_retries must be >= 0, got {max_retries}"
            )
        if initial_delay < 0 or max_delay < 0:
            raise ConfigurationError("StreamErrorRetryProcessor: initial_delay and max_delay must be >= 0")
        if backoff < 1:
            raise ConfigurationError(f"StreamErrorRetryProcessor: backoff must be >= 1, got {backoff}")
        if policy is None:
            # procflow.workflows imports the processors package, so it is imported when first needed.
            from procflow.workflows import RetryPolicy

            policy = RetryPolicy(
                attempts=max_retries + 1, initial_delay=initial_delay, backoff=backoff, max_delay=max_delay
            )
        self.id = id
        self.policy = policy
        self.max_retries = policy.attempts - 1
        self.initial_delay = policy.initial_delay
        self.backoff = policy.backoff
        self.max_delay = policy.max_delay
        self.retry_transient = retry_transient
        self._sleep = sleep
        self._patterns: list[re.Pattern[str]] = []
        self._predicates: list[Callable[[BaseException], bool]] = []
        for matcher in matchers:
            if isinstance(matcher, str):
                self._patterns.append(re.compile(matcher, re.IGNORECASE))
            elif isinstance(matcher, re.Pattern):
                self._patterns.append(matcher)
            elif callable(matcher):
                self._predicates.append(matcher)
            else:
                raise ConfigurationError(
                    f"StreamErrorRetryProcessor: a matcher must be a regex string, a compiled pattern or a "
                    f"predicate, got {type(matcher).__name__}"
                )

    def reason(self, error: BaseException) -> str | None:
        """Why ``error`` would be retried (a :data:`TransientKind` or ``"matcher"``), or ``None``."""
        if is_auth_error(error):
            return None
        if self.retry_transient:
            kind = transient_kind(error)
            if kind is not None:
                return kind
        if self._patterns:
            text = _text(error)
            if any(p.search(text) for p in self._patterns):
                return "matcher"
        if any(predicate(error) for predicate in self._predicates):
            return "matcher"
        return None

    def delay(self, error: BaseException, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt`` (0 for the first retry) after ``error``."""
        asked = error.retry_after if isinstance(error, APICallError) else None
        if asked is not None:
            return min(asked, self.policy.max_delay)
        return self.policy.delay(attempt + 1)

    async def process_api_error(self, args: ProcessAPIErrorArgs) -> ProcessAPIErrorResult | None:
        """Wait, then ask for a retry, while the error is transient and retries remain for this step."""
        reason = self.reason(args.error)
        if reason is None:
            return None
        attempts: dict[int, int] = args.state.setdefault("attempts", {})
        attempt = attempts.get(args.step_number, 0)
        if attempt >= self.max_retries:
            log.debug(
                "stream_error_retry_exhausted", processor_id=self.id, step=args.step_number, reason=reason
            )
            return None
        attempts[args.step_number] = attempt + 1
        wait = self.delay(args.error, attempt)
        status = args.error.status_code if isinstance(args.error, APICallError) else None
        log.debug(
            "stream_error_retry",
            processor_id=self.id,
            step=args.step_number,
            attempt=attempt + 1,
            delay_s=wait,
            reason=reason,
            status=status,
        )
        if wait > 0:
            await self._sleep(wait)
        return ProcessAPIErrorResult(
            retry=True, metadata={"attempt": attempt + 1, "delay": wait, "reason": reason}
        )

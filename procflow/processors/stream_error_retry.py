"""StreamErrorRetryProcessor: retry a model call that failed for a transient reason.

Rate limits (429), overloaded providers (529, 503), timeouts, other 5xx answers and dropped
connections usually pass; a rejected request (400, 422) or bad credentials (401, 403) do not. The
processor waits — as long as the provider's ``Retry-After`` asks, up to a cap, or with exponential
backoff — then asks the agent to re-issue the call.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal

import anyio

from procflow._logging import log
from procflow.errors import APICallError, ConfigurationError
from procflow.processors.args import ProcessAPIErrorArgs, ProcessAPIErrorResult
from procflow.processors.base import ProcessorBase

__all__ = ["ErrorMatcher", "StreamErrorRetryProcessor", "TransientKind", "is_auth_error", "transient_kind"]

ErrorMatcher = str | re.Pattern[str] | Callable[[BaseException], bool]
"""Marks more errors as retryable: a regex searched (case-insensitively) in the error's text, or a
predicate on the exception."""

TransientKind = Literal["rate-limit", "overloaded", "timeout", "server-error", "connection", "retryable"]
"""Why an error counts as transient."""

_AUTH_STATUS = frozenset({401, 403})
_AUTH_TYPES = frozenset({"authentication_error", "permission_error", "invalid_api_key", "unauthorized"})
_TEXT_KINDS: tuple[tuple[re.Pattern[str], TransientKind], ...] = (
    (re.compile(r"rate[ _-]?limit|too many requests", re.IGNORECASE), "rate-limit"),
    (re.compile(r"overloaded|temporarily unavailable", re.IGNORECASE), "overloaded"),
    (re.compile(r"timed? ?out\b|timeout", re.IGNORECASE), "timeout"),
    (
        re.compile(r"econnreset|connection (reset|closed|aborted|refused)|broken pipe", re.IGNORECASE),
        "connection",
    ),
)


def _text(error: BaseException) -> str:
    if isinstance(error, APICallError):
        return "\n".join(
            f for f in (error.message, error.error_type, error.error_code, error.response_body) if f
        )
    return f"{type(error).__name__}: {error}"


def is_auth_error(error: BaseException) -> bool:
    """Whether ``error`` says the credentials are missing, wrong or not allowed (never worth a retry)."""
    if not isinstance(error, APICallError):
        return False
    return error.status_code in _AUTH_STATUS or (error.error_type or "").lower() in _AUTH_TYPES


def _status_kind(error: APICallError) -> TransientKind | None:
    kind = (error.error_type or "").lower()
    status = error.status_code
    if status == 429 or "rate_limit" in kind:
        return "rate-limit"
    if status in (503, 529) or "overloaded" in kind:
        return "overloaded"
    if status in (408, 504) or "timeout" in kind:
        return "timeout"
    if (status is not None and status >= 500) or kind in ("api_error", "server_error"):
        return "server-error"
    return None


def transient_kind(error: BaseException) -> TransientKind | None:
    """Classify ``error`` as transient (rate limit, overloaded, timeout, 5xx, connection) or ``None``.

    Authentication errors (401, 403) are never transient. For an :class:`~procflow.errors.APICallError`
    the status and the provider's error type decide first; a transport failure (no status) or an error
    the provider marked retryable counts too. Other exceptions count when they are ``TimeoutError`` or
    ``ConnectionError`` or their text says so.
    """
    if is_auth_error(error):
        return None
    if isinstance(error, APICallError):
        kind = _status_kind(error)
        if kind is not None:
            return kind
        if not error.is_retryable:
            return None
    elif isinstance(error, TimeoutError):
        return "timeout"
    elif isinstance(error, ConnectionError):
        return "connection"
    text = _text(error)
    for pattern, kind in _TEXT_KINDS:
        if pattern.search(text):
            return kind
    if isinstance(error, APICallError):  # marked retryable, no more specific kind
        return "connection" if error.status_code is None else "retryable"
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
        self.id = id
        self.max_retries = max_retries
        self.initial_delay = initial_delay
        self.backoff = backoff
        self.max_delay = max_delay
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
            return min(asked, self.max_delay)
        return min(self.initial_delay * self.backoff**attempt, self.max_delay)

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

"""Step retry policy: how many attempts, how long to wait between them, and which errors qualify.

Tripwires, validation errors (the step's input did not fit its schema, a workflow misuse) and
cancellation are never retried, whatever the policy says: a tripwire is a decision, a validation error
repeats identically, and cancellation must propagate.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from procflow._messages.tripwire import TripWire
from procflow.errors import ConfigurationError, WorkflowDefinitionError, WorkflowRunError

__all__ = ["NEVER_RETRIED", "RetryPolicy"]

NEVER_RETRIED: tuple[type[BaseException], ...] = (
    TripWire,
    ValidationError,
    WorkflowDefinitionError,
    WorkflowRunError,
)
"""Errors no policy retries (cancellation is a ``BaseException`` and is never caught at all)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """When and how often a failed step is attempted again.

    The wait before attempt ``n + 1`` is ``initial_delay * backoff ** (n - 1)``, spread by ``jitter``
    (a fraction: ``0.2`` waits between 80% and 120% of that) and capped at ``max_delay``.

    Attributes:
        attempts: Total attempts, the first included (``1`` means no retry).
        initial_delay: Seconds to wait after the first failure.
        backoff: Factor the wait grows by after each further failure.
        max_delay: Upper bound of any wait, in seconds.
        jitter: Random spread of each wait, as a fraction between 0 and 1.
        retry_on: Exception types worth another attempt; others fail the step at once.
    """

    attempts: int = 3
    initial_delay: float = 0.1
    backoff: float = 2.0
    max_delay: float = 10.0
    jitter: float = 0.0
    retry_on: tuple[type[BaseException], ...] = (Exception,)

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ConfigurationError(f"RetryPolicy(attempts={self.attempts}): attempts must be at least 1")
        if self.initial_delay < 0 or self.max_delay < 0:
            raise ConfigurationError("RetryPolicy delays must be zero or positive (seconds)")
        if self.backoff < 1:
            raise ConfigurationError(f"RetryPolicy(backoff={self.backoff}): backoff must be at least 1")
        if not 0 <= self.jitter <= 1:
            raise ConfigurationError(f"RetryPolicy(jitter={self.jitter}): jitter is a fraction from 0 to 1")
        if not self.retry_on or not all(
            isinstance(kind, type) and issubclass(kind, BaseException) for kind in self.retry_on
        ):
            raise ConfigurationError(
                "RetryPolicy(retry_on=...) takes a non-empty tuple of exception types, e.g. (TimeoutError,)"
            )

    def should_retry(self, error: BaseException, attempt: int) -> bool:
        """Whether attempt number ``attempt`` (1-based) failing with ``error`` earns another attempt."""
        if attempt >= self.attempts or isinstance(error, NEVER_RETRIED):
            return False
        return isinstance(error, Exception) and isinstance(error, self.retry_on)

    def delay(self, attempt: int, *, rng: random.Random | None = None) -> float:
        """Seconds to wait after attempt number ``attempt`` (1-based) failed."""
        base = self.initial_delay * self.backoff ** (attempt - 1)
        if self.jitter:
            base *= 1 + self.jitter * (2 * (rng or random).random() - 1)
        return min(self.max_delay, max(0.0, base))

    def to_dict(self) -> dict[str, Any]:
        """Return the settings as a JSON-ready dict (used by workflow pictures)."""
        return {
            "attempts": self.attempts,
            "initial_delay": self.initial_delay,
            "backoff": self.backoff,
            "max_delay": self.max_delay,
            "jitter": self.jitter,
            "retry_on": [kind.__name__ for kind in self.retry_on],
        }

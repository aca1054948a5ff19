"""The rules behind the error tree: how an HTTP status or provider error type is classified, how long a
provider asked to wait, and how a pydantic validation error is described without quoting the input."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final, Literal

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = [
    "TRANSIENT_KINDS",
    "APIErrorKind",
    "format_validation_error",
    "kind_for_status",
    "parse_retry_after",
    "retryable_status",
]


APIErrorKind = Literal[
    "rate-limit",
    "overloaded",
    "timeout",
    "server-error",
    "connection",
    "retryable",
    "auth",
    "rejected",
    "redirect",
]
"""Why a provider call failed, decided where the failure is seen (status, error type or code, transport):

``rate-limit`` (429), ``overloaded`` (503, 529), ``timeout`` (408, 504, transport timeouts, the call
deadline), ``server-error`` (other 5xx), ``connection`` (refused, reset, dropped), ``retryable`` (409, or
marked retryable without a finer reason) — the transient kinds — and ``auth`` (401, 403), ``rejected``
(other 4xx, a malformed request) and ``redirect`` (3xx), which a retry does not fix."""

TRANSIENT_KINDS: Final[frozenset[APIErrorKind]] = frozenset(
    {"rate-limit", "overloaded", "timeout", "server-error", "connection", "retryable"}
)
"""The kinds a retry of the same request may fix."""

_AUTH_TYPES = frozenset({"authentication_error", "permission_error", "invalid_api_key", "unauthorized"})


def retryable_status(status: int) -> bool:
    """The one retryable-status rule: 408, 409, 429 and every 5xx may pass when retried (their
    :func:`kind_for_status` is transient); other statuses will fail the same way again."""
    return kind_for_status(status) in TRANSIENT_KINDS


def kind_for_status(status: int | None, error_type: str | None = None) -> APIErrorKind | None:
    """Classify an HTTP status and/or a provider error type (``rate_limit_error``, ``overloaded_error``,
    …); ``None`` when neither says anything."""
    kind = (error_type or "").lower()
    if status in (401, 403) or kind in _AUTH_TYPES:
        return "auth"
    if status == 429 or "rate_limit" in kind:
        return "rate-limit"
    if status in (503, 529) or "overloaded" in kind:
        return "overloaded"
    if status in (408, 504) or "timeout" in kind:
        return "timeout"
    if (status is not None and status >= 500) or kind in ("api_error", "server_error"):
        return "server-error"
    if status == 409:
        return "retryable"
    if status is not None and 300 <= status < 400:
        return "redirect"
    if (status is not None and 400 <= status < 500) or kind.endswith(
        ("invalid_request_error", "not_found_error")
    ):
        return "rejected"
    return None


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds the provider asked to wait: ``retry-after-ms``, else ``Retry-After`` in seconds or as an
    HTTP date (counted from ``now``, default the current time); ``None`` when it did not say.

    ``headers`` must have lower-case keys.
    """
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP date is GMT even when it does not say so
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def format_validation_error(exc: ValidationError) -> str:
    """Describe what a pydantic validation error found wrong, field by field, without quoting the input.

    Example: ``"role: Input should be 'user', 'assistant', 'system', 'tool' or 'signal'"``.
    """
    problems = []
    for error in exc.errors(include_url=False, include_input=False, include_context=False):
        where = ".".join(str(part) for part in error["loc"]) or "(root)"
        problems.append(f"{where}: {error['msg']}")
    return "; ".join(problems) or "invalid value"

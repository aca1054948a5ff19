"""The rules behind the error tree: how an HTTP status or provider error type is classified, how long a
provider asked to wait, and how a pydantic validation error is described without quoting the input."""

from __future__ import annotations

import email.utils
import functools
import time
import typing
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Literal

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


def format_validation_error(exc: ValidationError, *, root: str = "(root)", limit: int = 5) -> str:
    """Describe what a pydantic validation error found wrong, field by field, without quoting the input.

    Each problem is ``"<field path>: <pydantic's reason>"``; the whole value is never part of it: the
    reason is pydantic's (which names what was expected, not what was given), a validator's own message
    has the rejected value blanked out as ``<value>``, and a tag that matched no member of a tagged union
    is not repeated. The caller adds how to fix it (``"...; a message looks like {...}"``).

    Args:
        exc: The pydantic error.
        root: What to call the whole value when the error concerns it rather than a field.
        limit: At most this many problems are listed; the rest are counted (``"and 2 more problems"``).

    Example: ``"role: Input should be 'user', 'assistant', 'system', 'tool' or 'signal'"``.
    """
    errors = exc.errors(include_url=False, include_input=True, include_context=True)
    problems = [_problem(error, root) for error in errors[:limit]]
    if len(errors) > limit:
        problems.append(f"and {len(errors) - limit} more problems")
    return "; ".join(problems) or "invalid value"


def _problem(error: Mapping[str, Any], root: str) -> str:
    where = ".".join(str(part) for part in error["loc"]) or root
    message = str(error["msg"])
    context = error.get("ctx") or {}
    if error["type"] == "union_tag_invalid":  # pydantic's text quotes the tag the input gave
        field = str(context.get("discriminator", ""))
        tag = f"the value of {field}" if field.startswith("'") else "the tag"  # not a callable's name
        message = f"{tag} is none of the expected tags: {context.get('expected_tags', '')}"
    elif error["type"] not in _pydantic_error_types():  # a validator's own text may quote the value
        value = error.get("input")
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if isinstance(value, str) and len(value) >= 3 and value in message:
            message = message.replace(value, "<value>")
    return f"{where}: {message}"


@functools.cache
def _pydantic_error_types() -> frozenset[str]:
    """pydantic's own error types whose text never quotes the input.

    Left out: a validator's (``value_error``, ``assertion_error``) and those that embed an exception's
    or the input's text (``get_attribute_error``, ``timezone_offset``, ...); custom error types are not
    pydantic's at all.
    """
    from pydantic_core.core_schema import ErrorType

    return frozenset(typing.get_args(ErrorType)) - _MAY_QUOTE


_MAY_QUOTE: Final = frozenset(
    {
        "assertion_error",
        "datetime_object_invalid",
        "get_attribute_error",
        "iteration_error",
        "mapping_type",
        "no_such_attribute",
        "timezone_offset",
        "uuid_parsing",
        "value_error",
    }
)

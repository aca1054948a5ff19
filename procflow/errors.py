"""The procflow exception tree.

::

    ProcflowError
    ├── ConfigurationError (ValueError)        bad constructor or call arguments, bad input messages
    │   ├── UnknownModelError                  a model id names no known provider
    │   ├── MissingAPIKeyError                 a provider needs a key that is not set
    │   └── PipelineLoadError                  (cli) a --pipeline reference cannot be loaded
    ├── ConversationFormatError (ValueError)   (cli) a line of the input file is not a conversation
    ├── RayUnavailableError (ImportError)      (cli) --engine ray / run_ray without Ray Data installed
    ├── JsonInputError (ValueError)            (cli) a line is not JSON procflow accepts (depth, size, NaN)
    ├── ChunkTypeError (ValueError)            a custom chunk's type does not start with ``data-``
    ├── StreamStateError (RuntimeError)        a stream read by a second consumer, or its result read early
    ├── ScriptExhaustedError (RuntimeError)    (testing) a scripted model was called more often than scripted
    ├── ProcessorResultError (TypeError)       a processor hook returned something the runner cannot use
    ├── ProcessorFailedError (RuntimeError)    a processor hook raised; the call stopped (fail closed)
    ├── WorkflowDefinitionError (ValueError)   a workflow cannot be compiled (says how to fix it)
    ├── WorkflowRunError                       a workflow step failed at run time
    │   └── BranchConflictError                merge_branches() found two different edits of one part
    ├── ToolError                              a tool could not be called
    │   └── ToolArgumentsError (ValueError)    the model's arguments do not fit the tool's schema
    ├── PatternTimeoutError (TimeoutError)     a user regex ran past its timeout
    ├── StreamHoldLimitError (BufferError)     a stream redactor would have to hold more text than allowed
    ├── TokenizerDataError (RuntimeError)      the offline tokenizer data is missing or not the expected file
    ├── MemoryStorageError (RuntimeError)      memory storage failed; a turn is saved whole or not at all
    ├── CacheError                             a server cache or counter store failed
    │   ├── CacheBackendError (ConnectionError)    the backend (Redis) is down, slow or answered an error
    │   └── CacheValueError (TypeError)        a value cannot be stored safely (not JSON/msgpack data)
    └── ModelError                             a model call failed
        ├── APICallError                       a call failed; ``kind`` says why, ``is_retryable`` if worth it
        │   ├── APIConnectionError (ConnectionError)   no answer: refused, reset, dropped or cut-short stream
        │   │   └── APITimeoutError (TimeoutError)     connect/read timeout, or the call's ``deadline`` passed
        │   └── APIStatusError                 the server answered with an HTTP error status (``status_code``)
        │       └── APIRedirectError           the server answered 3xx; ``location`` is where it points
        └── InvalidResponseError               the provider sent malformed JSON or SSE

An error the provider reports *inside* a streamed answer (HTTP 200) is a plain :class:`APICallError`
whose ``kind`` comes from the error's code or type. Every transport failure of ``httpx`` maps to
:class:`APIConnectionError` or :class:`APITimeoutError` (never a raw ``httpx`` exception); the ``httpx``
exception stays as ``__cause__``.

``TripWire`` (in :mod:`procflow.messages`) is deliberately *not* part of this tree: it is control flow,
not a failure, and never reaches the caller of ``generate()``/``stream()``.
"""

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
    "APICallError",
    "APIConnectionError",
    "APIErrorKind",
    "APIRedirectError",
    "APIStatusError",
    "APITimeoutError",
    "BranchConflictError",
    "CacheBackendError",
    "CacheError",
    "CacheValueError",
    "ChunkTypeError",
    "ConfigurationError",
    "InvalidResponseError",
    "MemoryStorageError",
    "MissingAPIKeyError",
    "ModelError",
    "PatternTimeoutError",
    "ProcessorFailedError",
    "ProcessorResultError",
    "ProcflowError",
    "StreamHoldLimitError",
    "StreamStateError",
    "TokenizerDataError",
    "ToolArgumentsError",
    "ToolError",
    "UnknownModelError",
    "WorkflowDefinitionError",
    "WorkflowRunError",
    "format_validation_error",
    "kind_for_status",
    "parse_retry_after",
    "retryable_status",
]


class ProcflowError(Exception):
    """Root of every error procflow raises."""


class ConfigurationError(ProcflowError, ValueError):
    """Invalid arguments to a constructor or call; the message says what to change."""


class UnknownModelError(ConfigurationError):
    """A ``"provider/model"`` id names a provider procflow does not know."""


class MissingAPIKeyError(ConfigurationError):
    """A provider needs an API key and none was given; the message names the variable to set."""


class ChunkTypeError(ProcflowError, ValueError):
    """A custom chunk was given a type that does not start with ``data-`` (or no type at all)."""


class StreamStateError(ProcflowError, RuntimeError):
    """A stream was used out of order: read by a second consumer, or its result read before it ended."""


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


class ProcessorResultError(ProcflowError, TypeError):
    """A processor hook returned a value of the wrong kind."""

    def __init__(self, processor_id: str, hook: str, problem: str) -> None:
        self.processor_id = processor_id
        self.hook = hook
        self.problem = problem
        super().__init__(f"processor {processor_id!r}: {hook}() {problem}")


class ProcessorFailedError(ProcflowError, RuntimeError):
    """A processor hook raised: what it was checking was withheld and the call stopped (fail closed).

    The message names the processor, the hook and the exception's type only — an exception's text may
    quote the content the processor was looking at. The exception itself is :attr:`original`; it is
    deliberately not chained as ``__cause__``, so a logged traceback does not print it.

    Attributes:
        processor_id: The processor that raised.
        hook: The hook that raised (``process_output_stream``, ``flush_output_stream``, ...).
        error_type: The exception's class name.
        original: The exception the hook raised.
    """

    def __init__(self, processor_id: str, hook: str, original: BaseException) -> None:
        self.processor_id = processor_id
        self.hook = hook
        self.error_type = type(original).__name__
        self.original = original
        super().__init__(
            f"processor {processor_id!r} raised {self.error_type} in {hook}(); what it was checking was "
            "withheld and the call stopped (fail closed). Fix the processor (the exception is "
            "error.original), or set `fail_open = True` on it to let content pass it unchanged when it fails"
        )


class WorkflowDefinitionError(ProcflowError, ValueError):
    """A workflow cannot be compiled; ``step_id`` names the offending step when there is one."""

    def __init__(self, message: str, *, step_id: str | None = None, fix: str | None = None) -> None:
        self.step_id = step_id
        self.fix = fix
        text = f"step {step_id!r}: {message}" if step_id else message
        super().__init__(f"{text}. Fix: {fix}" if fix else text)


class WorkflowRunError(ProcflowError):
    """A workflow step failed while running."""

    def __init__(self, message: str, *, step_id: str | None = None) -> None:
        self.step_id = step_id
        super().__init__(f"step {step_id!r}: {message}" if step_id else message)


class BranchConflictError(WorkflowRunError):
    """Two parallel branches changed the same message part differently."""


class ToolError(ProcflowError):
    """A tool could not be called."""

    def __init__(self, message: str, *, tool_name: str) -> None:
        self.tool_name = tool_name
        super().__init__(f"tool {tool_name!r}: {message}")


class ToolArgumentsError(ToolError, ValueError):
    """The arguments the model gave do not validate against the tool's input schema."""


class PatternTimeoutError(ProcflowError, TimeoutError):
    """A regex rule ran longer than its timeout on some input."""

    def __init__(self, rule: str, timeout: float) -> None:
        self.rule = rule
        self.timeout = timeout
        super().__init__(
            f"regex rule {rule!r} ran longer than its {timeout}s timeout; simplify the pattern (avoid nested "
            "quantifiers such as (a+)+) or raise the rule's timeout"
        )


class MemoryStorageError(ProcflowError, RuntimeError):
    """A memory storage failed to read or write; a failed save leaves none of the turn behind.

    Attributes:
        backend: ``"sqlite"``, ``"postgres"`` or the storage's own name.
        operation: What was being done (``"save_turn"``, ``"get_messages"``, …).
    """

    def __init__(self, message: str, *, backend: str, operation: str) -> None:
        self.backend = backend
        self.operation = operation
        super().__init__(f"memory storage ({backend}) failed to {operation}: {message}")


class StreamHoldLimitError(ProcflowError, BufferError):
    """A match in progress in a stream grew past the redactor's hold limit (it fails closed)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(
            f"a possible match in the stream is longer than the hold limit of {limit} characters, so the "
            "text could not be checked; raise stream_hold_limit if such long matches are expected"
        )


class TokenizerDataError(ProcflowError, RuntimeError):
    """The tokenizer's data cannot be loaded offline; the message says which package to (re)install."""


class CacheError(ProcflowError):
    """A server cache or counter store failed; callers such as ``ResponseCache`` treat it as a miss."""


class CacheBackendError(CacheError, ConnectionError):
    """The cache backend could not answer in time (down, slow, or an error reply).

    Attributes:
        backend: The backend's name (``"redis"``).
        operation: What was attempted (``"get"``, ``"set"``, ``"incr"``…).
    """

    def __init__(self, backend: str, operation: str, reason: str) -> None:
        self.backend = backend
        self.operation = operation
        self.reason = reason
        super().__init__(
            f"{backend} cache {operation} failed ({reason}); check that the server is reachable, or raise "
            "the cache's timeout if it is merely slow"
        )


class CacheValueError(CacheError, TypeError):
    """A value cannot be stored: caches hold JSON (or msgpack) data only, never pickled objects."""


class ModelError(ProcflowError):
    """A model call failed."""


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


class APICallError(ModelError):
    """A provider call failed: in transport, with an HTTP error status, or by an error inside the stream.

    Decide what to do by class (:class:`APIConnectionError`, :class:`APITimeoutError`,
    :class:`APIStatusError`) or by :attr:`kind`, never by the message text.

    Attributes:
        kind: Why the call failed (an :data:`APIErrorKind`), set where the failure was seen.
        status_code: HTTP status, or ``None`` when no error status was received (transport failures,
            errors reported inside a 200 stream).
        response_body: The raw response body, when one was received.
        response_headers: Response headers (``Retry-After`` among them), lower-cased keys.
        is_retryable: Whether retrying the same request may succeed (by default: ``kind`` is transient).
        retry_after: Seconds the provider asked to wait before a retry, when it said.
        error_type: The provider's error type (``rate_limit_error``, ``invalid_request_error``, …).
        error_code: The provider's error code, when it sends one.
        url: The request URL.
        provider: The provider name.
    """

    _default_kind: APIErrorKind | None = None

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        response_body: str | None = None,
        response_headers: Mapping[str, str] | None = None,
        is_retryable: bool | None = None,
        kind: APIErrorKind | None = None,
        retry_after: float | None = None,
        error_type: str | None = None,
        error_code: str | None = None,
        url: str | None = None,
        provider: str | None = None,
        data: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.response_body = response_body
        self.response_headers = {k.lower(): v for k, v in (response_headers or {}).items()}
        found = kind or self._default_kind or kind_for_status(status_code, error_type)
        if found is None:  # nothing known: a failure without an answer, unless told it is final
            found = "connection" if status_code is None and is_retryable is not False else "rejected"
        self.kind: APIErrorKind = found
        self.is_retryable = found in TRANSIENT_KINDS if is_retryable is None else is_retryable
        self.retry_after = parse_retry_after(self.response_headers) if retry_after is None else retry_after
        self.error_type = error_type
        self.error_code = error_code
        self.url = url
        self.provider = provider
        self.data = data

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.message!r}, kind={self.kind!r}, status_code={self.status_code}, "
            f"is_retryable={self.is_retryable}, error_type={self.error_type!r})"
        )


class APIConnectionError(APICallError, ConnectionError):
    """No (complete) answer: the connection was refused, reset or dropped, or the stream was cut short."""

    _default_kind: APIErrorKind | None = "connection"


class APITimeoutError(APIConnectionError, TimeoutError):
    """The server did not answer in time: a connect or read timeout, or the call's ``deadline`` passed."""

    _default_kind: APIErrorKind | None = "timeout"


class APIStatusError(APICallError):
    """The server answered with an HTTP error status; :attr:`status_code` is always set."""

    status_code: int


class APIRedirectError(APIStatusError):
    """The server answered with a redirect (3xx), which procflow does not follow (the API key would go
    along); :attr:`location` is where it points — set the model's ``base_url`` to it if it is right."""

    def __init__(self, message: str, *, location: str | None = None, **fields: Any) -> None:
        super().__init__(message, **fields)
        self.location = location


class InvalidResponseError(ModelError):
    """The provider answered with malformed JSON or SSE."""

    def __init__(self, message: str, *, provider: str | None = None, body: str | None = None) -> None:
        self.provider = provider
        self.body = body
        super().__init__(message)

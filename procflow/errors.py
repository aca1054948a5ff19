"""The procflow exception tree.

::

    ProcflowError
    ├── ConfigurationError (ValueError)      bad constructor or call arguments
    │   ├── UnknownModelError                a model id names no known provider
    │   └── MissingAPIKeyError               a provider needs a key that is not set
    ├── ProcessorResultError (TypeError)     a processor hook returned something the runner cannot use
    ├── WorkflowDefinitionError (ValueError) a workflow cannot be compiled (says how to fix it)
    ├── WorkflowRunError                     a workflow step failed at run time
    │   └── BranchConflictError              merge_branches() found two different edits of one part
    ├── ToolError                            a tool could not be called
    │   └── ToolArgumentsError (ValueError)  the model's arguments do not fit the tool's schema
    ├── PatternTimeoutError (TimeoutError)   a user regex ran past its timeout
    ├── StreamHoldLimitError (BufferError)   a stream redactor would have to hold more text than allowed
    ├── TokenizerDataError (RuntimeError)    the offline tokenizer data is missing or not the expected file
    └── ModelError                           a model call failed
        ├── APICallError                     transport or HTTP failure, with status, body and retryability
        └── InvalidResponseError             the provider sent malformed JSON or SSE

``TripWire`` (in :mod:`procflow.messages`) is deliberately *not* part of this tree: it is control flow,
not a failure, and never reaches the caller of ``generate()``/``stream()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "APICallError",
    "BranchConflictError",
    "ConfigurationError",
    "InvalidResponseError",
    "MissingAPIKeyError",
    "ModelError",
    "PatternTimeoutError",
    "ProcessorResultError",
    "ProcflowError",
    "StreamHoldLimitError",
    "TokenizerDataError",
    "ToolArgumentsError",
    "ToolError",
    "UnknownModelError",
    "WorkflowDefinitionError",
    "WorkflowRunError",
]


class ProcflowError(Exception):
    """Root of every error procflow raises."""


class ConfigurationError(ProcflowError, ValueError):
    """Invalid arguments to a constructor or call; the message says what to change."""


class UnknownModelError(ConfigurationError):
    """A ``"provider/model"`` id names a provider procflow does not know."""


class MissingAPIKeyError(ConfigurationError):
    """A provider needs an API key and none was given; the message names the variable to set."""


class ProcessorResultError(ProcflowError, TypeError):
    """A processor hook returned a value of the wrong kind."""

    def __init__(self, processor_id: str, hook: str, problem: str) -> None:
        self.processor_id = processor_id
        self.hook = hook
        self.problem = problem
        super().__init__(f"processor {processor_id!r}: {hook}() {problem}")


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


class ModelError(ProcflowError):
    """A model call failed."""


class APICallError(ModelError):
    """A provider call failed in transport or with an HTTP error status.

    Attributes:
        status_code: HTTP status, or ``None`` for transport failures (connection reset, timeout).
        response_body: The raw response body, when one was received.
        response_headers: Response headers (``Retry-After`` among them), lower-cased keys.
        is_retryable: Whether retrying the same request may succeed (429, 408, 409, 5xx, transport).
        error_type: The provider's error type (``rate_limit_error``, ``invalid_request_error``, …).
        error_code: The provider's error code, when it sends one.
        url: The request URL.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        response_body: str | None = None,
        response_headers: Mapping[str, str] | None = None,
        is_retryable: bool | None = None,
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
        if is_retryable is None:
            is_retryable = status_code is None or status_code in (408, 409, 429) or status_code >= 500
        self.is_retryable = is_retryable
        self.error_type = error_type
        self.error_code = error_code
        self.url = url
        self.provider = provider
        self.data = data

    @property
    def retry_after(self) -> float | None:
        """Seconds the provider asked to wait (``Retry-After`` / ``retry-after-ms``), when it said."""
        ms = self.response_headers.get("retry-after-ms")
        if ms is not None:
            try:
                return max(0.0, float(ms) / 1000.0)
            except ValueError:
                pass
        value = self.response_headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            return None

    def __repr__(self) -> str:
        return (
            f"APICallError({self.message!r}, status_code={self.status_code}, "
            f"is_retryable={self.is_retryable}, error_type={self.error_type!r})"
        )


class InvalidResponseError(ModelError):
    """The provider answered with malformed JSON or SSE."""

    def __init__(self, message: str, *, provider: str | None = None, body: str | None = None) -> None:
        self.provider = provider
        self.body = body
        super().__init__(message)

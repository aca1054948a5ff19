"""Mapping transport failures, HTTP error responses and stream errors to procflow errors."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import httpx

from procflow.errors import APICallError, InvalidResponseError

T = TypeVar("T")

__all__ = [
    "api_error_from_body",
    "api_error_from_response",
    "api_error_from_transport",
    "parse_args",
    "parse_json",
    "read_stream_event",
    "status_for_error_type",
]

_MAX_BODY_IN_MESSAGE = 300

# Anthropic (and some gateways) name errors by type only; this gives them an HTTP-like status so
# retryability is judged the same way for errors sent inside a 200 stream.
_STATUS_BY_ERROR_TYPE = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "server_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}

_HINTS = {
    401: "check the API key{env}",
    403: "the API key is not allowed to use this model or endpoint",
    404: "check the model id and the base URL",
    413: "the request is too large; send fewer or smaller messages",
    429: "rate limited; retry later",
}


def status_for_error_type(error_type: str | None) -> int | None:
    """Return the HTTP status an error type usually comes with, if known."""
    return _STATUS_BY_ERROR_TYPE.get(error_type or "")


def _shorten(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _MAX_BODY_IN_MESSAGE else text[:_MAX_BODY_IN_MESSAGE] + "…"


def _error_fields(body: Any) -> tuple[str | None, str | None, str | None]:
    """Return ``(message, type, code)`` from the error bodies providers send."""
    if not isinstance(body, dict):
        return None, None, None
    error = body.get("error", body)
    if isinstance(error, str):
        return error, None, None
    if not isinstance(error, dict):
        return None, None, None
    message = error.get("message") or body.get("detail") or body.get("message")
    kind = error.get("type")
    code = error.get("code")
    return (
        str(message) if message is not None else None,
        str(kind) if kind is not None else None,
        str(code) if code is not None else None,
    )


def api_error_from_response(
    response: httpx.Response, body: str, *, provider: str, key_env: str | None = None
) -> APICallError:
    """Build the :class:`APICallError` for an HTTP error ``response`` whose body text is ``body``."""
    try:
        parsed: Any = json.loads(body) if body else None
    except ValueError:
        parsed = None
    message, kind, code = _error_fields(parsed)
    status = response.status_code
    detail = message or _shorten(body) or response.reason_phrase or "no details"
    text = f"{provider} API returned HTTP {status}: {detail}"
    hint = _HINTS.get(status)
    if hint:
        text += f" ({hint.format(env=f' ({key_env})' if key_env else '')})"
    headers = dict(response.headers)
    if status == 429 and "retry-after" in headers:
        text += f"; the provider asked to wait {headers['retry-after']}s"
    return APICallError(
        text,
        status_code=status,
        response_body=body,
        response_headers=headers,
        error_type=kind,
        error_code=code,
        url=str(response.request.url),
        provider=provider,
        data=parsed,
    )


def api_error_from_body(body: Mapping[str, Any], *, provider: str, url: str) -> APICallError:
    """Build the :class:`APICallError` for an error the provider sent inside a stream."""
    message, kind, code = _error_fields(dict(body))
    status = status_for_error_type(kind)
    retryable = status is None or status in (408, 409, 429) or status >= 500
    return APICallError(
        f"{provider} stream reported an error: {message or 'no details'}",
        status_code=None,
        response_body=json.dumps(body),
        is_retryable=retryable,
        error_type=kind,
        error_code=code,
        url=url,
        provider=provider,
        data=dict(body),
    )


def api_error_from_transport(exc: httpx.HTTPError, *, provider: str, url: str) -> APICallError:
    """Build the :class:`APICallError` for a transport failure (timeout, refused or dropped connection)."""
    reason = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        text = f"{provider} request to {url} timed out ({type(exc).__name__}: {reason})"
    elif isinstance(exc, httpx.ConnectError):
        text = (
            f"could not connect to {provider} at {url}: {reason}; is the server running, the base URL right?"
        )
    elif isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError):
        text = f"{provider} connection broke while reading the response from {url}: {reason}"
    else:
        text = f"{provider} request to {url} failed: {type(exc).__name__}: {reason}"
    return APICallError(text, status_code=None, url=url, provider=provider)


def parse_json(text: str | bytes, *, provider: str, what: str) -> Any:
    """Parse JSON the provider sent, or raise :class:`InvalidResponseError` saying what was malformed."""
    try:
        return json.loads(text)
    except ValueError as exc:
        snippet = _shorten(text.decode("utf-8", "replace") if isinstance(text, bytes) else text)
        raise InvalidResponseError(
            f"{provider} sent malformed JSON in {what}: {exc}; received {snippet!r}",
            provider=provider,
            body=text.decode("utf-8", "replace") if isinstance(text, bytes) else text,
        ) from exc


def read_stream_event(data: str, read: Callable[[Any], T], *, provider: str) -> T:
    """Parse one SSE ``data`` field and hand it to ``read``; malformed JSON or missing fields raise
    :class:`InvalidResponseError` naming the provider and quoting what arrived."""
    event = parse_json(data, provider=provider, what="a stream event")
    try:
        return read(event)
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
        raise InvalidResponseError(
            f"{provider} sent a stream event without the expected fields ({type(exc).__name__}: {exc}): "
            f"{_shorten(data)!r}",
            provider=provider,
            body=data,
        ) from exc


def parse_args(text: str, *, provider: str, tool_name: str) -> dict[str, Any]:
    """Parse a tool call's JSON arguments; empty text means no arguments."""
    if not text.strip():
        return {}
    try:
        args = json.loads(text)
    except ValueError as exc:
        raise InvalidResponseError(
            f"{provider}: the model called tool {tool_name!r} with arguments that are not valid JSON: "
            f"{text[:200]!r}",
            provider=provider,
            body=text,
        ) from exc
    if not isinstance(args, dict):
        raise InvalidResponseError(
            f"{provider}: the model called tool {tool_name!r} with arguments that are not a JSON object: "
            f"{text[:200]!r}",
            provider=provider,
            body=text,
        )
    return args

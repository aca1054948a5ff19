"""Mapping transport failures, HTTP error responses and stream errors to procflow errors.

Every provider error's text is built by :func:`describe_error`, and every kind is decided here, at the
boundary, so the processors that react to errors read ``kind`` and never the text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import httpx

from procflow._error_rules import kind_for_status, parse_retry_after
from procflow._logging import log
from procflow.errors import (
    APICallError,
    APIConnectionError,
    APIErrorKind,
    APIRedirectError,
    APIStatusError,
    APITimeoutError,
    InvalidResponseError,
)

T = TypeVar("T")

__all__ = [
    "api_error_from_body",
    "api_error_from_response",
    "api_error_from_transport",
    "describe_error",
    "is_error_body",
    "parse_args",
    "parse_json",
    "parse_partial_args",
    "read_stream_event",
    "status_for_error_type",
]

_MAX_BODY_IN_MESSAGE = 300

# Anthropic (and some gateways) name errors by type only; this gives them an HTTP-like status so
# they are judged the same way as HTTP errors, with the same hints.
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

_NO_VALUE = frozenset({"", "none", "null"})

# What each httpx transport failure means; the nearest listed class in the exception's MRO wins.
_TRANSPORT: dict[type[httpx.TransportError], tuple[type[APIConnectionError], APIErrorKind, str]] = {
    httpx.TimeoutException: (APITimeoutError, "timeout", "timed out"),
    httpx.ConnectTimeout: (APITimeoutError, "timeout", "timed out while connecting"),
    httpx.PoolTimeout: (APITimeoutError, "timeout", "timed out waiting for a free connection of the client"),
    httpx.NetworkError: (APIConnectionError, "connection", "lost the connection"),
    httpx.ConnectError: (
        APIConnectionError,
        "connection",
        "could not connect; is the server running, the base URL right?",
    ),
    httpx.RemoteProtocolError: (
        APIConnectionError,
        "connection",
        "connection broke while reading the response",
    ),
    httpx.ProxyError: (APIConnectionError, "connection", "the proxy did not forward the request"),
    httpx.LocalProtocolError: (
        APIConnectionError,
        "rejected",
        "the request is not valid HTTP (check the header values)",
    ),
    httpx.UnsupportedProtocol: (
        APIConnectionError,
        "rejected",
        "the URL is not http(s); check the base URL",
    ),
}


def status_for_error_type(error_type: str | None) -> int | None:
    """Return the HTTP status an error type usually comes with, if known."""
    return _STATUS_BY_ERROR_TYPE.get(error_type or "")


def describe_error(
    provider: str, what: str, detail: str | None = None, *, hint: str | None = None, wait: float | None = None
) -> str:
    """The one text of provider errors: ``"{provider} {what}: {detail} ({hint}); the provider asked to
    wait {wait} s"``, each part only when known."""
    text = f"{provider} {what}"
    if detail:
        text += f": {detail}"
    if hint:
        text += f" ({hint})"
    if wait is not None:
        text += f"; the provider asked to wait {wait:.3g} s"
    return text


def _shorten(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _MAX_BODY_IN_MESSAGE else text[:_MAX_BODY_IN_MESSAGE] + "…"


def _field(value: Any) -> str | None:
    if value is None or isinstance(value, dict | list):
        return None
    text = str(value)
    return None if text.strip().lower() in _NO_VALUE else text


def _error_fields(body: Any) -> tuple[str | None, str | None, str | None]:
    """Return ``(message, type, code)`` from the error bodies providers and gateways send."""
    if not isinstance(body, dict):
        return None, None, None
    error = body.get("error", body)
    if isinstance(error, str):
        return error, None, None
    if not isinstance(error, dict):
        return None, None, None
    message = error.get("message") or body.get("detail") or body.get("message")
    return _field(message), _field(error.get("type")), _field(error.get("code"))


def _status_from_code(code: str | None) -> int | None:
    if code is not None and code.isdigit() and 100 <= int(code) <= 599:
        return int(code)
    return None


def is_error_body(data: Any) -> bool:
    """Whether a 200 answer (or stream event) is an error object rather than an answer."""
    if not isinstance(data, dict) or not data.get("error"):
        return False
    return not data.get("choices") and "content" not in data


def api_error_from_response(
    response: httpx.Response, body: str, *, provider: str, key_env: str | None = None
) -> APIStatusError:
    """Build the error for an HTTP error (or redirect) ``response`` whose body text is ``body``."""
    headers = dict(response.headers)
    status = response.status_code
    url = str(response.request.url)
    if response.is_redirect or 300 <= status < 400:
        location = response.headers.get("location")
        where = f"to {location}" if location else "without a Location header"
        return APIRedirectError(
            describe_error(
                provider,
                f"redirected the request to {url} (HTTP {status}) {where}",
                hint="procflow does not follow redirects, so the API key never goes elsewhere; "
                "set base_url to the new address if it is right",
            ),
            location=location,
            status_code=status,
            response_body=body,
            response_headers=headers,
            url=url,
            provider=provider,
        )
    try:
        parsed: Any = json.loads(body) if body else None
    except ValueError:
        parsed = None
    message, kind, code = _error_fields(parsed)
    hint = _HINTS.get(status)
    wait = parse_retry_after({k.lower(): v for k, v in headers.items()})
    text = describe_error(
        provider,
        f"API returned HTTP {status}",
        message or _shorten(body) or response.reason_phrase or "no details",
        hint=hint.format(env=f" ({key_env})" if key_env else "") if hint else None,
        wait=wait,
    )
    return APIStatusError(
        text,
        status_code=status,
        response_body=body,
        response_headers=headers,
        retry_after=wait,
        error_type=kind,
        error_code=code,
        url=url,
        provider=provider,
        data=parsed,
    )


def api_error_from_body(body: Mapping[str, Any], *, provider: str, url: str) -> APICallError:
    """Build the error for an error object the provider sent instead of an answer (inside a stream or a
    200 body), classified by its code (``"400"``) or type (``overloaded_error``)."""
    message, kind, code = _error_fields(dict(body))
    status = _status_from_code(code) or status_for_error_type(kind)
    found = kind_for_status(status, kind) or kind_for_status(None, code) or "server-error"
    hint = _HINTS.get(status or 0)
    return APICallError(
        describe_error(
            provider,
            "reported an error instead of an answer",
            message or "no details",
            hint=hint.format(env="") if hint else None,
        ),
        kind=found,
        response_body=json.dumps(body),
        error_type=kind,
        error_code=code,
        url=url,
        provider=provider,
        data=dict(body),
    )


def api_error_from_transport(exc: httpx.HTTPError, *, provider: str, url: str) -> APICallError:
    """Build the error for a transport failure (timeout, refused or dropped connection, bad request)."""
    reason = str(exc) or type(exc).__name__
    for cls in type(exc).__mro__:
        entry = _TRANSPORT.get(cls)
        if entry is not None:
            error_class, kind, what = entry
            detail = f"{what} ({type(exc).__name__}: {reason})"
            return error_class(
                describe_error(provider, f"request to {url}", detail), kind=kind, url=url, provider=provider
            )
    detail = f"failed ({type(exc).__name__}: {reason})"
    return APIConnectionError(
        describe_error(provider, f"request to {url}", detail), url=url, provider=provider
    )


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
    return read_parsed_event(
        parse_json(data, provider=provider, what="a stream event"), data, read, provider=provider
    )


def read_parsed_event(event: Any, data: str, read: Callable[[Any], T], *, provider: str) -> T:
    """Hand ``event``, parsed from the SSE ``data`` field ``data``, to ``read``; missing fields raise
    :class:`InvalidResponseError` naming the provider and quoting what arrived."""
    try:
        return read(event)
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
        raise InvalidResponseError(
            f"{provider} sent a stream event without the expected fields ({type(exc).__name__}: {exc}): "
            f"{_shorten(data)!r}",
            provider=provider,
            body=data,
        ) from exc


def parse_partial_args(text: str, *, provider: str, tool_name: str) -> dict[str, Any] | None:
    """Parse the arguments of a tool call the model may have been cut off in (it hit its token limit):
    ``None`` (and a debug log event) when they are incomplete, so the call is dropped, not executed."""
    try:
        return parse_args(text, provider=provider, tool_name=tool_name)
    except InvalidResponseError:
        log.debug("partial_tool_call_dropped", provider=provider, tool_name=tool_name, chars=len(text))
        return None


def parse_args(text: str, *, provider: str, tool_name: str) -> dict[str, Any]:
    """Parse a tool call's JSON arguments; empty text means no arguments."""
    if not text.strip():
        return {}
    try:
        args = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidResponseError(
            f"{provider}: the model called tool {tool_name!r} with arguments that are not valid JSON "
            f"({exc.msg} at character {exc.pos} of {len(text)})",
            provider=provider,
            body=text,
        ) from exc
    if not isinstance(args, dict):
        raise InvalidResponseError(
            f"{provider}: the model called tool {tool_name!r} with arguments that are not a JSON object "
            f"(a JSON {type(args).__name__})",
            provider=provider,
            body=text,
        )
    return args

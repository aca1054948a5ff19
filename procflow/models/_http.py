"""HTTP plumbing shared by the providers: client handling, JSON calls, SSE streams, error mapping."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from httpx_sse import EventSource, ServerSentEvent, SSEError

from procflow.errors import ConfigurationError, InvalidResponseError
from procflow.models._errors import api_error_from_response, api_error_from_transport, parse_json

__all__ = ["DEFAULT_TIMEOUT", "HTTPConfig", "check_base_url", "open_sse", "post_json"]

DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=10.0)
"""Ten minutes to answer (long generations), ten seconds to connect."""


def check_base_url(base_url: str, *, provider: str) -> str:
    """Return ``base_url`` without a trailing slash, or raise a clear error when it is not an HTTP URL."""
    try:
        url = httpx.URL(base_url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise ConfigurationError(f"{provider}: base_url {base_url!r} is not a valid URL: {exc}") from exc
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigurationError(
            f"{provider}: base_url {base_url!r} must be an http(s) URL such as 'http://localhost:11434/v1'"
        )
    return base_url.rstrip("/")


@dataclass(frozen=True, slots=True)
class HTTPConfig:
    """How one provider model reaches its server."""

    provider: str
    base_url: str
    headers: Mapping[str, str]
    timeout: httpx.Timeout | float | None
    client: httpx.AsyncClient | None = None
    transport: httpx.AsyncBaseTransport | None = None
    key_env: str | None = None

    def url(self, path: str) -> str:
        """Return the full URL of an endpoint ``path`` (``"/chat/completions"``)."""
        return self.base_url + path


@asynccontextmanager
async def _client(config: HTTPConfig) -> AsyncIterator[httpx.AsyncClient]:
    # An injected client is shared and owned by the caller. Otherwise a client lives for one call, so
    # nothing stays bound to an event loop or leaks sockets when the model object is dropped.
    if config.client is not None:
        yield config.client
        return
    async with httpx.AsyncClient(transport=config.transport, timeout=config.timeout) as client:
        yield client


def _headers(config: HTTPConfig, extra: Mapping[str, str] | None) -> dict[str, str]:
    headers = dict(config.headers)
    if extra:
        headers.update(extra)
    return headers


async def _raise_for_status(response: httpx.Response, config: HTTPConfig) -> None:
    if response.is_error:
        body = (await response.aread()).decode("utf-8", "replace")
        raise api_error_from_response(response, body, provider=config.provider, key_env=config.key_env)


async def post_json(
    config: HTTPConfig, path: str, body: dict[str, Any], *, headers: Mapping[str, str] | None = None
) -> Any:
    """POST ``body`` as JSON and return the parsed JSON answer.

    Raises:
        APICallError: transport failure or HTTP error status.
        InvalidResponseError: the answer is not JSON.
    """
    url = config.url(path)
    try:
        async with _client(config) as client:
            response = await client.post(
                url, json=body, headers=_headers(config, headers), timeout=config.timeout
            )
            await _raise_for_status(response, config)
            content = response.content
    except httpx.HTTPError as exc:
        raise api_error_from_transport(exc, provider=config.provider, url=url) from exc
    return parse_json(content, provider=config.provider, what="its response body")


@asynccontextmanager
async def open_sse(
    config: HTTPConfig, path: str, body: dict[str, Any], *, headers: Mapping[str, str] | None = None
) -> AsyncIterator[AsyncIterator[ServerSentEvent]]:
    """POST ``body`` and give the server-sent events of the answer.

    Failures while connecting *and while the caller iterates the events* are mapped: transport errors
    and HTTP error statuses become :class:`APICallError`, a non-SSE answer :class:`InvalidResponseError`.
    """
    url = config.url(path)
    request_headers = _headers(config, headers)
    request_headers["Accept"] = "text/event-stream"
    try:
        async with (
            _client(config) as client,
            client.stream(
                "POST", url, json=body, headers=request_headers, timeout=config.timeout
            ) as response,
        ):
            await _raise_for_status(response, config)
            # Closed here, not left to the garbage collector (trio warns about a pending generator).
            async with aclosing(EventSource(response).aiter_sse()) as events:
                yield events
    except SSEError as exc:
        raise InvalidResponseError(
            f"{config.provider} answered a streaming request to {url} without server-sent events: {exc}",
            provider=config.provider,
        ) from exc
    except httpx.HTTPError as exc:
        raise api_error_from_transport(exc, provider=config.provider, url=url) from exc

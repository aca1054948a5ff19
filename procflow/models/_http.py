"""HTTP plumbing shared by the providers: JSON calls, SSE streams, the call deadline, error mapping."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, aclosing, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx

from procflow.errors import APITimeoutError, ConfigurationError, InvalidResponseError
from procflow.models._client import ClientSlot
from procflow.models._errors import (
    api_error_from_body,
    api_error_from_response,
    api_error_from_transport,
    describe_error,
    is_error_body,
    parse_json,
)
from procflow.models._sse import check_event_stream, sse_data

__all__ = ["DEFAULT_TIMEOUT", "HTTPConfig", "check_base_url", "check_deadline", "open_sse", "post_json"]

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


def check_deadline(deadline: float | None, *, provider: str) -> float | None:
    """Return ``deadline`` if it is ``None`` or a positive number of seconds, else raise."""
    if deadline is not None and not deadline > 0:
        raise ConfigurationError(
            f"{provider}: deadline must be a positive number of seconds or None (no overall limit), "
            f"got {deadline!r}"
        )
    return deadline


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
    deadline: float | None = None
    """Seconds one whole call may take, from sending the request to the last event."""
    clients: ClientSlot = field(init=False, repr=False, compare=False)
    """The model's own client (or the injected one), shared by its calls."""

    def __post_init__(self) -> None:
        slot = ClientSlot(client=self.client, transport=self.transport, timeout=self.timeout)
        object.__setattr__(self, "clients", slot)

    def url(self, path: str) -> str:
        """Return the full URL of an endpoint ``path`` (``"/chat/completions"``)."""
        return self.base_url + path


def _undecodable(exc: httpx.DecodingError, config: HTTPConfig, url: str) -> InvalidResponseError:
    return InvalidResponseError(
        f"{config.provider} sent a response from {url} that cannot be decoded ({exc}); check the server's "
        "Content-Encoding",
        provider=config.provider,
    )


def _deadline_at(config: HTTPConfig) -> float | None:
    return None if config.deadline is None else anyio.current_time() + config.deadline


def _remaining(deadline_at: float | None) -> float | None:
    return None if deadline_at is None else max(0.0, deadline_at - anyio.current_time())


def _deadline_error(config: HTTPConfig, url: str) -> APITimeoutError:
    return APITimeoutError(
        describe_error(
            config.provider,
            f"call to {url}",
            f"did not finish within its deadline of {config.deadline:g} s",
            hint="raise the model's deadline= option, or set it to None for no overall limit",
        ),
        url=url,
        provider=config.provider,
    )


async def _until(
    events: AsyncIterator[str], deadline_at: float, config: HTTPConfig, url: str
) -> AsyncIterator[str]:
    # Each wait for an event is bounded by what is left of the deadline; the scope never spans a yield.
    while True:
        with anyio.move_on_after(_remaining(deadline_at)) as scope:
            try:
                event = await anext(events)
            except StopAsyncIteration:
                return
        if scope.cancelled_caught:
            raise _deadline_error(config, url)
        yield event


def _headers(config: HTTPConfig, extra: Mapping[str, str] | None) -> dict[str, str]:
    headers = dict(config.headers)
    if extra:
        headers.update(extra)
    return headers


async def _raise_for_status(response: httpx.Response, config: HTTPConfig) -> None:
    if response.is_error or response.is_redirect:
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
        with anyio.move_on_after(config.deadline) as scope:
            client = await config.clients.get()
            response = await client.post(
                url, json=body, headers=_headers(config, headers), timeout=config.timeout
            )
            await _raise_for_status(response, config)
            content = response.content
        if scope.cancelled_caught:
            raise _deadline_error(config, url)
    except httpx.DecodingError as exc:
        raise _undecodable(exc, config, url) from exc
    except httpx.HTTPError as exc:
        raise api_error_from_transport(exc, provider=config.provider, url=url) from exc
    data = parse_json(content, provider=config.provider, what="its response body")
    if is_error_body(data):
        raise api_error_from_body(data, provider=config.provider, url=url)
    return data


@asynccontextmanager
async def open_sse(
    config: HTTPConfig, path: str, body: dict[str, Any], *, headers: Mapping[str, str] | None = None
) -> AsyncIterator[AsyncIterator[str]]:
    """POST ``body`` and give the ``data`` of each server-sent event of the answer.

    Failures while connecting *and while the caller iterates the events* are mapped: transport errors
    and HTTP error statuses become :class:`APICallError`, a non-SSE answer :class:`InvalidResponseError`,
    a passed ``deadline`` :class:`APITimeoutError`. Events without data lines (a bare ``event: ping``,
    a ``retry:``- or ``id:``-only block) are not given; an empty ``data:`` gives ``""``, which the
    stream readers skip.
    """
    url = config.url(path)
    request_headers = _headers(config, headers)
    request_headers["Accept"] = "text/event-stream"
    deadline_at = _deadline_at(config)
    try:
        async with AsyncExitStack() as stack:
            client = await config.clients.get()
            with anyio.move_on_after(config.deadline) as scope:
                response = await stack.enter_async_context(
                    client.stream("POST", url, json=body, headers=request_headers, timeout=config.timeout)
                )
                await _raise_for_status(response, config)
            if scope.cancelled_caught:
                raise _deadline_error(config, url)
            check_event_stream(response, provider=config.provider, url=url)
            # Closed here, not left to the garbage collector (trio warns about a pending generator).
            events = await stack.enter_async_context(aclosing(sse_data(response)))
            yield events if deadline_at is None else _until(events, deadline_at, config, url)
    except httpx.DecodingError as exc:
        raise _undecodable(exc, config, url) from exc
    except httpx.HTTPError as exc:
        raise api_error_from_transport(exc, provider=config.provider, url=url) from exc

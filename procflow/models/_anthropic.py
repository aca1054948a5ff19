"""Claude models over the Anthropic Messages API."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from types import TracebackType
from typing import Self

import httpx

from procflow._messages.chunk import Chunk
from procflow.models._anthropic_stream import AnthropicStreamState
from procflow.models._anthropic_wire import build_body, parse_response
from procflow.models._base import ModelRequest, ModelResponse
from procflow.models._http import (
    DEFAULT_TIMEOUT,
    HTTPConfig,
    check_base_url,
    check_deadline,
    open_sse,
    post_json,
)

__all__ = ["ANTHROPIC_BASE_URL", "ANTHROPIC_VERSION", "AnthropicModel"]

ANTHROPIC_BASE_URL = "https://api.anthropic.com/v1"
ANTHROPIC_VERSION = "2023-06-01"

_PATH = "/messages"


class AnthropicModel:
    """A Claude model over the Anthropic Messages API.

    System messages become the top-level ``system`` prompt, tool calls ``tool_use`` blocks and tool
    results ``tool_result`` blocks in user turns; thinking blocks stream as reasoning (their signature
    too, so they can be replayed). Enable extended thinking with
    ``provider_options={"anthropic": {"thinking": {"type": "enabled", "budget_tokens": 2048}}}``: the
    ``"anthropic"`` options are merged into the request body.

    Args:
        model_id: The model name, e.g. ``"claude-sonnet-4-5"``.
        api_key: Sent as ``x-api-key``. This class does not read environment variables:
            :func:`~procflow.models.resolve_model` does (``ANTHROPIC_API_KEY``).
        base_url: The API root including ``/v1``; requests go to ``{base_url}/messages``.
        headers: Extra headers sent with every request (``anthropic-beta``, …).
        timeout: Seconds or an ``httpx.Timeout``, applied per request; for streams the read timeout
            bounds the wait for each event.
        deadline: Seconds one whole call may take, from sending the request to the stream's last event;
            past it the call raises :class:`~procflow.errors.APITimeoutError`. ``None``: no overall limit.
        client: An ``httpx.AsyncClient`` to send through, owned by the caller (never closed here). Without
            one, the model keeps its own client per event loop, reused by its calls; close it with
            ``await model.aclose()`` or ``async with model:``.
        transport: An ``httpx`` transport for the model's own client.
        default_max_tokens: ``max_tokens`` when the request sets no ``max_output_tokens`` (the API
            requires one).
    """

    def __init__(
        self,
        model_id: str,
        *,
        api_key: str | None = None,
        base_url: str = ANTHROPIC_BASE_URL,
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float | None = DEFAULT_TIMEOUT,
        client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        default_max_tokens: int = 4096,
        deadline: float | None = None,
    ) -> None:
        self._model_id = model_id
        all_headers = {"Content-Type": "application/json", "anthropic-version": ANTHROPIC_VERSION}
        if api_key:
            all_headers["x-api-key"] = api_key
        all_headers.update(headers or {})
        self._http = HTTPConfig(
            provider="anthropic",
            base_url=check_base_url(base_url, provider="anthropic"),
            headers=all_headers,
            timeout=timeout,
            client=client,
            transport=transport,
            key_env="ANTHROPIC_API_KEY",
            deadline=check_deadline(deadline, provider="anthropic"),
        )
        self._default_max_tokens = default_max_tokens

    @property
    def provider(self) -> str:
        """Always ``"anthropic"``."""
        return "anthropic"

    @property
    def model_id(self) -> str:
        """The model name."""
        return self._model_id

    @property
    def base_url(self) -> str:
        """The API root requests go to."""
        return self._http.base_url

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Return the whole answer for ``request`` (one non-streamed call)."""
        body = build_body(
            request, model_id=self._model_id, stream=False, default_max_tokens=self._default_max_tokens
        )
        data = await post_json(self._http, _PATH, body, headers=request.headers)
        return parse_response(data)

    async def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        """Stream the answer for ``request``: ``response-metadata``, text and reasoning deltas, one
        ``tool-call`` chunk per ``tool_use`` block, then one ``finish`` chunk with stop reason and usage."""
        body = build_body(
            request, model_id=self._model_id, stream=True, default_max_tokens=self._default_max_tokens
        )
        state = AnthropicStreamState(url=self._http.url(_PATH))
        async with open_sse(self._http, _PATH, body, headers=request.headers) as events:
            async for data in events:
                for chunk in state.feed(data):
                    yield chunk
            for chunk in state.end():
                yield chunk

    async def aclose(self) -> None:
        """Close the model's own HTTP client and its connections (an injected ``client`` stays open: it
        is yours). The model stays usable: a later call opens a new client."""
        await self._http.clients.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AnthropicModel({self._model_id!r}, base_url={self.base_url!r})"

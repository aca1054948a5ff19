"""Chat models behind an OpenAI-compatible Chat Completions endpoint (OpenAI, Ollama, vLLM, llama.cpp, …)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from types import TracebackType
from typing import Any, Literal, Self

import httpx

from procflow._messages.chunk import Chunk
from procflow.models._base import ModelRequest, ModelResponse
from procflow.models._http import (
    DEFAULT_TIMEOUT,
    HTTPConfig,
    check_base_url,
    check_deadline,
    open_sse,
    post_json,
)
from procflow.models._openai_stream import OpenAIStreamState
from procflow.models._openai_wire import build_body, parse_response

__all__ = ["OPENAI_BASE_URL", "OpenAICompatibleModel"]

OPENAI_BASE_URL = "https://api.openai.com/v1"

_PATH = "/chat/completions"


class OpenAICompatibleModel:
    """A chat model served over the OpenAI Chat Completions protocol.

    The same class talks to OpenAI and to every server that speaks the protocol: Ollama
    (``http://localhost:11434/v1``), vLLM (``http://localhost:8000/v1``), the llama.cpp server
    (``http://localhost:8080/v1``) and LM Studio (``http://localhost:1234/v1``). It sends function tools
    and tool choice, images (and WAV/MP3 audio, PDF data) in user messages, ``response_format`` for JSON
    output, and streams over server-sent events with tool-call arguments assembled from their deltas.

    Failures raise :class:`~procflow.errors.APICallError` (transport or HTTP status, after any chunks
    already streamed) or :class:`~procflow.errors.InvalidResponseError` (malformed JSON or SSE).

    Args:
        model_id: The server's model name, e.g. ``"gpt-5-mini"`` or ``"llama3.2"``.
        base_url: The API root including ``/v1``; requests go to ``{base_url}/chat/completions``.
        api_key: Sent as ``Authorization: Bearer …``; local servers usually need none. This class does
            not read environment variables: :func:`~procflow.models.resolve_model` does.
        provider: The provider name reported in chunks, errors and ``provider_options`` lookups.
        headers: Extra headers sent with every request (per-call ``ModelRequest.headers`` win).
        timeout: Seconds or an ``httpx.Timeout``, applied per request (also with an injected client);
            for streams the read timeout bounds the wait for each event.
        deadline: Seconds one whole call may take, from sending the request to the stream's last event
            (time the consumer spends between events included); past it the call raises
            :class:`~procflow.errors.APITimeoutError`. ``None`` (default): no overall limit, only
            ``timeout``'s per-read bound — which a server trickling one event just inside it never trips.
        client: An ``httpx.AsyncClient`` to send through; it stays owned by the caller (never closed
            here). Without one, the model keeps its own client, made on first use in an event loop and
            reused by every call in that loop (one connection for sequential calls); close it with
            ``await model.aclose()`` or ``async with model:``.
        transport: An ``httpx`` transport for the model's own client (e.g. ``httpx.MockTransport``).
        stream_usage: Ask for usage in streams (``stream_options.include_usage``).
        max_tokens_field: The body field for ``max_output_tokens``; defaults to
            ``max_completion_tokens`` for OpenAI and ``max_tokens`` for other servers.
    """

    def __init__(
        self,
        model_id: str,
        *,
        base_url: str = OPENAI_BASE_URL,
        api_key: str | None = None,
        provider: str = "openai",
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float | None = DEFAULT_TIMEOUT,
        client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        stream_usage: bool = True,
        max_tokens_field: Literal["max_tokens", "max_completion_tokens"] | None = None,
        deadline: float | None = None,
    ) -> None:
        self._model_id = model_id
        self._provider = provider
        all_headers = {"Content-Type": "application/json"}
        if api_key:
            all_headers["Authorization"] = f"Bearer {api_key}"
        all_headers.update(headers or {})
        self._http = HTTPConfig(
            provider=provider,
            base_url=check_base_url(base_url, provider=provider),
            headers=all_headers,
            timeout=timeout,
            client=client,
            transport=transport,
            key_env="OPENAI_API_KEY" if provider == "openai" else None,
            deadline=check_deadline(deadline, provider=provider),
        )
        self._stream_usage = stream_usage
        self._max_tokens_field = max_tokens_field or (
            "max_completion_tokens" if provider == "openai" else "max_tokens"
        )

    @property
    def provider(self) -> str:
        """The provider name, e.g. ``"openai"`` or ``"ollama"``."""
        return self._provider

    @property
    def model_id(self) -> str:
        """The server's model name."""
        return self._model_id

    @property
    def base_url(self) -> str:
        """The API root requests go to."""
        return self._http.base_url

    def _body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        return build_body(
            request,
            model_id=self._model_id,
            provider=self._provider,
            stream=stream,
            stream_usage=self._stream_usage,
            max_tokens_field=self._max_tokens_field,
        )

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Return the whole answer for ``request`` (one non-streamed call)."""
        data = await post_json(self._http, _PATH, self._body(request, stream=False), headers=request.headers)
        return parse_response(data, provider=self._provider)

    async def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        """Stream the answer for ``request``: ``response-metadata``, text and reasoning deltas,
        assembled ``tool-call`` chunks, then one ``finish`` chunk with the finish reason and usage."""
        body = self._body(request, stream=True)
        state = OpenAIStreamState(provider=self._provider, url=self._http.url(_PATH))
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
        name = type(self).__name__
        return f"{name}({self._model_id!r}, provider={self._provider!r}, base_url={self.base_url!r})"

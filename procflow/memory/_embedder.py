"""Embedders: the protocol semantic recall uses, and a client for OpenAI-compatible ``/v1/embeddings``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import httpx

from procflow.errors import InvalidResponseError
from procflow.models._http import DEFAULT_TIMEOUT, HTTPConfig, check_base_url, post_json

__all__ = ["Embedder", "OpenAIEmbedder"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors (one per text, in order, all of one length)."""

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts``; the result has one vector per text."""
        ...


class OpenAIEmbedder:
    """An :class:`Embedder` over the OpenAI-compatible ``POST /embeddings`` endpoint.

    OpenAI, Ollama, vLLM and llama.cpp's server speak it.

    Args:
        model: The embedding model, e.g. ``"text-embedding-3-small"`` or ``"nomic-embed-text"``.
        base_url: The API root, e.g. ``"http://localhost:11434/v1"``.
        api_key: Sent as ``Authorization: Bearer …`` when given.
        dimensions: Ask the server for vectors of this length (servers that support it).
        headers: Extra headers for every request.
        client: A shared ``httpx.AsyncClient`` (owned by you); by default each call opens its own.
        timeout: The request timeout.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        dimensions: int | None = None,
        headers: Mapping[str, str] | None = None,
        client: httpx.AsyncClient | None = None,
        timeout: httpx.Timeout | float | None = DEFAULT_TIMEOUT,
    ) -> None:
        sent = dict(headers or {})
        if api_key:
            sent["Authorization"] = f"Bearer {api_key}"
        self.model = model
        self.dimensions = dimensions
        self._http = HTTPConfig(
            provider="embeddings",
            base_url=check_base_url(base_url, provider="embeddings"),
            headers=sent,
            timeout=timeout,
            client=client,
        )

    def __repr__(self) -> str:
        return f"OpenAIEmbedder({self.model!r}, base_url={self._http.base_url!r})"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts`` in one request.

        Raises:
            APICallError: transport failure or HTTP error status.
            InvalidResponseError: the answer does not hold one vector per text.
        """
        if not texts:
            return []
        body: dict[str, Any] = {"model": self.model, "input": list(texts), "encoding_format": "float"}
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        answer = await post_json(self._http, "/embeddings", body)
        return _vectors(answer, len(texts))


def _vectors(answer: Any, expected: int) -> list[list[float]]:
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list) or len(data) != expected:
        raise InvalidResponseError(
            f"embeddings: expected {expected} vectors in 'data'; check the base_url and model",
            provider="embeddings",
        )
    ordered = sorted(data, key=lambda item: item.get("index", 0) if isinstance(item, dict) else 0)
    vectors: list[list[float]] = []
    for item in ordered:
        vector = item.get("embedding") if isinstance(item, dict) else None
        if not isinstance(vector, list) or not vector:
            raise InvalidResponseError("embeddings: an item has no 'embedding' list", provider="embeddings")
        vectors.append([float(x) for x in vector])
    return vectors

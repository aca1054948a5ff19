"""OpenAIEmbedder against the fake server's ``/v1/embeddings``, and what it does with a bad answer."""

from __future__ import annotations

import httpx
import pytest

from procflow.errors import APICallError, InvalidResponseError
from procflow.memory import Embedder, OpenAIEmbedder
from procflow.testing import FakeProviderServer


async def test_one_deterministic_vector_per_text_of_the_asked_length() -> None:
    """Each text gets a vector; equal texts get equal vectors; ``dimensions`` sets the length."""
    with FakeProviderServer() as server:
        embedder = OpenAIEmbedder("fake", base_url=server.base_url, api_key="k", dimensions=32)
        first, second, again = await embedder.embed(["cats purr", "dogs bark", "cats purr"])
        body = server.requests[-1].json
        auth = server.requests[-1].headers.get("authorization")
    assert isinstance(embedder, Embedder)
    assert len(first) == 32 and first == again and first != second
    assert body["model"] == "fake" and body["dimensions"] == 32 and auth == "Bearer k"


async def test_nothing_to_embed_sends_no_request() -> None:
    """An empty list is answered without calling the server."""
    with FakeProviderServer() as server:
        assert await OpenAIEmbedder("fake", base_url=server.base_url).embed([]) == []
        assert server.requests == []


async def test_an_answer_without_one_vector_per_text_is_an_invalid_response() -> None:
    """A server answering the wrong number of vectors raises InvalidResponseError."""
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json={"data": []}))
    async with httpx.AsyncClient(transport=transport) as client:
        embedder = OpenAIEmbedder("m", base_url="http://embeddings.invalid/v1", client=client)
        with pytest.raises(InvalidResponseError, match="expected 1 vectors"):
            await embedder.embed(["hello"])


async def test_an_http_error_is_an_api_call_error() -> None:
    """A 401 from the server is an APICallError with its status."""
    transport = httpx.MockTransport(lambda request: httpx.Response(401, json={"error": {"message": "no"}}))
    async with httpx.AsyncClient(transport=transport) as client:
        embedder = OpenAIEmbedder("m", base_url="http://embeddings.invalid/v1", client=client)
        with pytest.raises(APICallError) as caught:
            await embedder.embed(["hello"])
    assert caught.value.status_code == 401

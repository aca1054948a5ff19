"""However the wire cuts an answer into events, both providers rebuild the same text and tool arguments."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from procflow.models import (
    AnthropicModel,
    LanguageModel,
    ModelRequest,
    OpenAICompatibleModel,
    PromptMessage,
    PromptText,
)
from procflow.testing import FakeProviderServer, FakeReply, FakeToolCall

REQUEST = ModelRequest(prompt=[PromptMessage(role="user", content=[PromptText(text="Hi")])])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as server:
        yield server


def make(provider: str, server: FakeProviderServer) -> LanguageModel:
    if provider == "openai":
        return OpenAICompatibleModel("m", base_url=server.base_url)
    return AnthropicModel("m", base_url=server.base_url)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=st.text(min_size=1, max_size=60),
    args=st.dictionaries(st.text(max_size=6), json_values, max_size=4),
    chunk_size=st.integers(min_value=1, max_value=9),
)
async def test_any_chunking_rebuilds_text_and_arguments(
    server: FakeProviderServer, provider: str, text: str, args: dict[str, Any], chunk_size: int
) -> None:
    """Concatenated text deltas equal the answer and tool arguments equal the sent dict, for any cut."""
    server.reset()
    server.add(FakeReply(text=text, tool_calls=[FakeToolCall("t", args, "id1")], chunk_size=chunk_size))
    chunks = [chunk async for chunk in make(provider, server).stream(REQUEST)]
    assert "".join(c.text or "" for c in chunks if c.type == "text-delta") == text
    assert [c.payload["args"] for c in chunks if c.type == "tool-call"] == [args]
    assert chunks[-1].type == "finish"

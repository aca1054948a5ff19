"""The providers' server-sent-event decoder: any cut of the wire gives the events the spec defines."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procflow.models import (
    AnthropicModel,
    LanguageModel,
    ModelRequest,
    OpenAICompatibleModel,
    PromptMessage,
    PromptText,
)
from procflow.models._sse import iter_sse_data
from procflow.testing import FakeProviderServer, FakeReply

REQUEST = ModelRequest(prompt=[PromptMessage(role="user", content=[PromptText(text="Hi")])])
SSE = {"Content-Type": "text/event-stream"}


def reference(stream: str) -> list[str]:
    """The WHATWG event-stream interpretation, line by line over the whole text (data only)."""
    lines = stream.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    lines.pop()  # after the last line end: an unfinished line, dropped with its event
    events: list[str] = []
    data: list[str] | None = None
    for line in lines:
        if not line:
            if data is not None:
                events.append("\n".join(data))
            data = None
            continue
        name, colon, value = line.partition(":")
        if name == "data":
            data = [] if data is None else data
            data.append(value[1:] if colon and value.startswith(" ") else value)
    return events


values = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=12)
lines = st.one_of(
    values.map(lambda v: f"data: {v}"),
    values.map(lambda v: f"data:{v}"),
    st.just("data"),
    st.just("data:"),
    values.map(lambda v: f":{v}"),  # a comment
    values.map(lambda v: f"event: {v}"),
    st.sampled_from(["id: 7", "retry: 3000", "dataX: no", "DATA: no", " data: no"]),
)
endings = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def streams(draw: st.DrawFn) -> str:
    """Events of any lines, any line endings, blank lines between; perhaps an unfinished last one."""
    out: list[str] = []
    for event in draw(st.lists(st.lists(lines, max_size=4), max_size=6)):
        out.extend(line + draw(endings) for line in event)
        out.append(draw(endings))  # the blank line that ends the event
    if draw(st.booleans()):
        out.append(draw(lines))  # cut off mid-line
    return "".join(out)


def cut(stream: str, points: list[int]) -> list[str]:
    edges = sorted({0, len(stream), *(p % (len(stream) + 1) for p in points)})
    return [stream[a:b] for a, b in itertools.pairwise(edges)]


@settings(max_examples=400, deadline=None)
@given(stream=streams(), points=st.lists(st.integers(min_value=0), max_size=12))
def test_any_chunking_gives_the_specified_events(stream: str, points: list[int]) -> None:
    """However the text is cut (even between a ``\\r`` and its ``\\n``), the data match the spec's reading."""
    assert iter_sse_data(cut(stream, points)) == reference(stream)


@given(stream=streams())
def test_one_character_at_a_time_is_the_same_as_all_at_once(stream: str) -> None:
    """A stream trickling in one character per read decodes like the whole text in one read."""
    assert iter_sse_data(list(stream)) == iter_sse_data([stream])


def test_a_final_carriage_return_ends_the_last_event() -> None:
    """A stream ending in ``\\r`` (a line end whose ``\\n`` never comes) still delivers its last event."""
    assert iter_sse_data(["data: a\r", "\r"]) == ["a"]
    assert iter_sse_data(["data: a\r\n", "\r\n", "data: b"]) == ["a"]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as server:
        yield server


def make(provider: str, server: FakeProviderServer) -> LanguageModel:
    if provider == "openai":
        return OpenAICompatibleModel("m", base_url=server.base_url)
    return AnthropicModel("m", base_url=server.base_url)


async def chunks_of(server: FakeProviderServer, provider: str, body: str) -> list[tuple[str, object]]:
    server.add(FakeReply(body=body, headers=SSE))
    return [(c.type, c.payload) async for c in make(provider, server).stream(REQUEST)]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("ending", ["\r\n", "\r"])
async def test_other_line_endings_and_fields_stream_the_same_answer(
    server: FakeProviderServer, provider: str, ending: str
) -> None:
    """CRLF or CR line ends, comments, ``event:``/``id:`` fields: the same chunks as the plain stream."""
    server.reset()
    server.add(FakeReply(text="Hello there, world", chunk_size=3))
    path = "/chat/completions" if provider == "openai" else "/messages"
    async with httpx.AsyncClient() as client:
        raw = (await client.post(server.base_url + path, json={"model": "m", "stream": True})).text
    blocks = [block for block in raw.split("\n\n") if block]
    noisy = "".join(
        f": keep-alive{ending}id: {i}{ending}{block.replace(chr(10), ending)}{ending}{ending}"
        for i, block in enumerate(blocks)
    )
    plain = await chunks_of(server, provider, raw)
    assert "".join(str(p.get("text", "")) for t, p in plain if t == "text-delta") == "Hello there, world"  # type: ignore[attr-defined]
    assert await chunks_of(server, provider, noisy) == plain

"""The fake provider server itself: script, recording, responders and lifecycle."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest

from procflow.errors import APICallError
from procflow.models import ModelRequest, OpenAICompatibleModel, PromptMessage, PromptText
from procflow.testing import FakeProviderServer, FakeReply, RecordedRequest

REQUEST = ModelRequest(prompt=[PromptMessage(role="user", content=[PromptText(text="ping")])])


async def test_plays_replies_in_order_and_records_requests() -> None:
    """Replies are consumed in order and each request is recorded with path, headers and body."""
    async with FakeProviderServer([FakeReply(text="first"), FakeReply(text="second")]) as server:
        model = OpenAICompatibleModel("m", base_url=server.base_url)
        texts = [(await model.generate(REQUEST)).text, (await model.generate(REQUEST)).text]
        assert texts == ["first", "second"]
        assert server.pending == 0
        assert [r.path for r in server.requests] == ["/v1/chat/completions"] * 2
        assert server.requests[0].json["messages"] == [{"role": "user", "content": "ping"}]
        assert server.requests[0].headers["content-type"] == "application/json"


async def test_an_empty_script_answers_400_saying_so() -> None:
    """With no reply left the server answers a non-retryable 400 that says how to add one."""
    async with FakeProviderServer() as server:
        with pytest.raises(APICallError, match="no scripted reply left") as caught:
            await OpenAICompatibleModel("m", base_url=server.base_url).generate(REQUEST)
        assert (caught.value.status_code, caught.value.is_retryable) == (400, False)


async def test_responders_build_replies_from_the_request() -> None:
    """A responder function answers from the recorded request it receives."""

    def echo(request: RecordedRequest) -> FakeReply:
        return FakeReply(text=request.json["messages"][-1]["content"].upper())

    async with FakeProviderServer([echo]) as server:
        assert (await OpenAICompatibleModel("m", base_url=server.base_url).generate(REQUEST)).text == "PING"


def test_unknown_paths_answer_404_and_sync_use_works() -> None:
    """The server also runs as a plain ``with`` block; an unknown path gets a 404 and is recorded."""
    with FakeProviderServer() as server:
        response = httpx.get(server.url + "/v1/models")
        assert response.status_code == 404
        assert server.requests[0].method == "GET"


def test_reset_clears_script_and_requests() -> None:
    """``reset()`` forgets pending replies and recorded requests."""
    with FakeProviderServer([FakeReply(text="x")]) as server:
        httpx.post(server.base_url + "/chat/completions", json={"model": "m", "messages": []})
        server.add(FakeReply(text="y"))
        server.reset()
        assert (server.pending, server.requests) == (0, [])


def test_url_before_start_is_a_clear_error() -> None:
    """Asking a stopped server for its URL says how to start it."""
    with pytest.raises(RuntimeError, match="not started"):
        _ = FakeProviderServer().url


async def test_a_paced_stream_waits_first_delay_then_delay_between_events() -> None:
    """``first_delay`` holds the answer back once (time to first token), ``delay`` spaces each event."""
    reply = FakeReply(text="abcdefgh", chunk_size=4, first_delay=0.2, delay=0.05)
    async with FakeProviderServer([reply]) as server, httpx.AsyncClient() as client:
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "ping"}]}
        started = anyio.current_time()
        arrivals: list[float] = []
        async with client.stream("POST", server.base_url + "/chat/completions", json=body) as response:
            async for line in response.aiter_lines():
                if line.startswith("data: {"):
                    choices = json.loads(line[6:])["choices"]
                    if choices and choices[0]["delta"].get("content"):
                        arrivals.append(anyio.current_time() - started)
    assert len(arrivals) == 2
    assert arrivals[0] >= 0.2 + 0.05  # the first delay, then one event delay
    assert arrivals[1] - arrivals[0] >= 0.05 * 0.9  # timer granularity


CALL = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}


@pytest.mark.parametrize(
    ("messages", "wording"),
    [
        (  # a tool result with no call before it
            [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "call_1", "content": "x"}],
            "must be a response to a preceeding message with 'tool_calls'",
        ),
        (  # a call left unanswered before the next user message
            [
                {"role": "assistant", "content": None, "tool_calls": [CALL]},
                {"role": "user", "content": "and?"},
            ],
            "did not have response messages: call_1",
        ),
    ],
)
async def test_tool_traffic_openai_rejects_is_rejected_the_same_way(
    messages: list[dict[str, object]], wording: str
) -> None:
    """As OpenAI's API does: HTTP 400 in its words, and the scripted reply is kept for the next call."""
    async with FakeProviderServer([FakeReply(text="ok")]) as server, httpx.AsyncClient() as client:
        url = server.base_url + "/chat/completions"
        bad = await client.post(url, json={"model": "m", "messages": messages})
        assert bad.status_code == 400 and wording in bad.json()["error"]["message"]
        good = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
        ]
        good.append({"role": "tool", "tool_call_id": "call_1", "content": "x"})
        ok = await client.post(url, json={"model": "m", "messages": good})
        assert ok.status_code == 200 and ok.json()["choices"][0]["message"]["content"] == "ok"

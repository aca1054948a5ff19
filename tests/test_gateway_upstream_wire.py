"""What the gateway sends the upstream and what it makes of a bad answer.

An upstream answer the gateway cannot read (a malformed SSE event, a body that is no JSON, a tool call
whose arguments are no JSON, as small local models send) is an OpenAI error (502) quoting nothing of it,
streamed or not: it used to end a plain request with a bare ``Internal Server Error`` text and tear a
stream down without an error event. The request's sampling fields (``stop``, ``seed``, ``top_p``, the
penalties, ``response_format``) reach the upstream instead of being dropped without a word.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from procflow.models import OpenAICompatibleModel
from procflow.processors import RegexFilterProcessor
from procflow.server import GatewayConfig, create_app
from procflow.server import serve_in_background as serving
from procflow.testing import FakeProviderServer, FakeReply

TOOLS: Any = [{"type": "function", "function": {"name": "send", "parameters": {"type": "object"}}}]
PRIVATE = "to=marie.dupont@example.fr"


def _tool_call_stream(arguments: str) -> str:
    base = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "fake-model"}

    def event(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return "data: " + json.dumps({**base, "choices": [choice]}) + "\n\n"

    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "send", "arguments": arguments}}
    return (
        event({"role": "assistant", "content": ""})
        + event({"tool_calls": [call]})
        + event({}, "tool_calls")
        + "data: [DONE]\n\n"
    )


BAD = {
    "tool arguments that are no JSON": lambda: FakeReply(
        body=_tool_call_stream(PRIVATE), headers={"Content-Type": "text/event-stream"}
    ),
    "a malformed event": lambda: FakeReply(text="hello there friend", chunk_size=3, malformed_after=2),
    "a body that is no JSON": lambda: FakeReply(body=f"not json {PRIVATE}"),
}


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as server:
        yield server


def _app(upstream: FakeProviderServer) -> Any:
    model = OpenAICompatibleModel("fake-model", base_url=upstream.base_url)
    guard = RegexFilterProcessor(presets=["pii", "secrets"], strategy="redact")
    return create_app(GatewayConfig(upstream=model, output_processors=[guard]))


@pytest.mark.parametrize("bad", sorted(BAD))
async def test_a_plain_request_gets_a_502_error_object(upstream: FakeProviderServer, bad: str) -> None:
    upstream.reset()
    upstream.add(BAD[bad]())
    with serving(_app(upstream)) as url:
        async with openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0) as client:
            with pytest.raises(openai.APIStatusError) as caught:
                await client.chat.completions.create(
                    model="fake-model", messages=[{"role": "user", "content": "hi"}], tools=TOOLS
                )
    assert caught.value.status_code == 502
    body: Any = caught.value.body
    assert body["code"] == "upstream_invalid_response" and body["type"] == "upstream_error"
    assert "marie" not in json.dumps(body)


@pytest.mark.parametrize("bad", sorted(BAD))
async def test_a_stream_ends_with_an_error_event_and_done(upstream: FakeProviderServer, bad: str) -> None:
    upstream.reset()
    upstream.add(BAD[bad]())
    with serving(_app(upstream)) as url:
        async with openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0) as client:
            stream = await client.chat.completions.create(
                model="fake-model", messages=[{"role": "user", "content": "hi"}], tools=TOOLS, stream=True
            )
            with pytest.raises(openai.APIError) as caught:
                async for _ in stream:
                    pass
    assert not isinstance(caught.value, openai.APIConnectionError)
    assert "could not read" in caught.value.message and "marie" not in caught.value.message


@pytest.mark.parametrize("stream", [False, True])
async def test_sampling_fields_reach_the_upstream(upstream: FakeProviderServer, stream: bool) -> None:
    """``stop``, ``seed``, ``top_p``, the penalties and ``response_format`` are forwarded, not dropped."""
    upstream.reset()
    upstream.add(FakeReply(text="hello"))
    fields: Any = {
        "stop": ["END"],
        "seed": 7,
        "top_p": 0.5,
        "presence_penalty": 0.1,
        "frequency_penalty": 0.2,
        "response_format": {"type": "json_object"},
    }
    with serving(_app(upstream)) as url:
        async with openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0) as client:
            answer: Any = await client.chat.completions.create(
                model="fake-model", messages=[{"role": "user", "content": "hi"}], stream=stream, **fields
            )
            if stream:
                [_ async for _ in answer]
    sent = upstream.requests[0].json
    assert {name: sent.get(name) for name in fields} == fields


async def test_a_field_the_anthropic_upstream_lacks_is_a_400() -> None:
    from procflow.models import AnthropicModel

    with FakeProviderServer() as server:
        app = create_app(
            GatewayConfig(upstream=AnthropicModel("claude", base_url=server.base_url, api_key="k"))
        )
        server.add(FakeReply(text="hello"))
        with serving(app) as url:
            async with openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0) as client:
                with pytest.raises(openai.BadRequestError) as caught:
                    await client.chat.completions.create(
                        model="claude", messages=[{"role": "user", "content": "hi"}], seed=3
                    )
                answer = await client.chat.completions.create(
                    model="claude", messages=[{"role": "user", "content": "hi"}], stop="END", top_p=0.9
                )
        assert "seed" in caught.value.message and "Anthropic" in caught.value.message
        assert answer.choices[0].message.content == "hello"
        sent = server.requests[-1].json
        assert sent["stop_sequences"] == ["END"] and sent["top_p"] == 0.9 and "seed" not in sent


SECRET = "sk-proj-Qw3rTy8uIoP4aSdF6gHjK1lZxC"


@pytest.mark.parametrize(
    "answer",
    [
        f"Here is part one. The key is {SECRET}.",
        f"Voici la première partie. La clé est {SECRET}.",
        f"Aquí está la primera parte. La clave es {SECRET}.",
        f"这是第一部分。密钥是{SECRET}。",
    ],
)
async def test_a_streamed_refusal_comes_after_the_text_already_sent(
    upstream: FakeProviderServer, answer: str
) -> None:
    """Released text cannot be taken back: the refusal follows it as its own paragraph, never glued on."""
    upstream.reset()
    upstream.add(FakeReply(text=answer, chunk_size=3))
    model = OpenAICompatibleModel("fake-model", base_url=upstream.base_url)
    guard = RegexFilterProcessor(presets=["secrets"], strategy="block")
    config = GatewayConfig(upstream=model, output_processors=[guard], tripwire_response="refusal")
    with serving(create_app(config)) as url:
        async with openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0) as client:
            stream = await client.chat.completions.create(
                model="fake-model", messages=[{"role": "user", "content": "hi"}], stream=True
            )
            pieces = [c.choices[0].delta.content or "" async for c in stream if c.choices]
    text = "".join(pieces)
    sent, _, refusal = text.partition("\n\n")
    assert refusal == config.refusal_text and sent and answer.startswith(sent)
    assert "sk-proj" not in text


@pytest.mark.parametrize("stream", [False, True])
async def test_the_bundled_guard_redacts_a_clients_system_and_developer_messages(
    upstream: FakeProviderServer, stream: bool
) -> None:
    """A gateway client writes its system messages too: the bundled guard redacts them before the
    upstream reads them (``RegexFilterProcessor(system_messages=True)``)."""
    from procflow._cli.defaults import default_pipeline

    upstream.reset()
    upstream.add(FakeReply(text="ok"))
    guard = default_pipeline()
    model = OpenAICompatibleModel("fake-model", base_url=upstream.base_url)
    config = GatewayConfig(upstream=model, input_processors=guard, output_processors=guard)
    messages: Any = [
        {"role": "system", "content": f"Écrivez à marie.dupont@example.fr, clé {SECRET}"},
        {"role": "developer", "content": "客服电话+86 139 1234 5678"},
        {"role": "user", "content": "hola"},
    ]
    with serving(create_app(config)) as url:
        async with openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0) as client:
            answer: Any = await client.chat.completions.create(
                model="fake-model", messages=messages, stream=stream
            )
            if stream:
                [_ async for _ in answer]
    sent = upstream.requests[0].json["messages"]
    assert [m["content"] for m in sent] == ["Écrivez à [EMAIL], clé [API_KEY]", "客服电话[PHONE]", "hola"]

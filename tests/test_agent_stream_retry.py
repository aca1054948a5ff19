"""A retried stream never leaks: held-back text is withheld, the broken attempt is marked and dropped."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procflow import Agent, Chunk
from procflow.errors import APICallError
from procflow.models import AnthropicModel, LanguageModel, OpenAICompatibleModel
from procflow.processors import (
    ProcessAPIErrorArgs,
    ProcessOutputStreamArgs,
    RegexFilterProcessor,
    StreamErrorRetryProcessor,
)
from procflow.testing import FakeProviderServer, FakeReply, ScriptedModel, ScriptedStep

ASYNCIO_ONLY = True  # real provider sockets: see tests/conftest.py

KEY = "sk-proj-R4nd0mExampleKey0123456789abcdefGHIJ"
ANSWER = f"Your new key is {KEY}, keep it safe."
REDACTED = "Your new key is [API_KEY], keep it safe."
PROVIDERS = ("openai", "anthropic")


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as running:
        yield running


def provider_model(provider: str, server: FakeProviderServer) -> LanguageModel:
    if provider == "openai":
        return OpenAICompatibleModel("fake-model", base_url=server.base_url)
    return AnthropicModel("claude-fake", base_url=server.base_url, api_key="sk-ant-test")


def guarded_agent(model: Any, *, window: int) -> Agent:
    redact = RegexFilterProcessor(presets=["secrets"], strategy="redact", stream_carryover_size=window)
    return Agent(
        id="guarded",
        model=model,
        output_processors=[redact],
        error_processors=[StreamErrorRetryProcessor(initial_delay=0)],
    )


def leaked(text: str) -> bool:
    """Whether ``text`` holds any 6 characters of the key (its prefix included)."""
    return any(KEY[i : i + 6] in text for i in range(len(KEY) - 5))


def accepted_text(chunks: list[Chunk]) -> str:
    """The text a full_stream client keeps when it drops the deltas of discarded attempts."""
    kept: list[str] = []
    attempt: list[str] = []
    for chunk in chunks:
        if chunk.type == "text-delta":
            attempt.append(chunk.text or "")
        elif chunk.type == "step-finish":
            if "discarded" not in chunk.payload:
                kept.extend(attempt)
            attempt = []
    return "".join(kept)


async def broken_then_whole(
    provider: str, server: FakeProviderServer, broken: FakeReply, *, window: int = 8
) -> None:
    """One full_stream run and one text_stream run, each retried after ``broken``."""
    server.reset()
    server.add(broken, FakeReply(text=ANSWER, chunk_size=broken.chunk_size))
    server.add(broken, FakeReply(text=ANSWER, chunk_size=broken.chunk_size))
    agent = guarded_agent(provider_model(provider, server), window=window)
    output = agent.stream("Can I get a new key?")
    chunks = [chunk async for chunk in output.full_stream]
    delivered = "".join(c.text or "" for c in chunks if c.type == "text-delta")
    assert not leaked(delivered)
    discarded = [c for c in chunks if c.type == "step-finish" and "discarded" in c.payload]
    assert [c.payload["discarded"]["processor_id"] for c in discarded] == ["stream-error-retry"]
    assert accepted_text(chunks) == output.text == REDACTED
    texts = agent.stream("Can I get a new key?")
    assert "".join([text async for text in texts.text_stream]) == texts.text == REDACTED
    assert len(server.requests) == 4


@pytest.mark.parametrize("provider", PROVIDERS)
@settings(max_examples=15)
@given(data=st.data())
def test_any_break_position_leaks_nothing(provider: str, server: FakeProviderServer, data: Any) -> None:
    """Wherever the connection drops, no part of the key is delivered and only the retry's text is kept."""
    chunk_size = data.draw(st.integers(min_value=1, max_value=12), label="chunk_size")
    events = math.ceil(len(ANSWER) / chunk_size)
    position = data.draw(st.integers(min_value=0, max_value=events), label="break_after")
    window = data.draw(st.integers(min_value=1, max_value=40), label="stream_carryover_size")
    broken = FakeReply(text=ANSWER, chunk_size=chunk_size, break_after=position)
    anyio.run(functools.partial(broken_then_whole, provider, server, broken, window=window))


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_in_stream_error_event_is_retried_without_leaking(
    provider: str, server: FakeProviderServer
) -> None:
    """An overloaded error inside the stream, right after the key began, is retried without a leak."""
    broken = FakeReply(text=ANSWER, chunk_size=4, error_after=6, error_type="overloaded_error")
    await broken_then_whole(provider, server, broken)


class RetryOnce:
    """Any error processor, not just StreamErrorRetryProcessor: retries the first failure."""

    id = "retry-once"

    def process_api_error(self, args: ProcessAPIErrorArgs) -> dict[str, bool] | None:
        return {"retry": True} if args.retry_count == 0 else None


class Counter:
    """A stream processor holding every text chunk back until the stream ends (counts flushes)."""

    id = "hold-all"

    def __init__(self) -> None:
        self.flushes = 0

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk | None:
        if args.part.type == "text-delta":
            args.state.setdefault("held", []).append(args.part.text or "")
            return None
        return args.part

    def flush_output_stream(self, args: ProcessOutputStreamArgs) -> list[Chunk]:
        self.flushes += 1
        held = args.state.pop("held", [])
        return [Chunk.text_delta("".join(held))] if held else []


async def test_any_error_processor_retry_withholds_what_was_held() -> None:
    """With a plain error processor, the broken attempt's held text is never released; state resets."""
    holder = Counter()
    failing = ScriptedStep(text="first try", error=APICallError("connection reset by peer"))
    agent = Agent(
        id="a",
        model=ScriptedModel([failing, "second try"]),
        output_processors=[holder],
        error_processors=[RetryOnce()],
    )
    output = agent.stream("Hi")
    chunks = [chunk async for chunk in output.full_stream]
    assert [c.text for c in chunks if c.type == "text-delta"] == ["second try"]
    assert output.text == "second try" and holder.flushes == 2


async def test_a_flush_tripwire_on_discarded_text_does_not_stop_the_retry() -> None:
    """A block guard finding the key in the discarded attempt's held text lets the retry go on."""
    failing = ScriptedStep(text=f"Key: {KEY[:30]}", error=APICallError("connection reset by peer"))
    model = ScriptedModel([failing, "No keys here."], chunk_size=4)
    block = RegexFilterProcessor(presets=["secrets"], strategy="block", stream_carryover_size=64)
    agent = Agent(id="a", model=model, output_processors=[block], error_processors=[RetryOnce()])
    result = await agent.generate("Hi")
    assert (result.text, result.tripwire) == ("No keys here.", None)


async def test_text_stream_drops_a_step_stopped_by_a_tripwire() -> None:
    """text_stream yields accepted steps only: a step a stream guard blocked midway yields nothing."""

    class StopOnWord:
        id = "stop"

        def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
            if "forbidden" in (args.part.text or ""):
                args.abort("forbidden word")
            return args.part

    chunks = [Chunk.text_delta(t) for t in ("Hello ", "there ", "forbidden")]
    agent = Agent(
        id="a", model=ScriptedModel([ScriptedStep(chunks=chunks)]), output_processors=[StopOnWord()]
    )
    output = agent.stream("Hi")
    assert [text async for text in output.text_stream] == []
    assert output.tripwire is not None and output.text == ""


class RejectFirst:
    """Rejects the first answer of the call with ``retry=True``."""

    id = "reject-first"

    def process_output_step(self, args: Any) -> list[Any]:
        if args.retry_count == 0:
            args.abort("Answer without the key.", retry=True)
        return []


async def test_an_output_step_retry_releases_held_text_only_redacted_and_text_stream_drops_it() -> None:
    """A rejected attempt's held-back key is redacted before release; text_stream shows only the retry."""
    redact = RegexFilterProcessor(presets=["secrets"], strategy="redact", stream_carryover_size=8)
    model = ScriptedModel([ANSWER, "I cannot share keys."], chunk_size=4)
    agent = Agent(id="a", model=model, output_processors=[redact, RejectFirst()], max_processor_retries=1)
    output = agent.stream("My key?")
    chunks = [chunk async for chunk in output.full_stream]
    assert not leaked("".join(c.text or "" for c in chunks if c.type == "text-delta"))
    assert [c.payload["discarded"]["processor_id"] for c in chunks if "discarded" in c.payload] == [
        "reject-first"
    ]
    model.add(ANSWER, "I cannot share keys.")
    texts = agent.stream("My key?")
    assert "".join([text async for text in texts.text_stream]) == texts.text == "I cannot share keys."

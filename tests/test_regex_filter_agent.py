"""RegexFilterProcessor end to end in an agent stream driven by the scripted model."""

from __future__ import annotations

from procflow import Agent, Chunk
from procflow.processors import RegexFilterProcessor
from procflow.testing import ScriptedModel

KEY = "sk-proj-R4nd0mExampleKey0123456789abcdefGHIJ"
ANSWER = f"Your new key is {KEY}, and mail bob@example.com if it fails."


def _agent(filter_: RegexFilterProcessor, *, chunk_size: int) -> Agent:
    return Agent(
        id="guarded", model=ScriptedModel([ANSWER], chunk_size=chunk_size), output_processors=[filter_]
    )


async def _collect(agent: Agent) -> list[Chunk]:
    return [chunk async for chunk in agent.stream("Can I get a new key?").full_stream]


def _joined(chunks: list[Chunk]) -> str:
    return "".join(c.text or "" for c in chunks if c.type == "text-delta")


async def test_secret_split_across_model_chunks_never_reaches_the_consumer() -> None:
    """With 3-character model chunks the key and the email come out redacted, in no chunk and in no
    run of chunks, and the stream's text equals the result text."""
    filter_ = RegexFilterProcessor(presets=["pii", "secrets"], strategy="redact")
    chunks = await _collect(_agent(filter_, chunk_size=3))
    text = _joined(chunks)
    assert text == "Your new key is [API_KEY], and mail [EMAIL] if it fails."
    for fragment in (KEY, "sk-proj-R4nd0m", "bob@example.com"):
        assert fragment not in text
    assert chunks[-1].type == "finish"


async def test_every_chunking_gives_the_same_text() -> None:
    """The consumer reads the same redacted text whatever the model's chunk size."""
    texts = set()
    for size in (1, 2, 5, 20, 200):
        filter_ = RegexFilterProcessor(presets=["pii", "secrets"], strategy="redact")
        texts.add(_joined(await _collect(_agent(filter_, chunk_size=size))))
    assert texts == {"Your new key is [API_KEY], and mail [EMAIL] if it fails."}


async def test_block_ends_the_stream_with_a_tripwire_chunk_naming_the_filter() -> None:
    """``block`` stops the stream with a ``tripwire`` chunk naming ``regex-filter``; nothing of the
    key reached the consumer before it."""
    agent = _agent(RegexFilterProcessor(presets=["secrets"]), chunk_size=4)
    stream = agent.stream("Can I get a new key?")
    chunks = [chunk async for chunk in stream.full_stream]
    [tripwire] = [c for c in chunks if c.type == "tripwire"]
    assert tripwire.payload["processor_id"] == "regex-filter"
    assert tripwire.payload["metadata"]["matches"][0]["rule"] == "api-key"
    assert "sk-" not in _joined(chunks)
    assert stream.result.tripwire is not None
    assert stream.result.tripwire.processor_id == "regex-filter"


async def test_generate_redacts_the_final_text() -> None:
    """``generate()`` returns the redacted text too (the same processor, whole-message phase)."""
    filter_ = RegexFilterProcessor(presets=["pii", "secrets"], strategy="redact")
    result = await _agent(filter_, chunk_size=3).generate("Can I get a new key?")
    assert result.text == "Your new key is [API_KEY], and mail [EMAIL] if it fails."


async def test_seed_input_block_stops_before_the_model() -> None:
    """The seed's agent example: pii and secrets blocked on input — the model is never called."""
    model = ScriptedModel(["never sent"])
    agent = Agent(
        id="my-agent",
        model=model,
        input_processors=[RegexFilterProcessor(presets=["pii", "secrets"], strategy="block")],
    )
    result = await agent.generate("my key is AKIA2E0A8F3B244C9986")
    assert result.tripwire is not None
    assert result.tripwire.processor_id == "regex-filter"
    [match] = result.tripwire.metadata["matches"]
    assert (match["rule"], match["match"], match["index"]) == ("aws-key", "[REDACTED_MATCH]", 10)
    assert model.prompts == []

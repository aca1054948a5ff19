"""ModerationProcessor: block, warn and filter on input and in streams, judged by a model, failing as told."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from guard_support import judge_responder, live_text, scripted_judge

from procflow import Agent
from procflow.models import OpenAICompatibleModel
from procflow.processors import JUDGE_USAGE_KEY, ModerationProcessor, ProcessorViolation
from procflow.testing import FakeProviderServer, FakeReply, ScriptedModel


@pytest.fixture(scope="module")
def judge_server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _reset(judge_server: FakeProviderServer) -> None:
    judge_server.reset()


def _judge(server: FakeProviderServer) -> OpenAICompatibleModel:
    return OpenAICompatibleModel("judge", base_url=server.base_url)


@pytest.mark.parametrize("text", ["I hate you", "Te odio", "Je te hais, haine", "我对你充满仇恨"])
async def test_block_stops_flagged_input_in_every_language(text: str) -> None:
    """A flagged input message trips with the categories; the model is never called."""
    model = ScriptedModel(["never"])
    guard = ModerationProcessor(model=scripted_judge(), categories=["hate", "violence"], threshold=0.7)
    result = await Agent(id="a", model=model, input_processors=[guard]).generate(text)
    assert result.tripwire is not None and result.tripwire.processor_id == "moderation"
    assert result.tripwire.metadata["categories"] == ["hate"]
    assert "scores" not in result.tripwire.metadata
    assert model.requests == []


async def test_clean_input_passes_and_judge_usage_is_recorded() -> None:
    """Clean input reaches the model; the judge call's usage is in the request context for cost guards."""
    guard = ModerationProcessor(model=scripted_judge(), categories=["hate"])
    result = await Agent(id="a", model=ScriptedModel(["Bonjour !"]), input_processors=[guard]).generate(
        "Salut"
    )
    assert result.text == "Bonjour !" and result.tripwire is None
    (record,) = result.request_context.get(JUDGE_USAGE_KEY)
    assert record.processor_id == "moderation" and record.usage.output_tokens > 0


async def test_warn_reports_scores_and_passes() -> None:
    """warn lets the content through and reports categories and (with include_scores) scores."""
    reports: list[ProcessorViolation] = []
    guard = ModerationProcessor(
        model=scripted_judge(), categories=["hate", "violence"], strategy="warn", include_scores=True
    )
    guard.on_violation = reports.append
    result = await Agent(id="a", model=ScriptedModel(["ok"]), input_processors=[guard]).generate(
        "I will kill it"
    )
    assert result.text == "ok"
    assert reports[0].detail["categories"] == ["violence"]
    assert reports[0].detail["scores"] == {"hate": 0.02, "violence": 0.9}
    assert "kill" not in json.dumps(reports[0].detail) and "kill" not in reports[0].message


async def test_filter_drops_only_the_flagged_message() -> None:
    """filter removes the flagged user message and keeps the others."""
    model = ScriptedModel(["fine"])
    guard = ModerationProcessor(model=scripted_judge(), categories=["hate"], strategy="filter")
    await Agent(id="a", model=model, input_processors=[guard]).generate(
        ["Hello there", "I hate this", "Thanks"]
    )
    sent = [m.content[0].text for m in model.requests[0].prompt if m.role == "user"]  # type: ignore[union-attr]
    assert sent == ["Hello there", "Thanks"]


@pytest.mark.parametrize("chunk_size", [1, 3, 17, 400])
async def test_stream_block_never_releases_the_flagged_window(chunk_size: int) -> None:
    """On output, flagged text is held until judged and never reaches the consumer, for any chunking."""
    answer = "Here is a calm first part. " * 3 + "And now I hate everyone."
    guard = ModerationProcessor(model=scripted_judge(), categories=["hate"], stream_window=40)
    agent = Agent(id="a", model=ScriptedModel([answer], chunk_size=chunk_size), output_processors=[guard])
    output = agent.stream("talk")
    text = "".join([piece async for piece in live_text(output)])
    assert "hate" not in text
    assert output.tripwire is not None and output.tripwire.processor_id == "moderation"


async def test_stream_filter_withholds_windows_and_generate_agrees() -> None:
    """filter withholds flagged windows only; generate() gives the same text as the stream."""
    answer = "A" * 30 + " hate " + "B" * 34
    guard = ModerationProcessor(
        model=scripted_judge(), categories=["hate"], strategy="filter", stream_window=10
    )
    agent = Agent(id="a", model=ScriptedModel([answer, answer], chunk_size=7), output_processors=[guard])
    streamed = "".join([p async for p in live_text(agent.stream("x"))])
    generated = (await agent.generate("x")).text
    assert streamed == generated and "hate" not in streamed
    assert streamed.startswith("A" * 30) and streamed.endswith("B" * 30)


@pytest.mark.parametrize(
    "reply",
    [
        FakeReply.error(500, "judge down"),
        FakeReply(text="I'm sorry, I can't help with that."),
        FakeReply(text="{not json"),
        FakeReply(text=json.dumps({"categories": "high"})),
    ],
    ids=["500", "refusal", "malformed", "wrong-shape"],
)
async def test_a_failing_judge_follows_on_error(judge_server: FakeProviderServer, reply: FakeReply) -> None:
    """500s, refusals and garbage (twice) pass with on_error='allow' and trip with on_error='block'."""
    for on_error, blocked in (("allow", False), ("block", True)):
        judge_server.reset()
        judge_server.add(reply, reply)
        guard = ModerationProcessor(model=_judge(judge_server), on_error=on_error)
        result = await Agent(id="a", model=ScriptedModel(["ok"]), input_processors=[guard]).generate("hello")
        assert (result.tripwire is not None) is blocked
        if blocked:
            assert result.tripwire is not None and result.tripwire.metadata["error"] in ("error", "invalid")


async def test_a_slow_judge_times_out(judge_server: FakeProviderServer) -> None:
    """A judge slower than timeout counts as failed (fail closed here)."""
    judge_server.add(FakeReply(text="{}", delay=2.0))
    guard = ModerationProcessor(model=_judge(judge_server), on_error="block", timeout=0.2)
    result = await Agent(id="a", model=ScriptedModel(["ok"]), input_processors=[guard]).generate("hello")
    assert result.tripwire is not None and result.tripwire.metadata["error"] == "timeout"


async def test_one_repair_retry_over_the_wire(judge_server: FakeProviderServer) -> None:
    """A malformed first answer gets one repair request; JSON mode and temperature 0 are asked for."""
    judge_server.add(FakeReply(text="```json\n{oops"), judge_responder)
    guard = ModerationProcessor(model=_judge(judge_server), categories=["hate"])
    result = await Agent(id="a", model=ScriptedModel(["never"]), input_processors=[guard]).generate(
        "I hate it"
    )
    assert result.tripwire is not None
    first, second = (r.json for r in judge_server.requests)
    assert first["temperature"] == 0 and first["response_format"]["type"] == "json_schema"
    assert "previous answer was invalid" in json.dumps(second["messages"][-1])


async def test_the_seeds_moderated_agent_runs_against_a_server(judge_server: FakeProviderServer) -> None:
    """The seed's moderated agent, in Python, against a model server over a real socket."""
    judge_server.add(judge_responder, FakeReply(text="Happy to help!"))
    model = OpenAICompatibleModel("gpt-5-mini", base_url=judge_server.base_url)
    moderated_agent = Agent(
        id="moderated-agent",
        instructions="You are a helpful assistant",
        model=model,
        input_processors=[
            ModerationProcessor(
                model=model, categories=["hate", "harassment", "violence"], threshold=0.7, strategy="block"
            )
        ],
    )
    result = await moderated_agent.generate("Hello!")
    assert result.text == "Happy to help!"


async def test_judge_answers_are_cached() -> None:
    """With a cache, the same content is judged once."""

    class DictCache:
        def __init__(self) -> None:
            self.values: dict[str, object] = {}

        async def get(self, key: str) -> object:
            return self.values.get(key)

        async def set(self, key: str, value: object, ttl: float | None = None) -> None:
            self.values[key] = value

    judge = scripted_judge(calls=1)
    guard = ModerationProcessor(model=judge, categories=["hate"], cache=DictCache())
    agent = Agent(id="a", model=ScriptedModel(["one", "two"]), input_processors=[guard])
    assert (await agent.generate("same text")).text == "one"
    assert (await agent.generate("same text")).text == "two"
    assert len(judge.requests) == 1

"""Agent basics: generate() and stream() results, chunks, instructions, options and configuration errors."""

from __future__ import annotations

import anyio
import pytest
from _agent_support import MODES, call, texts
from hypothesis import given, settings
from hypothesis import strategies as st

from procflow import Agent, Chunk, ConfigurationError, Message, Usage
from procflow.errors import UnknownModelError
from procflow.processors import ProcessOutputStreamArgs
from procflow.testing import ScriptedModel, ScriptedStep


@pytest.mark.parametrize("mode", MODES)
async def test_plain_answer_has_text_usage_reason_and_one_step(mode: str) -> None:
    """A text answer gives its text, the model's usage, ``stop`` and one step."""
    usage = Usage(input_tokens=7, output_tokens=3)
    agent = Agent(id="a", model=ScriptedModel([ScriptedStep(text="Hello there!", usage=usage)]))
    outcome = await call(agent, mode, "Hi")
    result = outcome.result
    assert (result.text, result.usage, result.finish_reason) == ("Hello there!", usage, "stop")
    assert [s.text for s in result.steps] == ["Hello there!"]
    assert result.tripwire is None


@pytest.mark.parametrize("mode", MODES)
async def test_instructions_come_first_in_the_prompt(mode: str) -> None:
    """Instructions are system messages ahead of the user's input."""
    model = ScriptedModel(["ok"])
    agent = Agent(id="a", model=model, instructions=["Be brief.", "Be kind."])
    await call(agent, mode, "Hi")
    prompt = model.prompts[0]
    assert [m.role for m in prompt] == ["system", "system", "user"]
    assert texts(prompt) == ["Be brief.", "Be kind.", "Hi"]


@pytest.mark.parametrize("mode", MODES)
async def test_response_holds_the_assistant_message_and_its_ui_form(mode: str) -> None:
    """``response`` has the assistant message and its UI message; the input is not part of it."""
    agent = Agent(id="a", model=ScriptedModel(["Hello"]))
    result = (await call(agent, mode, [Message.user("Hi"), {"role": "user", "content": "there"}])).result
    assert [(m.role, m.text) for m in result.response.messages] == [("assistant", "Hello")]
    assert [(m.role, m.parts[0].text) for m in result.response.ui_messages] == [("assistant", "Hello")]
    assert [m.text for m in result.response.message_list.input] == ["Hi", "there"]


async def test_stream_chunks_come_in_order_and_end_with_finish() -> None:
    """A stream goes step-start, text deltas, step-finish, then finish."""
    agent = Agent(id="a", model=ScriptedModel([ScriptedStep(text="abcdefghij", chunk_size=4)]))
    outcome = await call(agent, "stream", "Hi")
    assert outcome.types == ["step-start", "text-delta", "text-delta", "text-delta", "step-finish", "finish"]
    assert "".join(c.text or "" for c in outcome.chunks) == "abcdefghij"
    assert outcome.chunks[-1].payload["finish_reason"] == "stop"


async def test_text_stream_yields_only_text() -> None:
    """``text_stream`` yields the text deltas, and the result is available afterwards."""
    output = Agent(id="a", model=ScriptedModel([ScriptedStep(text="one two three", chunk_size=3)])).stream(
        "Hi"
    )
    pieces = [piece async for piece in output.text_stream]
    assert "".join(pieces) == "one two three"
    assert output.text == "one two three"


async def test_result_before_the_end_says_how_to_get_it() -> None:
    """Reading the outcome of an unconsumed stream raises an error that says what to do."""
    output = Agent(id="a", model=ScriptedModel(["x"])).stream("Hi")
    assert not output.finished
    with pytest.raises(RuntimeError, match="consume"):
        _ = output.text


async def test_consume_finishes_a_partly_read_stream() -> None:
    """``consume()`` drives the rest of the stream and returns the result."""
    output = Agent(id="a", model=ScriptedModel([ScriptedStep(text="abcdef", chunk_size=2)])).stream("Hi")
    first = await output.full_stream.__anext__()
    result = await output.consume()
    assert first.type == "step-start"
    assert result.text == "abcdef"
    assert output.finished


async def test_a_stream_has_one_consumer() -> None:
    """Taking ``text_stream`` after ``full_stream`` is refused with a clear error."""
    output = Agent(id="a", model=ScriptedModel(["x"])).stream("Hi")
    _ = output.full_stream
    with pytest.raises(RuntimeError, match="one consumer"):
        _ = output.text_stream


async def test_nothing_runs_until_the_stream_is_iterated() -> None:
    """``stream()`` returns at once; the model is called only when the stream is read."""
    model = ScriptedModel(["x"])
    output = Agent(id="a", model=model).stream("Hi")
    assert model.calls == 0
    await output.consume()
    assert model.calls == 1


def test_generate_sync_runs_without_an_event_loop() -> None:
    """``generate_sync()`` runs a call from plain synchronous code."""
    result = Agent(id="a", model=ScriptedModel(["sync answer"])).generate_sync("Hi", max_steps=1)
    assert result.text == "sync answer"


@pytest.mark.parametrize("mode", MODES)
async def test_unknown_model_id_raises_when_used(mode: str) -> None:
    """A ``provider/model`` string is resolved on first use; an unknown provider raises then."""
    agent = Agent(id="a", model="nowhere/model-x")
    with pytest.raises(UnknownModelError):
        await call(agent, mode, "Hi")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"id": ""}, "non-empty string id"),
        ({"model": 42}, "LanguageModel"),
        ({"input_processors": [object()]}, "needs a non-empty string attribute 'id'"),
        ({"output_processors": "nope"}, "list of processors"),
        ({"max_processor_retries": -1}, "non-negative"),
        ({"tools": [3]}, "Tool objects or functions"),
        ({"memory": object()}, "input_processors"),
    ],
)
def test_bad_configuration_is_rejected_with_a_fix(kwargs: dict[str, object], message: str) -> None:
    """Invalid constructor arguments raise ConfigurationError naming the problem."""
    options: dict[str, object] = {"id": "a", "model": ScriptedModel()}
    options.update(kwargs)
    with pytest.raises(ConfigurationError, match=message):
        Agent(**options)


def test_duplicate_processor_ids_are_rejected() -> None:
    """Two processors sharing an id in one list are refused when the agent is built."""

    class Noop:
        id = "same"

        def process_input(self, args: object) -> None:
            return None

    with pytest.raises(ConfigurationError, match="share the id 'same'"):
        Agent(id="a", model=ScriptedModel(), input_processors=[Noop(), Noop()])


def test_max_steps_must_be_positive() -> None:
    """``max_steps=0`` is refused at the call."""
    with pytest.raises(ConfigurationError, match="max_steps"):
        Agent(id="a", model=ScriptedModel()).stream("Hi", max_steps=0)


class PassThrough:
    id = "pass-through"

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        return args.part


@settings(max_examples=40, deadline=None)
@given(text=st.text(min_size=1, max_size=200), chunk_size=st.integers(min_value=1, max_value=50))
def test_any_chunking_gives_the_same_text(text: str, chunk_size: int) -> None:
    """Whatever the chunk size, the streamed deltas, the result text and the stored message agree."""

    async def run() -> tuple[str, str, str]:
        step = ScriptedStep(text=text, chunk_size=chunk_size)
        agent = Agent(id="a", model=ScriptedModel([step, step]), output_processors=[PassThrough()])
        output = agent.stream("Hi")
        streamed = "".join([t async for t in output.text_stream])
        generated = await agent.generate("Hi")
        return streamed, output.text, generated.response.messages[0].text

    assert anyio.run(run) == (text, text, text)

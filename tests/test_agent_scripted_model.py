"""The scripted model used by agent tests: chunks, tool calls, errors, stalls and recorded requests."""

from __future__ import annotations

import anyio
import pytest

from procflow import APICallError, Chunk, ToolCall, Usage
from procflow.models import LanguageModel, ModelRequest, PromptMessage, PromptText
from procflow.testing import ScriptedModel, ScriptedStep, ScriptExhaustedError


def request(text: str = "hello world") -> ModelRequest:
    return ModelRequest(prompt=[PromptMessage(role="user", content=[PromptText(text=text)])])


async def collect(model: ScriptedModel, req: ModelRequest | None = None) -> list[Chunk]:
    return [chunk async for chunk in model.stream(req or request())]


def test_it_is_a_language_model() -> None:
    """ScriptedModel satisfies the LanguageModel protocol."""
    model = ScriptedModel(provider="p", model_id="m")
    assert isinstance(model, LanguageModel)
    assert (model.provider, model.model_id) == ("p", "m")


async def test_text_is_streamed_in_chunks_then_finish_with_usage() -> None:
    """Text comes in ``chunk_size`` pieces, then a finish chunk with default word-count usage."""
    chunks = await collect(ScriptedModel(["one two three"], chunk_size=5))
    assert [c.text for c in chunks[:-1]] == ["one t", "wo th", "ree"]
    assert chunks[-1] == Chunk("finish", {"finish_reason": "stop", "usage": Usage(2, 3)})


async def test_every_request_is_recorded() -> None:
    """Each call's request is kept, in order, with its prompt."""
    model = ScriptedModel(["a", "b"])
    await collect(model, request("first"))
    await model.generate(request("second"))
    assert model.calls == 2
    assert [p[0].text for p in model.prompts] == ["first", "second"]


async def test_tool_calls_in_every_form() -> None:
    """Tool calls given as tuples, dicts or ToolCall objects come out as tool-call chunks."""
    step = ScriptedStep(
        reasoning="think",
        tool_calls=[("a", {"x": 1}), {"tool_name": "b", "tool_call_id": "id-b"}, ToolCall("id-c", "c", {})],
    )
    chunks = await collect(ScriptedModel([step]))
    assert [c.type for c in chunks] == ["reasoning-delta", "tool-call", "tool-call", "tool-call", "finish"]
    assert [c.payload["tool_call_id"] for c in chunks[1:4]] == ["call_0_0", "id-b", "id-c"]
    assert chunks[-1].payload["finish_reason"] == "tool-calls"


async def test_error_is_raised_after_the_chunks() -> None:
    """An error step streams its text first, then raises (a mid-stream failure)."""
    model = ScriptedModel([ScriptedStep(text="partial", error=APICallError("boom", status_code=500))])
    seen: list[str] = []

    async def read() -> None:
        async for chunk in model.stream(request()):
            seen.append(chunk.text or "")

    with pytest.raises(APICallError, match="boom"):
        await read()
    assert "".join(seen) == "partial"


async def test_generate_returns_the_whole_answer_or_raises() -> None:
    """``generate()`` returns text, tool calls and usage; an error step raises."""
    model = ScriptedModel(
        [ScriptedStep(text="hi", tool_calls=[("t", {})]), APICallError("no", status_code=400)]
    )
    response = await model.generate(request())
    assert (response.text, response.finish_reason, len(response.tool_calls)) == ("hi", "tool-calls", 1)
    with pytest.raises(APICallError):
        await model.generate(request())


async def test_running_out_of_script_says_how_to_fix() -> None:
    """A call past the script raises ScriptExhaustedError, unless ``repeat_last``."""
    model = ScriptedModel(["only"])
    await collect(model)
    with pytest.raises(ScriptExhaustedError, match="repeat_last=True"):
        model.stream(request())
    repeating = ScriptedModel(["again"], repeat_last=True)
    assert [(await collect(repeating))[0].text for _ in range(3)] == ["again"] * 3


async def test_a_step_may_be_a_function_of_the_request() -> None:
    """A callable script item builds the answer from the request."""
    model = ScriptedModel([lambda req: f"echo: {req.prompt[-1].text}"], chunk_size=100)
    chunks = await collect(model, request("ping"))
    assert chunks[0].text == "echo: ping"


async def test_explicit_chunks_are_played_as_given() -> None:
    """``chunks=`` streams exactly those chunks before the finish chunk."""
    given = [Chunk.text_delta("a"), Chunk.data("data-x", 1), Chunk.text_delta("b")]
    chunks = await collect(ScriptedModel([ScriptedStep(chunks=given, finish_reason="length")]))
    assert chunks[:-1] == given
    assert chunks[-1].payload["finish_reason"] == "length"


async def test_stall_waits_until_cancelled() -> None:
    """``stall_after`` stops the stream until the caller cancels."""
    model = ScriptedModel([ScriptedStep(text="abcd", chunk_size=2, stall_after=1)])
    seen: list[str] = []
    with anyio.CancelScope() as scope:
        async for chunk in model.stream(request()):
            seen.append(chunk.text or "")
            scope.cancel()
    assert scope.cancelled_caught
    assert seen == ["ab"]


def test_bad_items_and_sizes_are_rejected() -> None:
    """A zero chunk size or an unknown script item raises a clear error."""
    with pytest.raises(ValueError, match="chunk_size"):
        ScriptedModel(chunk_size=0)
    with pytest.raises(TypeError, match="script item"):
        ScriptedModel([42]).stream(request())  # type: ignore[list-item]

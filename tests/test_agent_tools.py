"""Tool execution in the agent loop: validated arguments, results fed back, errors, limits."""

from __future__ import annotations

import functools

import pytest
from _agent_support import MODES, call
from pydantic import BaseModel

from procflow import Agent, Tool, ToolCall, ToolContext, tool
from procflow.errors import ConfigurationError
from procflow.models import PromptToolResult
from procflow.testing import ScriptedModel, ScriptedStep


@tool
def get_weather(city: str, unit: str = "C") -> str:
    """Current weather for a city."""
    return f"21{unit} and sunny in {city}"


class Forecast(BaseModel):
    city: str
    high: int


def tool_results_sent(model: ScriptedModel, call_index: int) -> list[PromptToolResult]:
    return [p for m in model.prompts[call_index] for p in m.content if isinstance(p, PromptToolResult)]


@pytest.mark.parametrize("mode", MODES)
async def test_tool_loop_runs_the_tool_and_sends_the_result_back(mode: str) -> None:
    """A tool call is executed and its result reaches the model's next step."""
    model = ScriptedModel(
        [ScriptedStep(tool_calls=[("get_weather", {"city": "Paris"})]), "It is 21C and sunny in Paris."]
    )
    result = (await call(Agent(id="a", model=model, tools=[get_weather]), mode, "Weather?")).result
    assert result.text == "It is 21C and sunny in Paris."
    assert [(s.finish_reason, len(s.tool_calls)) for s in result.steps] == [("tool-calls", 1), ("stop", 0)]
    assert [r.result for r in result.tool_results] == ["21C and sunny in Paris"]
    assert [r.result for r in tool_results_sent(model, 1)] == ["21C and sunny in Paris"]
    assert model.requests[0].tools[0].name == "get_weather"


async def test_stream_shows_tool_call_then_tool_result() -> None:
    """The stream carries the model's tool-call chunk, then the tool-result chunk."""
    model = ScriptedModel([ScriptedStep(tool_calls=[("get_weather", {"city": "Oslo"})]), "Done."])
    outcome = await call(Agent(id="a", model=model, tools=[get_weather]), "stream", "Weather?")
    kinds = [t for t in outcome.types if t.startswith("tool-")]
    assert kinds == ["tool-call", "tool-result"]
    result_chunk = next(c for c in outcome.chunks if c.type == "tool-result")
    assert result_chunk.payload["result"] == "21C and sunny in Oslo"


@pytest.mark.parametrize("mode", MODES)
async def test_invalid_arguments_become_an_error_result(mode: str) -> None:
    """Arguments failing pydantic validation are not executed; the model gets the validation error."""
    model = ScriptedModel([ScriptedStep(tool_calls=[("get_weather", {"town": "Paris"})]), "Sorry."])
    result = (await call(Agent(id="a", model=model, tools=[get_weather]), mode, "Weather?")).result
    (outcome,) = result.tool_results
    assert outcome.is_error
    assert "city" in outcome.result
    assert tool_results_sent(model, 1)[0].is_error


@pytest.mark.parametrize("mode", MODES)
async def test_unknown_tool_and_failing_tool_are_reported_to_the_model(mode: str) -> None:
    """An unknown tool name and an exception in a tool become error results; the loop goes on."""

    @tool
    def broken() -> str:
        """Always fails."""
        raise RuntimeError("database down")

    calls = [("nope", {}), ("broken", {})]
    model = ScriptedModel([ScriptedStep(tool_calls=calls), "I could not do it."])
    result = (await call(Agent(id="a", model=model, tools=[broken]), mode, "Go")).result
    errors = [r.result for r in result.tool_results]
    assert all(r.is_error for r in result.tool_results)
    assert "unknown tool 'nope'" in errors[0]
    assert "database down" in errors[1]
    assert result.text == "I could not do it."


@pytest.mark.parametrize("mode", MODES)
async def test_several_calls_run_and_keep_their_order(mode: str) -> None:
    """Several tool calls in one step all run; results come back in call order."""

    @tool
    async def double(x: int) -> int:
        """Double a number."""
        return 2 * x

    calls = [("double", {"x": n}) for n in (1, 2, 3)]
    model = ScriptedModel([ScriptedStep(tool_calls=calls), "2, 4, 6"])
    result = (await call(Agent(id="a", model=model, tools=[double]), mode, "Go")).result
    assert [r.result for r in result.tool_results] == [2, 4, 6]


@pytest.mark.parametrize("mode", MODES)
async def test_max_steps_stops_the_tool_loop(mode: str) -> None:
    """With ``max_steps=2`` the agent stops after two model calls, still asking for tools."""
    step = ScriptedStep(tool_calls=[("get_weather", {"city": "Rome"})])
    model = ScriptedModel([step], repeat_last=True)
    result = (await call(Agent(id="a", model=model, tools=[get_weather]), mode, "Go", max_steps=2)).result
    assert model.calls == 2
    assert result.finish_reason == "tool-calls"
    assert len(result.tool_results) == 2


@pytest.mark.parametrize("mode", MODES)
async def test_client_side_tool_ends_the_loop_with_the_call_pending(mode: str) -> None:
    """A tool without an execute function is left to the caller: the call ends with it pending."""

    class Confirm(BaseModel):
        question: str

    confirm = Tool(name="confirm", description="Ask the user.", input_model=Confirm)
    model = ScriptedModel([ScriptedStep(tool_calls=[("confirm", {"question": "Sure?"})])])
    result = (await call(Agent(id="a", model=model, tools=[confirm]), mode, "Delete it")).result
    assert result.finish_reason == "tool-calls"
    assert result.tool_calls == [ToolCall("call_0_0", "confirm", {"question": "Sure?"})]
    assert result.tool_results == []
    assert model.calls == 1


@pytest.mark.parametrize("mode", MODES)
async def test_tools_see_the_request_context(mode: str) -> None:
    """A tool that takes ``context`` gets the call id and the request context."""
    seen: list[tuple[str, str]] = []

    @tool
    def whoami(context: ToolContext) -> str:
        """Who is asking."""
        seen.append((context.tool_call_id, context.request_context.get("user")))
        return "ok"

    model = ScriptedModel([ScriptedStep(tool_calls=[("whoami", {})]), "done"])
    agent = Agent(id="a", model=model, tools={"whoami": whoami})
    await call(agent, mode, "Go", request_context={"user": "ada"})
    assert seen == [("call_0_0", "ada")]


@pytest.mark.parametrize("mode", MODES)
async def test_pydantic_results_are_sent_as_plain_data(mode: str) -> None:
    """A tool returning a pydantic model has its result dumped to JSON-ready data."""

    def forecast(city: str) -> Forecast:
        """Tomorrow's forecast."""
        return Forecast(city=city, high=25)

    model = ScriptedModel([ScriptedStep(tool_calls=[("forecast", {"city": "Nice"})]), "Warm."])
    result = (await call(Agent(id="a", model=model, tools=[forecast]), mode, "Go")).result
    assert result.tool_results[0].result == {"city": "Nice", "high": 25}


@pytest.mark.parametrize("mode", MODES)
async def test_tool_results_are_stored_on_the_step_message(mode: str) -> None:
    """The step's assistant message carries the tool invocation with its result."""
    model = ScriptedModel([ScriptedStep(tool_calls=[("get_weather", {"city": "Lima"})]), "Fine."])
    result = (await call(Agent(id="a", model=model, tools=[get_weather]), mode, "Go")).result
    first = result.response.messages[0]
    (invocation,) = first.tool_invocations
    assert (invocation.state, invocation.result) == ("result", "21C and sunny in Lima")


class AsyncLookup:
    """Look a term up (an object whose ``__call__`` is async)."""

    async def __call__(self, term: str) -> str:
        return f"found {term}"


@pytest.mark.parametrize("mode", MODES)
async def test_an_object_with_an_async_call_is_awaited(mode: str) -> None:
    """A tool made from an object with an async ``__call__`` returns its awaited result, not a coroutine."""
    lookup = tool(AsyncLookup(), name="lookup")
    model = ScriptedModel([ScriptedStep(tool_calls=[("lookup", {"term": "tides"})]), "Done."])
    result = (await call(Agent(id="a", model=model, tools=[lookup]), mode, "Go")).result
    assert [r.result for r in result.tool_results] == ["found tides"]
    assert lookup.input_model.model_json_schema()["required"] == ["term"]


async def test_a_partial_of_an_async_function_is_awaited() -> None:
    """A ``functools.partial`` over an async function is an async tool too."""

    async def find(term: str, prefix: str) -> str:
        """Find a term."""
        return prefix + term

    lookup = tool(functools.partial(find, prefix="hit: "), name="find")
    model = ScriptedModel([ScriptedStep(tool_calls=[("find", {"term": "moon"})]), "Done."])
    result = await Agent(id="a", model=model, tools=[lookup]).generate("Go")
    assert [r.result for r in result.tool_results] == ["hit: moon"]


def test_an_object_without_a_name_needs_one() -> None:
    """A callable object has no ``__name__``: ``tool()`` asks for ``name=``."""
    with pytest.raises(ConfigurationError, match="name="):
        tool(AsyncLookup())

"""ToolSearchProcessor: BM25 search, loading, thread persistence with a TTL, and the agent loop."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from procflow import Agent, MessageList, RequestContext, ToolCall, ToolContext, tool
from procflow._runner.context import RunContext
from procflow._runner.pipeline import ProcessorPipeline
from procflow._runner.runner import PhaseRunner, StepSettings
from procflow.errors import ConfigurationError
from procflow.memory import THREAD_ID_KEY
from procflow.processors import ToolSearchProcessor
from procflow.processors._tool_search import DEFAULT_TOOL_SEARCH_INSTRUCTIONS, LOAD_TOOL, SEARCH_TOOLS
from procflow.testing import ScriptedModel, run_input_step
from procflow.testing._processors import HookOutcome


@tool
def send_email(to: str, body: str) -> str:
    """Send an email message to a recipient."""
    return f"sent to {to}"


@tool
def get_weather(city: str) -> str:
    """Get the current weather forecast for a city."""
    return f"sunny in {city}"


@tool
def create_github_issue(title: str) -> str:
    """Create an issue in a GitHub repository."""
    return "issue #1"


@tool
def list_calendar_events(day: str) -> str:
    """List calendar events of a day; can email the attendees an email summary."""
    return "[]"


CATALOG = [send_email, get_weather, create_github_issue, list_calendar_events]


class Clock:
    """A manual monotonic clock."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def thread(thread_id: str) -> RequestContext:
    return RequestContext({THREAD_ID_KEY: thread_id})


async def call(outcome: HookOutcome, name: str, **args: Any) -> Any:
    assert outcome.settings is not None
    return await outcome.settings.tools[name].call(args, ToolContext(tool_call_id="call_1"))


def tool_names(outcome: HookOutcome) -> list[str]:
    assert outcome.settings is not None
    return list(outcome.settings.tools)


# -- construction ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"top_k": 0}, "top_k"),
        ({"min_score": -1.0}, "min_score"),
        ({"ttl": 0}, "ttl"),
    ],
)
def test_invalid_options_are_rejected(options: dict[str, Any], message: str) -> None:
    """Out-of-range options raise a ConfigurationError naming the option."""
    with pytest.raises(ConfigurationError, match=message):
        ToolSearchProcessor(CATALOG, **options)


def test_reserved_and_duplicate_names_are_rejected() -> None:
    """A searchable tool may not be named like a meta-tool, and names must be unique."""
    with pytest.raises(ConfigurationError, match="reserved"):
        ToolSearchProcessor({SEARCH_TOOLS: send_email})
    with pytest.raises(ConfigurationError, match="unique"):
        ToolSearchProcessor([send_email, send_email])
    with pytest.raises(ConfigurationError, match="not a Tool"):
        ToolSearchProcessor({"f": print})  # type: ignore[dict-item]


def test_mapping_keys_name_the_tools() -> None:
    """With a mapping, the keys are the names the model searches and loads."""
    processor = ToolSearchProcessor({"mail": send_email, "weather": get_weather})
    assert processor.tool_names == ["mail", "weather"]
    assert processor.search("mail")[0]["name"] == "mail"
    assert processor.id == "tool-search"
    assert ToolSearchProcessor(CATALOG, id="search-2").id == "search-2"


# -- search ---------------------------------------------------------------------------------------------


def test_name_match_ranks_above_description_match() -> None:
    """A tool whose name holds the query term outranks one that only mentions it, even twice."""
    results = ToolSearchProcessor(CATALOG).search("email")
    assert [r["name"] for r in results] == ["send_email", "list_calendar_events"]
    assert results[0]["score"] > results[1]["score"] > 0


def test_exact_name_query_gets_the_biggest_boost() -> None:
    """A query spelling a tool's whole name scores it far above partial matches."""
    processor = ToolSearchProcessor(CATALOG)
    exact = processor.search("send email")[0]
    partial = processor.search("email")[0]
    assert exact["name"] == "send_email"
    assert exact["score"] > partial["score"] + 5


def test_search_splits_camel_case_and_ignores_case() -> None:
    """``GitHubIssue`` finds ``create_github_issue`` (camelCase and case are normalised)."""
    assert ToolSearchProcessor(CATALOG).search("createGithub ISSUE")[0]["name"] == "create_github_issue"


def test_top_k_limits_results() -> None:
    """At most ``top_k`` results are returned."""
    processor = ToolSearchProcessor(CATALOG, top_k=1)
    assert [r["name"] for r in processor.search("email")] == ["send_email"]


def test_min_score_filters_weak_matches() -> None:
    """Results must score above ``min_score``."""
    processor = ToolSearchProcessor(CATALOG, min_score=1.0)
    assert [r["name"] for r in processor.search("email")] == ["send_email"]


def test_no_match_and_stop_characters_give_no_results() -> None:
    """Unrelated words, empty queries and one-letter terms match nothing."""
    processor = ToolSearchProcessor(CATALOG)
    assert processor.search("quantum teleportation") == []
    assert processor.search("") == []
    assert processor.search("a b c") == []


def test_long_descriptions_are_shortened_in_results() -> None:
    """Descriptions longer than 150 characters end with an ellipsis in results."""
    verbose = tool(lambda x: x, name="verbose_tool", description="verbose " + "word " * 60)
    result = ToolSearchProcessor([verbose]).search("verbose")[0]
    assert len(result["description"]) <= 150
    assert result["description"].endswith("…")


def test_ties_keep_catalog_order() -> None:
    """Equal scores keep the order the tools were given in."""
    twins = [tool(lambda: 1, name=f"twin_{i}", description="identical twin tool") for i in range(3)]
    assert [r["name"] for r in ToolSearchProcessor(twins).search("identical")] == [
        "twin_0",
        "twin_1",
        "twin_2",
    ]


@given(query=st.text(alphabet="abcdefghijklmnopqrstuvwxyz _-", max_size=30), top_k=st.integers(1, 5))
def test_results_are_sorted_bounded_and_positive(query: str, top_k: int) -> None:
    """Any query gives at most top_k results, sorted by score, every score above min_score."""
    results = ToolSearchProcessor(CATALOG, top_k=top_k).search(query)
    scores = [r["score"] for r in results]
    assert len(results) <= top_k
    assert scores == sorted(scores, reverse=True)
    assert all(score > 0 for score in scores)


# -- the step hook --------------------------------------------------------------------------------------


async def test_step_offers_meta_tools_and_keeps_agent_tools() -> None:
    """The model sees the meta-tools and the agent's own tools, not the searchable ones."""
    outcome = await run_input_step(ToolSearchProcessor(CATALOG), ["hi"], tools={"own": get_weather})
    assert tool_names(outcome) == [SEARCH_TOOLS, LOAD_TOOL, "own"]


async def test_instructions_are_added_once_per_step() -> None:
    """The instructions become one tagged system message, replaced (not repeated) on each step."""
    ml = MessageList(["hi"])
    ml.add_system("Be brief.")
    runner = PhaseRunner(ProcessorPipeline.build([ToolSearchProcessor(CATALOG)]), RunContext(message_list=ml))
    for step in range(3):
        await runner.run_input_step(StepSettings(step_number=step))
    assert [m.text for m in ml.system_messages] == ["Be brief.", DEFAULT_TOOL_SEARCH_INSTRUCTIONS]
    assert [m.text for m in ml.untagged_system_messages] == ["Be brief."]


async def test_custom_or_no_instructions() -> None:
    """``instructions=`` replaces the system message; ``None`` adds none."""
    custom = await run_input_step(ToolSearchProcessor(CATALOG, instructions="Search first."), ["hi"])
    assert [m.text for m in custom.system_messages] == ["Search first."]
    silent = await run_input_step(ToolSearchProcessor(CATALOG, instructions=None), ["hi"])
    assert silent.system_messages == []


async def test_agent_tool_with_a_meta_tool_name_is_an_error() -> None:
    """An agent tool named ``load_tool`` clashes with the meta-tool: a clear error, not a silent swap."""
    with pytest.raises(ConfigurationError, match="already has a tool named 'load_tool'"):
        await run_input_step(ToolSearchProcessor(CATALOG), ["hi"], tools={LOAD_TOOL: get_weather})


# -- the meta-tools -------------------------------------------------------------------------------------


async def test_search_tools_reports_matches_and_misses() -> None:
    """``search_tools`` returns ranked results, or a message saying nothing matched or no query given."""
    outcome = await run_input_step(ToolSearchProcessor(CATALOG), ["hi"])
    found = await call(outcome, SEARCH_TOOLS, query="weather")
    assert [r["name"] for r in found["results"]] == ["get_weather"]
    assert "load_tool" in found["message"]
    missing = await call(outcome, SEARCH_TOOLS, query="teleport")
    assert missing == {"results": [], "message": "No tools match 'teleport'. Try other or fewer keywords."}
    blank = await call(outcome, SEARCH_TOOLS, query="  ")
    assert blank["results"] == [] and "keywords" in blank["message"]


async def test_loaded_tool_is_offered_from_the_next_step() -> None:
    """After ``load_tool`` the tool appears in the next step's tools, after the others."""
    processor = ToolSearchProcessor(CATALOG)
    first = await run_input_step(processor, ["hi"], request_context=thread("t1"), tools={"own": get_weather})
    result = await call(first, LOAD_TOOL, tool_name="send_email")
    assert result["success"] is True and result["loaded"] == ["send_email"]
    assert "next step" in result["message"]
    second = await run_input_step(processor, ["hi"], request_context=thread("t1"), tools={"own": get_weather})
    assert tool_names(second) == [SEARCH_TOOLS, LOAD_TOOL, "own", "send_email"]
    assert second.settings is not None and second.settings.tools["send_email"] is send_email


async def test_loading_twice_says_already_loaded() -> None:
    """Loading a loaded tool succeeds and says so."""
    processor = ToolSearchProcessor(CATALOG)
    outcome = await run_input_step(processor, ["hi"], request_context=thread("t1"))
    await call(outcome, LOAD_TOOL, tool_name="send_email")
    again = await call(outcome, LOAD_TOOL, tool_name="send_email")
    assert again["success"] is True
    assert again["already_loaded"] == ["send_email"] and again["loaded"] == []
    assert "Already loaded: send_email" in again["message"]


async def test_agent_tools_count_as_loaded() -> None:
    """Asking to load one of the agent's own tools says it is already available."""
    outcome = await run_input_step(ToolSearchProcessor(CATALOG), ["hi"], tools={"own": get_weather})
    result = await call(outcome, LOAD_TOOL, tool_name="own")
    assert result["success"] is True and result["already_loaded"] == ["own"]


async def test_unknown_tool_gets_suggestions() -> None:
    """An unknown name fails with close names suggested and a pointer to ``search_tools``."""
    outcome = await run_input_step(ToolSearchProcessor(CATALOG), ["hi"])
    result = await call(outcome, LOAD_TOOL, tool_name="sendemail")
    assert result["success"] is False and result["not_found"] == ["sendemail"]
    assert "Unknown tool 'sendemail'. Did you mean send_email?" in result["message"]
    nothing = await call(outcome, LOAD_TOOL, tool_name="zzzz")
    assert "Did you mean" not in nothing["message"] and "search_tools" in nothing["message"]


async def test_load_many_reports_each_name() -> None:
    """``tool_names`` loads several at once; duplicates count once; each outcome is reported."""
    outcome = await run_input_step(ToolSearchProcessor(CATALOG), ["hi"])
    await call(outcome, LOAD_TOOL, tool_name="get_weather")
    result = await call(
        outcome,
        LOAD_TOOL,
        tool_names=["send_email", "get_weather", "nope", "send_email"],
        tool_name="send_email",
    )
    assert result["loaded"] == ["send_email"]
    assert result["already_loaded"] == ["get_weather"]
    assert result["not_found"] == ["nope"]
    assert result["success"] is False


async def test_load_without_names_explains_the_arguments() -> None:
    """Calling ``load_tool`` with no name says which arguments to give."""
    outcome = await run_input_step(ToolSearchProcessor(CATALOG), ["hi"])
    result = await call(outcome, LOAD_TOOL, tool_names=[])
    assert result == {"success": False, "message": "Give tool_name (one name) or tool_names (a list)."}


# -- persistence ----------------------------------------------------------------------------------------


async def test_loaded_tools_stay_with_their_thread() -> None:
    """Loaded tools carry over to later requests of the same thread and not to other threads."""
    processor = ToolSearchProcessor(CATALOG)
    outcome = await run_input_step(processor, ["hi"], request_context=thread("a"))
    await call(outcome, LOAD_TOOL, tool_name="get_weather")
    later = await run_input_step(processor, ["again"], request_context=thread("a"))
    other = await run_input_step(processor, ["hi"], request_context=thread("b"))
    assert "get_weather" in tool_names(later)
    assert "get_weather" not in tool_names(other)
    assert processor.loaded_tools("a") == ["get_weather"]


async def test_without_thread_loaded_tools_last_for_the_request() -> None:
    """With no thread id, loads live in the request's state: kept across its steps, gone for the next."""
    processor = ToolSearchProcessor(CATALOG)
    state: dict[str, Any] = {}
    first = await run_input_step(processor, ["hi"], state=state)
    await call(first, LOAD_TOOL, tool_name="get_weather")
    same_request = await run_input_step(processor, ["hi"], state=state, step_number=1)
    next_request = await run_input_step(processor, ["hi"])
    assert "get_weather" in tool_names(same_request)
    assert "get_weather" not in tool_names(next_request)
    assert processor.thread_count == 0


async def test_thread_state_expires_after_ttl_of_inactivity() -> None:
    """A thread unused for longer than ``ttl`` loses its loaded tools; use refreshes the clock."""
    clock = Clock()
    processor = ToolSearchProcessor(CATALOG, ttl=60, clock=clock)
    outcome = await run_input_step(processor, ["hi"], request_context=thread("t"))
    await call(outcome, LOAD_TOOL, tool_name="get_weather")
    clock.now = 50
    await run_input_step(processor, ["hi"], request_context=thread("t"))
    clock.now = 100  # 50 s after the last use: still alive
    assert processor.loaded_tools("t") == ["get_weather"]
    clock.now = 111  # 61 s after the last use
    assert processor.loaded_tools("t") == []
    assert processor.thread_count == 0
    fresh = await run_input_step(processor, ["hi"], request_context=thread("t"))
    assert "get_weather" not in tool_names(fresh)


async def test_ttl_none_never_expires() -> None:
    """``ttl=None`` keeps loaded tools for as long as the processor lives."""
    clock = Clock()
    processor = ToolSearchProcessor(CATALOG, ttl=None, clock=clock)
    outcome = await run_input_step(processor, ["hi"], request_context=thread("t"))
    await call(outcome, LOAD_TOOL, tool_name="get_weather")
    clock.now = 10**9
    assert processor.loaded_tools("t") == ["get_weather"]


async def test_clear_loaded_forgets_one_or_all_threads() -> None:
    """``clear_loaded(thread_id)`` forgets one thread; ``clear_loaded()`` forgets all."""
    processor = ToolSearchProcessor(CATALOG)
    for name in ("a", "b", "c"):
        outcome = await run_input_step(processor, ["hi"], request_context=thread(name))
        await call(outcome, LOAD_TOOL, tool_name="get_weather")
    processor.clear_loaded("a")
    assert processor.loaded_tools("a") == [] and processor.thread_count == 2
    processor.clear_loaded()
    assert processor.thread_count == 0


async def test_meta_tools_have_schemas_for_the_model() -> None:
    """The meta-tools describe their arguments with JSON schema."""
    outcome = await run_input_step(ToolSearchProcessor(CATALOG), ["hi"])
    assert outcome.settings is not None
    search = outcome.settings.tools[SEARCH_TOOLS].spec()
    assert search.parameters["required"] == ["query"]
    load = outcome.settings.tools[LOAD_TOOL].spec()
    assert set(load.parameters["properties"]) == {"tool_name", "tool_names"}


# -- the agent loop -------------------------------------------------------------------------------------


def offered(model: ScriptedModel) -> list[list[str]]:
    return [[spec.name for spec in request.tools] for request in model.requests]


async def test_agent_searches_loads_and_calls_a_tool() -> None:
    """In a real run the model searches, loads, then calls the tool, which appears only once loaded."""
    model = ScriptedModel(
        [
            ToolCall("c1", SEARCH_TOOLS, {"query": "weather"}),
            ToolCall("c2", LOAD_TOOL, {"tool_name": "get_weather"}),
            ToolCall("c3", "get_weather", {"city": "Oslo"}),
            "It is sunny in Oslo.",
        ]
    )
    agent = Agent(id="assistant", model=model, input_processors=[ToolSearchProcessor(CATALOG)])
    result = await agent.generate("Weather in Oslo?", max_steps=5, request_context=thread("t1"))
    assert result.text == "It is sunny in Oslo."
    assert offered(model) == [
        [SEARCH_TOOLS, LOAD_TOOL],
        [SEARCH_TOOLS, LOAD_TOOL],
        [SEARCH_TOOLS, LOAD_TOOL, "get_weather"],
        [SEARCH_TOOLS, LOAD_TOOL, "get_weather"],
    ]
    found, loaded, called = (r.result for r in result.tool_results)
    assert found["results"][0]["name"] == "get_weather"
    assert loaded["loaded"] == ["get_weather"]
    assert called == "sunny in Oslo"
    assert all([m.text for m in p].count(DEFAULT_TOOL_SEARCH_INSTRUCTIONS) == 1 for p in model.prompts)


async def test_agent_thread_keeps_loaded_tools_for_the_next_call() -> None:
    """A later call in the same thread starts with the loaded tool; another thread does not."""
    processor = ToolSearchProcessor(CATALOG)
    model = ScriptedModel([ToolCall("c1", LOAD_TOOL, {"tool_name": "send_email"}), "Loaded.", "Hi.", "Hi."])
    agent = Agent(id="assistant", model=model, input_processors=[processor])
    await agent.generate("load email", request_context=thread("t1"))
    await agent.generate("again", request_context=thread("t1"))
    await agent.generate("other", request_context=thread("t2"))
    assert offered(model)[2] == [SEARCH_TOOLS, LOAD_TOOL, "send_email"]
    assert offered(model)[3] == [SEARCH_TOOLS, LOAD_TOOL]

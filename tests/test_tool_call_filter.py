"""ToolCallFilter: tool calls and results removed from the model's prompt, never from storage."""

from __future__ import annotations

from typing import Any

import pytest
from _agent_support import MODES, call
from guard_seams_support import SHAPES, listed

from procflow import Agent, Message, MessageContent, MessageList, TextPart, ToolCall, ToolInvocationPart, tool
from procflow._messages import Prompt, StepResult, StepStartPart
from procflow._runner.context import RunContext
from procflow._runner.pipeline import ProcessorPipeline
from procflow._runner.runner import PhaseRunner, StepSettings
from procflow.errors import ConfigurationError
from procflow.models import PromptText, PromptToolCall, PromptToolResult
from procflow.processors import ProcessLLMRequestArgs, ToolCallFilter
from procflow.testing import ScriptedModel, ScriptedStep, run_llm_request


def invocation(
    call_id: str, name: str = "weather", result: Any = "sunny", **extra: Any
) -> ToolInvocationPart:
    return ToolInvocationPart(
        tool_call_id=call_id, tool_name=name, args={"city": "Oslo"}, state="result", result=result, **extra
    )


def assistant(*parts: Any) -> Message:
    return Message(role="assistant", content=MessageContent(parts=list(parts)))


def tool_ids(prompt: Prompt | None) -> list[str]:
    assert prompt is not None
    return [
        p.tool_call_id for m in prompt for p in m.content if isinstance(p, PromptToolCall | PromptToolResult)
    ]


HISTORY = [
    Message.user("weather in Oslo?"),
    assistant(TextPart(text="Let me check."), invocation("old_w")),
    assistant(invocation("old_s", name="search", result={"hits": 3})),
    Message.assistant("It is sunny."),
]


async def test_history_tool_traffic_is_removed_from_the_prompt_only() -> None:
    """Calls and results from history leave the prompt; the stored messages keep them."""
    outcome = await run_llm_request(ToolCallFilter(), ["and tomorrow?"], history=HISTORY)
    assert tool_ids(outcome.prompt) == []
    assert outcome.prompt is not None
    assert [m.role for m in outcome.prompt] == ["user", "assistant", "assistant", "user"]
    assert [m.text for m in outcome.prompt] == [
        "weather in Oslo?",
        "Let me check.",
        "It is sunny.",
        "and tomorrow?",
    ]
    stored = [p.tool_call_id for m in outcome.message_list.all for p in m.tool_invocations]
    assert stored == ["old_w", "old_s"]


async def test_exclude_filters_only_the_named_tools() -> None:
    """With exclude, only those tools' calls and results are removed."""
    outcome = await run_llm_request(ToolCallFilter(exclude=["search"]), ["and tomorrow?"], history=HISTORY)
    assert tool_ids(outcome.prompt) == ["old_w", "old_w"]


async def test_current_run_tool_traffic_is_kept_by_default() -> None:
    """Without filter_after_tool_steps, the tools called in this run stay visible to the model."""
    outcome = await run_llm_request(
        ToolCallFilter(), ["weather now?"], history=HISTORY, response=[assistant(invocation("now_w"))]
    )
    assert tool_ids(outcome.prompt) == ["now_w", "now_w"]


RUN = assistant(
    StepStartPart(),
    invocation("step1"),
    StepStartPart(),
    invocation("step2", name="search"),
    StepStartPart(),
    invocation("step3"),
)
STEPS = [
    StepResult(0, tool_calls=[ToolCall("step1", "weather")]),
    StepResult(1, tool_calls=[ToolCall("step2", "search")]),
    StepResult(2, tool_calls=[ToolCall("step3", "weather")]),
]


@pytest.mark.parametrize(
    ("keep", "expected"),
    [(0, []), (1, ["step3"]), (2, ["step2", "step3"]), (5, ["step1", "step2", "step3"])],
)
async def test_filter_after_tool_steps_keeps_the_last_n_tool_steps(keep: int, expected: list[str]) -> None:
    """filter_after_tool_steps=n filters inside the run too, keeping its last n tool steps."""
    outcome = await run_llm_request(
        ToolCallFilter(filter_after_tool_steps=keep), ["go"], history=HISTORY, response=[RUN], steps=STEPS
    )
    assert tool_ids(outcome.prompt) == [i for i in expected for _ in range(2)]


async def test_tool_steps_are_found_from_messages_without_step_records() -> None:
    """Step boundaries in the response messages delimit tool steps when no step records are given."""
    outcome = await run_llm_request(
        ToolCallFilter(filter_after_tool_steps=1), ["go"], history=HISTORY, response=[RUN]
    )
    assert tool_ids(outcome.prompt) == ["step3", "step3"]


async def test_preserve_model_output_keeps_a_compact_record() -> None:
    """Each removed completed call becomes a short text record of its result; raw args are gone."""
    outcome = await run_llm_request(ToolCallFilter(preserve_model_output=True), ["next"], history=HISTORY)
    assert outcome.prompt is not None
    assert [m.text for m in outcome.prompt if m.role == "assistant"] == [
        "Let me check.[weather result: sunny]",
        '[search result: {"hits":3}]',
        "It is sunny.",
    ]
    assert "Oslo" not in str([m.model_dump() for m in outcome.prompt if m.role == "assistant"])
    assert all(m.role != "tool" for m in outcome.prompt)


async def test_preserved_records_mark_errors_and_are_cut_to_length() -> None:
    """Error results are marked as errors; long outputs are cut with an ellipsis."""
    history = [
        assistant(invocation("e1", result="boom", is_error=True)),
        assistant(invocation("l1", result="x" * 50)),
    ]
    outcome = await run_llm_request(
        ToolCallFilter(preserve_model_output=True, max_output_chars=10), ["next"], history=history
    )
    assert outcome.prompt is not None
    assert [m.text for m in outcome.prompt][:2] == ["[weather error: boom]", "[weather result: xxxxxxxxx…]"]


async def test_preserved_record_is_the_stored_model_output() -> None:
    """A result stored with the tool's model output keeps only that record: no raw result, no raw args."""
    outcome = await run_llm_request(
        ToolCallFilter(preserve_model_output=True),
        ["next"],
        history=[assistant(invocation("w1", result={"raw": "internal-7"}, model_output="summary: sunny"))],
    )
    assert outcome.prompt is not None
    assert outcome.prompt[0].text == "[weather result: summary: sunny]"
    assert "internal-7" not in str(outcome.prompt) and "Oslo" not in str(outcome.prompt)


async def test_prompt_without_tool_traffic_is_left_alone() -> None:
    """When nothing is filtered the hook returns nothing and the prompt is unchanged."""
    outcome = await run_llm_request(
        ToolCallFilter(), ["hello"], history=[Message.user("hi"), Message.assistant("hey")]
    )
    assert outcome.prompt is not None
    assert [m.text for m in outcome.prompt] == ["hi", "hey", "hello"]


async def test_unchanged_prompt_messages_keep_their_identity() -> None:
    """Messages the filter does not touch are passed on as the very same objects."""
    seen: list[Prompt] = []

    class Recorder:
        id = "recorder"

        def process_llm_request(self, args: ProcessLLMRequestArgs) -> None:
            seen.append(list(args.prompt))

    ml = MessageList(HISTORY, source="memory")
    ml.add("and tomorrow?")
    runner = PhaseRunner(ProcessorPipeline.build([Recorder(), ToolCallFilter()]), RunContext(message_list=ml))
    outcome = await runner.run_llm_request(ml.to_prompt(), StepSettings(step_number=0))
    before = seen[0]
    after = outcome.prompt
    untouched = [
        m for m in before if not any(isinstance(p, PromptToolCall | PromptToolResult) for p in m.content)
    ]
    assert all(any(m is kept for kept in after) for m in untouched)
    assert all(isinstance(p, PromptText) for m in after for p in m.content)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"exclude": "search"}, "list of tool names"),
        ({"filter_after_tool_steps": -1}, "filter_after_tool_steps"),
        ({"filter_after_tool_steps": 1.5}, "filter_after_tool_steps"),
        ({"max_output_chars": 0}, "max_output_chars"),
    ],
)
def test_bad_options_are_rejected(options: dict[str, Any], match: str) -> None:
    """Invalid options raise ConfigurationError saying what to pass instead."""
    with pytest.raises(ConfigurationError, match=match):
        ToolCallFilter(**options)


@pytest.mark.parametrize("mode", MODES)
async def test_agent_model_never_sees_old_tool_traffic_but_sees_its_own(mode: str) -> None:
    """In an agent, history tool calls leave every prompt; the run's own call and result reach step 2."""

    @tool
    def weather(city: str) -> str:
        """Current weather for a city."""
        return f"rain in {city}"

    model = ScriptedModel([ScriptedStep(tool_calls=[("weather", {"city": "Bergen"})]), "Rain in Bergen."])
    agent = Agent(id="a", model=model, tools=[weather], input_processors=[ToolCallFilter()])
    result = (await call(agent, mode, [*HISTORY, "And Bergen?"])).result
    assert result.text == "Rain in Bergen."
    assert tool_ids(model.prompts[0]) == []
    assert tool_ids(model.prompts[1]) == ["call_0_0", "call_0_0"]
    stored = [p.tool_call_id for m in result.response.message_list.all for p in m.tool_invocations]
    assert stored == ["old_w", "old_s", "call_0_0"]


def test_default_id_and_custom_id() -> None:
    """The seed's id by default; id= sets another so two can share a pipeline."""
    assert ToolCallFilter().id == "tool-call-filter"
    assert ToolCallFilter(id="second").id == "second"


# -- the current turn of a client that runs the tools itself (the gateway's requests) --------------

LANGS = {
    "en": ("Where is order A-1?", "status: shipped to London"),
    "fr": ("Où est la commande A-1 ?", "statut : expédiée à Paris"),
    "es": ("¿Dónde está el pedido A-1?", "estado: enviado a Madrid"),
    "zh": ("订单 A-1 在哪里？", "状态：已发往北京"),
}


def client_turn(question: str, *results: tuple[str, str]) -> list[Message]:
    """An earlier turn with tool traffic, then ``question`` and the client's tool rounds for it: each
    an assistant message calling one tool, then the ``tool`` message with its result."""
    turn: list[Message] = [*HISTORY, Message.user(question)]
    for call_id, result in results:
        call = ToolInvocationPart(tool_call_id=call_id, tool_name="lookup", args={"q": "A-1"}, state="call")
        turn.append(assistant(call))
        done = call.model_copy(update={"state": "result", "result": result})
        turn.append(Message(role="tool", content=MessageContent(parts=[done])))
    return turn


@pytest.mark.parametrize("where", ["input", "memory"])
async def test_tool_traffic_after_the_last_user_message_is_the_current_turn(where: str) -> None:
    """The call the model just made and the result the client sends back stay, whether the whole
    conversation is the new input or memory recalled it up to the call; older turns are filtered."""
    conversation = client_turn("where is A-1?", ("call_9", "status: shipped"))
    if where == "input":
        outcome = await run_llm_request(ToolCallFilter(), conversation)
    else:
        outcome = await run_llm_request(ToolCallFilter(), conversation[-1:], history=conversation[:-1])
    assert tool_ids(outcome.prompt) == ["call_9", "call_9"]
    assert outcome.prompt is not None and outcome.prompt[-1].role == "tool"


@pytest.mark.parametrize(("keep", "expected"), [(None, ["r1", "r2"]), (1, ["r2"]), (0, [])])
async def test_filter_after_tool_steps_counts_the_client_rounds_as_tool_steps(
    keep: int | None, expected: list[str]
) -> None:
    """Each assistant message calling tools after the last user message is a tool step of the turn."""
    conversation = client_turn("where is A-1?", ("r1", "not found"), ("r2", "status: shipped"))
    outcome = await run_llm_request(ToolCallFilter(filter_after_tool_steps=keep), conversation)
    assert tool_ids(outcome.prompt) == [i for i in expected for _ in range(2)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("lang", sorted(LANGS))
async def test_a_client_tool_round_reaches_the_model_as_the_agents_own_loop_does(
    mode: str, shape: str, lang: str
) -> None:
    """One model step per call with the client running the tool sends the model the same prompt as the
    agent running the tool itself in one call: the current turn's call and result, no older traffic —
    listed directly or inside a workflow."""
    question, found = LANGS[lang]

    @tool
    def lookup(q: str) -> str:
        """Look an order up."""
        return found

    def filters() -> list[Any]:
        return [ToolCallFilter()]

    own = ScriptedModel([ScriptedStep(tool_calls=[("lookup", {"q": "A-1"})]), "ok"])
    agent = Agent(id="a", model=own, tools=[lookup], input_processors=listed(shape, filters))
    await call(agent, mode, [*HISTORY, question])
    client = ScriptedModel(["ok"])
    gateway_like = Agent(id="a", model=client, input_processors=listed(shape, filters))
    await call(gateway_like, mode, client_turn(question, ("call_0_0", found)), max_steps=1)

    def shown(prompt: Prompt) -> list[tuple[str, list[Any]]]:
        return [(m.role, [p.model_dump() for p in m.content]) for m in prompt]

    assert shown(client.prompts[0]) == shown(own.prompts[1])
    assert tool_ids(client.prompts[0]) == ["call_0_0", "call_0_0"]

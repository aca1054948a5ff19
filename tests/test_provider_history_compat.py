"""ProviderHistoryCompat: prompt rewrites per provider, recovery from known rejections, custom rules."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from procflow import (
    Agent,
    Chunk,
    Message,
    MessageContent,
    MessageList,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolInvocationPart,
)
from procflow._messages.prompt import Prompt
from procflow._runner.context import RunContext
from procflow.errors import APICallError, ConfigurationError
from procflow.models import (
    ModelRequest,
    ModelResponse,
    PromptMessage,
    PromptReasoning,
    PromptText,
    PromptToolCall,
    PromptToolResult,
)
from procflow.processors import CompatRule, ProcessAPIErrorArgs, ProviderHistoryCompat
from procflow.processors._base import make_abort
from procflow.processors._compat_rules import DEFAULT_COMPAT_RULES
from procflow.testing import ScriptedModel, run_api_error, run_llm_request

ANTHROPIC_ID_ERROR = APICallError(
    "messages.1.content.1.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
    status_code=400,
    error_type="invalid_request_error",
)


class FakeModel:
    """Just enough of a LanguageModel to carry a provider name."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.model_id = "fake"

    async def generate(self, request: ModelRequest) -> ModelResponse:
        raise NotImplementedError

    def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        raise NotImplementedError


def tool_turn(
    call_id: str, *, text: str = "Let me check.", reasoning: ReasoningPart | None = None
) -> Message:
    parts: list[Any] = [reasoning] if reasoning else []
    parts += [
        TextPart(text=text),
        ToolInvocationPart(tool_call_id=call_id, tool_name="lookup", state="result", result="42"),
    ]
    return Message(role="assistant", content=MessageContent(parts=parts))


def call_ids(prompt: Prompt) -> list[str]:
    return [
        p.tool_call_id for m in prompt for p in m.content if isinstance(p, PromptToolCall | PromptToolResult)
    ]


async def rewrite(messages: list[Any], model_provider: str | None, **options: Any) -> Prompt:
    model = FakeModel(model_provider) if model_provider else None
    outcome = await run_llm_request(ProviderHistoryCompat(**options), messages, model=model)
    assert outcome.prompt is not None
    return outcome.prompt


# -- tool-call ids --------------------------------------------------------------------------------------


async def test_anthropic_gets_valid_tool_call_ids() -> None:
    """Ids with characters Anthropic rejects are rewritten, the same way in the call and its result."""
    prompt = await rewrite(["q", tool_turn("call:1/abc"), tool_turn("ok_id-2")], "anthropic")
    ids = call_ids(prompt)
    assert ids[0] == ids[1] != "call:1/abc"
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]+", i) for i in ids)
    assert ids[2:] == ["ok_id-2", "ok_id-2"]


async def test_prompt_rewrites_leave_stored_messages_alone() -> None:
    """The rewrite is transient: the stored messages keep their original ids."""
    outcome = await run_llm_request(
        ProviderHistoryCompat(), ["q", tool_turn("call:1")], model=FakeModel("anthropic")
    )
    assert outcome.message_list.all[1].tool_invocations[0].tool_call_id == "call:1"


async def test_other_providers_keep_their_ids() -> None:
    """OpenAI accepts ``call:1``: its prompt is not touched."""
    prompt = await rewrite(["q", tool_turn("call:1")], "openai")
    assert call_ids(prompt) == ["call:1", "call:1"]


async def test_mistral_gets_nine_character_ids() -> None:
    """Mistral ids become 9 letters/digits, distinct per original id; valid ones stay."""
    prompt = await rewrite(
        ["q", tool_turn("call_abc"), tool_turn("call_abd"), tool_turn("Abc123XyZ")], "mistral"
    )
    ids = call_ids(prompt)
    assert all(re.fullmatch(r"[a-zA-Z0-9]{9}", i) for i in ids)
    assert ids[0] == ids[1] and ids[2] == ids[3] and ids[0] != ids[2]
    assert ids[4] == "Abc123XyZ"


async def test_openai_ids_are_capped_at_40_characters() -> None:
    """OpenAI rejects tool-call ids over 40 characters; long ones are shortened, distinctly."""
    long_a, long_b = "toolu_" + "a" * 60, "toolu_" + "a" * 59 + "b"
    ids = call_ids(await rewrite(["q", tool_turn(long_a), tool_turn(long_b)], "openai"))
    assert all(len(i) <= 40 for i in ids)
    assert len(set(ids)) == 2


@given(st.lists(st.text(min_size=0, max_size=20), min_size=1, max_size=8, unique=True))
def test_anthropic_id_rewrite_is_valid_and_injective(originals: list[str]) -> None:
    """Any set of distinct ids maps to distinct ids Anthropic accepts."""
    rule = next(r for r in DEFAULT_COMPAT_RULES if r.name == "anthropic-tool-call-id")
    assert rule.rewrite_prompt is not None
    prompt = [
        PromptMessage(role="assistant", content=[PromptToolCall(tool_call_id=i, tool_name="t")])
        for i in originals
    ]
    ids = call_ids(rule.rewrite_prompt(prompt) or prompt)
    assert len(set(ids)) == len(originals)
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]+", i) for i in ids)


# -- reasoning and empty text ---------------------------------------------------------------------------


async def test_anthropic_drops_unsigned_reasoning_only() -> None:
    """Anthropic keeps signed thinking and loses thinking without a signature."""
    unsigned = Message(
        role="assistant", content=MessageContent(parts=[ReasoningPart(text="hmm"), TextPart(text="A")])
    )
    signed = Message(
        role="assistant",
        content=MessageContent(parts=[ReasoningPart(text="ok", signature="sig"), TextPart(text="B")]),
    )
    prompt = await rewrite(["q", unsigned, "more", signed], "anthropic")
    reasoning = [p for m in prompt for p in m.content if isinstance(p, PromptReasoning)]
    assert [r.text for r in reasoning] == ["ok"]


async def test_deepseek_gets_no_reasoning_and_no_reasoning_only_turns() -> None:
    """DeepSeek rejects replayed reasoning: it is removed, and a turn holding only reasoning goes too."""
    only = Message(role="assistant", content=MessageContent(parts=[ReasoningPart(text="thinking")]))
    mixed = Message(
        role="assistant", content=MessageContent(parts=[ReasoningPart(text="x"), TextPart(text="A")])
    )
    prompt = await rewrite(["q", only, "again", mixed], "deepseek")
    assert [(m.role, m.text) for m in prompt] == [("user", "q"), ("user", "again"), ("assistant", "A")]


async def test_blank_assistant_text_is_dropped_for_every_provider() -> None:
    """Whitespace-only assistant text and the turns it leaves empty are removed, for any provider."""
    blank = Message.assistant("  \n ")
    prompt = await rewrite(["q", blank, "again", tool_turn("c1", text=" ")], "ollama")
    assert [m.role for m in prompt] == ["user", "user", "assistant", "tool"]
    assert prompt[2].content == [PromptToolCall(tool_call_id="c1", tool_name="lookup")]


async def test_prompt_without_problems_is_returned_unchanged() -> None:
    """When no rule changes anything, the processor leaves the prompt as it was."""
    outcome = await run_llm_request(ProviderHistoryCompat(), ["q", "r"], model=FakeModel("anthropic"))
    assert outcome.prompt == [
        PromptMessage(role="user", content=[PromptText(text="q")]),
        PromptMessage(role="user", content=[PromptText(text="r")]),
    ]


# -- provider matching ----------------------------------------------------------------------------------


async def test_provider_names_match_case_insensitively_up_to_the_dot() -> None:
    """``Anthropic.messages`` counts as ``anthropic``."""
    prompt = await rewrite(["q", tool_turn("call:1")], "Anthropic.messages")
    assert call_ids(prompt)[0] != "call:1"


async def test_provider_option_overrides_the_model() -> None:
    """``provider=`` applies that provider's rules even when the model is unknown."""
    prompt = await rewrite(["q", tool_turn("call:1")], None, provider="anthropic")
    assert call_ids(prompt)[0] != "call:1"


async def test_unknown_provider_gets_only_universal_rules() -> None:
    """Without a provider, only rules for every provider apply."""
    prompt = await rewrite(["q", tool_turn("call:1", text=" ")], None)
    assert call_ids(prompt) == ["call:1", "call:1"]
    assert not any(isinstance(p, PromptText) for p in prompt[1].content)


# -- error recovery -------------------------------------------------------------------------------------


async def test_recognised_rejection_activates_the_rule_and_retries() -> None:
    """An Anthropic id rejection from a provider the rule did not cover turns the rule on, then retries."""
    processor, state = ProviderHistoryCompat(), {}
    messages = ["q", tool_turn("call:1")]
    before = await run_llm_request(processor, messages, model=FakeModel("bedrock"), state=state)
    assert before.prompt is not None and call_ids(before.prompt)[0] == "call:1"
    outcome = await run_api_error(processor, ANTHROPIC_ID_ERROR, messages, state=state)
    assert outcome.retry is True
    assert outcome.message_list.all[1].tool_invocations[0].tool_call_id == "call:1"  # rewrite, no mend
    after = await run_llm_request(processor, messages, model=FakeModel("bedrock"), state=state)
    assert after.prompt is not None and re.fullmatch(r"[a-zA-Z0-9_-]+", call_ids(after.prompt)[0])


async def test_error_processor_alone_mends_the_stored_messages() -> None:
    """When the processor does not see prompts (error processors only), it mends the stored ids."""
    outcome = await run_api_error(ProviderHistoryCompat(), ANTHROPIC_ID_ERROR, ["q", tool_turn("call:1")])
    assert outcome.retry is True
    new_id = outcome.message_list.all[1].tool_invocations[0].tool_call_id
    assert new_id != "call:1" and re.fullmatch(r"[a-zA-Z0-9_-]+", new_id)


async def test_each_rule_retries_once_per_request() -> None:
    """The same rejection again in the same request is left to other error processors."""
    processor, state = ProviderHistoryCompat(), {}
    first = await run_api_error(processor, ANTHROPIC_ID_ERROR, ["q"], state=state)
    second = await run_api_error(processor, ANTHROPIC_ID_ERROR, ["q"], state=state)
    fresh = await run_api_error(processor, ANTHROPIC_ID_ERROR, ["q"])
    assert (first.retry, second.retry, fresh.retry) == (True, False, True)


async def test_unknown_errors_and_disabled_recovery_do_not_retry() -> None:
    """Errors no rule knows are not retried; ``retry_on_error=False`` never retries."""
    unknown = await run_api_error(
        ProviderHistoryCompat(), APICallError("bad model id", status_code=404), ["q"]
    )
    disabled = await run_api_error(ProviderHistoryCompat(retry_on_error=False), ANTHROPIC_ID_ERROR, ["q"])
    assert unknown.retry is False and disabled.retry is False


async def test_patterns_are_searched_in_body_and_plain_exceptions() -> None:
    """Rules see the response body of an APICallError and the text of any other exception."""
    in_body = APICallError(
        "HTTP 400",
        status_code=400,
        response_body='{"message": "Tool call id was call_1 but must be a-z, A-Z, 0-9, with a length of 9."}',
    )
    plain = ValueError("The reasoning_content is for display only. Please remove the reasoning_content.")
    assert (await run_api_error(ProviderHistoryCompat(), in_body, ["q"])).retry is True
    assert (await run_api_error(ProviderHistoryCompat(), plain, ["q"])).retry is True


async def test_mend_that_removes_messages_removes_them() -> None:
    """A mend returning fewer messages removes the others from the message list."""
    error = APICallError("messages: text content blocks must contain non-whitespace text", status_code=400)
    outcome = await run_api_error(ProviderHistoryCompat(), error, ["q", Message.assistant(" "), "again"])
    assert [m.text for m in outcome.message_list.all] == ["q", "again"]


def api_error_args(error: Exception, messages: list[Any]) -> ProcessAPIErrorArgs:
    ctx = RunContext(message_list=MessageList(messages))
    return ProcessAPIErrorArgs(
        error=error,
        messages=ctx.message_list.all,
        step_number=0,
        steps=[],
        abort=make_abort("provider-history-compat"),
        state={},
        retry_count=0,
        request_context=ctx.request_context,
        message_list=ctx.message_list,
        writer=None,
        send_signal=ctx.signal_sender("provider-history-compat"),
        processor_id="provider-history-compat",
    )


async def test_retry_metadata_names_the_rules() -> None:
    """The retry result names the matched rules and those that mended stored messages."""
    args = api_error_args(ANTHROPIC_ID_ERROR, ["q", tool_turn("call:1")])
    result = ProviderHistoryCompat().process_api_error(args)
    assert result is not None and result.retry
    assert result.metadata == {"rules": ["anthropic-tool-call-id"], "mended": ["anthropic-tool-call-id"]}


@pytest.mark.parametrize(
    ("message", "rule"),
    [
        (
            "messages.2.content.0.tool_result.tool_use_id: String should match pattern",
            "anthropic-tool-call-id",
        ),
        ("Tool call id was call_123 but must be a-z, A-Z, 0-9, with a length of 9.", "mistral-tool-call-id"),
        (
            "Invalid 'messages[1].tool_calls[0].id': string too long. Expected maximum 40",
            "openai-tool-call-id-length",
        ),
        ("Invalid 'messages[2].tool_call_id': string too long.", "openai-tool-call-id-length"),
        ("messages.1.content.0.thinking.signature: Field required", "anthropic-unsigned-reasoning"),
        ("Please remove the reasoning_content from your input messages.", "strip-reasoning"),
        ("reasoning parts are not supported by this model", "strip-reasoning"),
        ("messages.3: all messages must have non-empty content", "drop-empty-assistant-text"),
        ("text content blocks must be non-empty", "drop-empty-assistant-text"),
    ],
)
def test_built_in_rules_recognise_their_rejections(message: str, rule: str) -> None:
    """Each built-in rule recognises the provider's wording of its rejection."""
    result = ProviderHistoryCompat().process_api_error(
        api_error_args(APICallError(message, status_code=400), ["q"])
    )
    assert result is not None and result.metadata["rules"] == [rule]


# -- custom rules ---------------------------------------------------------------------------------------


def shout(prompt: Prompt) -> Prompt | None:
    return [
        m.model_copy(update={"content": [PromptText(text=m.text.upper())]}) if m.role == "user" else m
        for m in prompt
    ]


async def test_additional_rules_run_after_the_built_ins() -> None:
    """User rules are applied for their providers, after the defaults."""
    rule = CompatRule(name="shout", providers=("acme",), rewrite_prompt=shout)
    prompt = await rewrite(["hello"], "acme", additional_rules=[rule])
    assert prompt[0].text == "HELLO"
    assert (await rewrite(["hello"], "other", additional_rules=[rule]))[0].text == "hello"


async def test_custom_rule_recovers_from_its_error() -> None:
    """A user rule with an error pattern and a mend removes and appends stored messages, then retries."""
    rule = CompatRule(
        name="no-secrets",
        providers=(),
        error_patterns=(r"contains a forbidden word",),
        mend_messages=lambda messages: [
            *[m for m in messages if "secret" not in m.text],
            Message.user("(a message was removed)"),
        ],
    )
    error = APICallError("HTTP 400: prompt contains a forbidden word", status_code=400)
    processor = ProviderHistoryCompat(rules=[rule])
    outcome = await run_api_error(processor, error, ["a secret", "hello"])
    assert outcome.retry is True
    assert [m.text for m in outcome.message_list.all] == ["hello", "(a message was removed)"]
    assert (await rewrite(["a secret"], "acme", rules=[rule]))[0].text == "a secret"  # no prompt rewrite


async def test_reasoning_mend_keeps_the_answer_text() -> None:
    """Mending a reasoning rejection drops stored reasoning but keeps the turn's text."""
    mixed = Message(
        role="assistant", content=MessageContent(parts=[ReasoningPart(text="x"), TextPart(text="A")])
    )
    error = APICallError("Please remove the reasoning_content from your input messages.", status_code=400)
    outcome = await run_api_error(ProviderHistoryCompat(), error, ["q", mixed])
    assert [p.type for p in outcome.message_list.all[1].content.parts] == ["text"]


async def test_rules_option_replaces_the_defaults() -> None:
    """``rules=[]`` turns every built-in rule off."""
    prompt = await rewrite(["q", tool_turn("call:1")], "anthropic", rules=[])
    assert call_ids(prompt)[0] == "call:1"


def test_bad_rules_are_rejected() -> None:
    """Rules need a name and an action; names are unique; providers is a tuple."""
    with pytest.raises(ConfigurationError, match="does nothing"):
        CompatRule(name="empty")
    with pytest.raises(ConfigurationError, match="needs a name"):
        CompatRule(name="", rewrite_prompt=shout)
    with pytest.raises(ConfigurationError, match="tuple"):
        CompatRule(name="x", providers="anthropic", rewrite_prompt=shout)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="unique"):
        ProviderHistoryCompat(additional_rules=[CompatRule(name="strip-reasoning", rewrite_prompt=shout)])
    with pytest.raises(ConfigurationError, match="CompatRule objects"):
        ProviderHistoryCompat(rules=[object()])  # type: ignore[list-item]


def test_ids_and_defaults() -> None:
    """The default id is ``provider-history-compat``; every built-in rule has a description."""
    assert ProviderHistoryCompat().id == "provider-history-compat"
    assert ProviderHistoryCompat(id="compat-2").id == "compat-2"
    assert all(rule.description for rule in DEFAULT_COMPAT_RULES)


# -- the agent loop -------------------------------------------------------------------------------------


def lookup(query: str) -> str:
    """Look something up."""
    return "42"


def valid_anthropic_ids(prompt: Prompt) -> bool:
    return all(re.fullmatch(r"[a-zA-Z0-9_-]+", i) for i in call_ids(prompt))


async def test_agent_sends_anthropic_valid_ids_and_stores_the_originals() -> None:
    """With an Anthropic model, the follow-up prompt carries valid ids while the stored ids stay."""
    model = ScriptedModel(
        [ToolCall("call:1", "lookup", {"query": "answer"}), "It is 42."], provider="anthropic"
    )
    agent = Agent(id="a", model=model, tools=[lookup], input_processors=[ProviderHistoryCompat()])
    result = await agent.generate("What is the answer?")
    assert result.text == "It is 42."
    assert call_ids(model.prompts[1]) != ["call:1", "call:1"] and valid_anthropic_ids(model.prompts[1])
    assert result.tool_calls[0].tool_call_id == "call:1"
    assert result.response.messages[0].tool_invocations[0].tool_call_id == "call:1"


async def test_agent_recovers_from_a_rejection_and_retries_once() -> None:
    """A provider the rule did not cover rejects the ids; the rule turns on and the retried call passes."""

    def answer(request: ModelRequest) -> str:
        assert valid_anthropic_ids(request.prompt)
        return "It is 42."

    model = ScriptedModel(
        [ToolCall("call:1", "lookup", {"query": "answer"}), ANTHROPIC_ID_ERROR, answer], provider="bedrock"
    )
    agent = Agent(id="a", model=model, tools=[lookup], input_processors=[ProviderHistoryCompat()])
    result = await agent.generate("What is the answer?")
    assert result.text == "It is 42."
    assert model.calls == 3
    assert call_ids(model.prompts[1]) == ["call:1", "call:1"]


async def test_agent_gives_up_when_the_rejection_repeats() -> None:
    """If the provider rejects again after the fix, the error reaches the caller."""
    model = ScriptedModel([ToolCall("call:1", "lookup", {}), ANTHROPIC_ID_ERROR, ANTHROPIC_ID_ERROR])
    agent = Agent(id="a", model=model, tools=[lookup], error_processors=[ProviderHistoryCompat()])
    with pytest.raises(APICallError, match="should match pattern"):
        await agent.generate("What is the answer?")
    assert model.calls == 3


async def test_agent_error_processor_alone_mends_the_history() -> None:
    """As an error processor only, the compat processor mends the stored ids before the retry."""
    model = ScriptedModel([ToolCall("call:1", "lookup", {"query": "x"}), ANTHROPIC_ID_ERROR, "It is 42."])
    agent = Agent(id="a", model=model, tools=[lookup], error_processors=[ProviderHistoryCompat()])
    result = await agent.generate("What is the answer?")
    assert result.text == "It is 42."
    assert valid_anthropic_ids(model.prompts[2]) and call_ids(model.prompts[2])[0] != "call:1"
    stored = result.response.messages[0].tool_invocations[0].tool_call_id
    assert stored == call_ids(model.prompts[2])[0]

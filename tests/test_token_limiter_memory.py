"""TokenLimiter(trim_mode="memory-only"): trims recalled history only, with hysteresis and a callback."""

from __future__ import annotations

from typing import Any

import pytest
from _agent_support import MODES, call
from hypothesis import given, settings
from hypothesis import strategies as st

from procflow import Agent, Message, MessageContent, RequestContext, TextPart, ToolInvocationPart, tool
from procflow._messages import Prompt
from procflow.errors import ConfigurationError
from procflow.processors import ProcessInputArgs, TiktokenCounter, TokenLimiter
from procflow.testing import ScriptedModel, ScriptedStep, run_llm_request

COUNTER = TiktokenCounter()
LONG_INPUT = "Here is my whole order history, please read it carefully: " + "item, " * 150


class Recall:
    """Stands in for memory's history processor: adds stored messages under source ``memory``."""

    id = "test-recall"

    def __init__(self, store: list[Message], forgotten: set[str] | None = None) -> None:
        self.store = store
        self.forgotten = forgotten if forgotten is not None else set()

    def process_input(self, args: ProcessInputArgs) -> None:
        recalled = [m for m in self.store if m.id not in self.forgotten]
        args.message_list.add(recalled, source="memory")


class Trims:
    """Records every on_memory_trim call."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], RequestContext]] = []

    def __call__(self, removed_ids: list[str], request_context: RequestContext) -> None:
        self.calls.append((list(removed_ids), request_context))


def old_turns(count: int, *, start: int = 0) -> list[Message]:
    out: list[Message] = []
    for i in range(start, start + count):
        out.append(Message.user(f"Question {i}: " + "what about the delivery schedule for next week " * 3))
        out.append(
            Message.assistant(f"Answer {i}: " + "the truck leaves on Monday and arrives Wednesday " * 3)
        )
    return out


def texts(prompt: Prompt) -> list[str]:
    return [m.text for m in prompt]


def prompt_tokens(limiter: TokenLimiter, prompt: Prompt) -> int:
    """The prompt's tokens with the limiter's cost model (3 per message and per prompt, no tools)."""
    parts = sum(limiter.count(m.text) for m in prompt)
    return 3 + sum(3 + limiter.count(m.role) for m in prompt) + parts


@pytest.mark.parametrize("mode", MODES)
async def test_only_recalled_messages_are_trimmed_oldest_first(mode: str) -> None:
    """A long current input stays whole; recalled history loses its oldest messages, kept ones contiguous."""
    store = old_turns(8)
    trims = Trims()
    limiter = TokenLimiter(400, trim_mode="memory-only", on_memory_trim=trims)
    model = ScriptedModel(["Noted."])
    agent = Agent(id="a", model=model, instructions="Be brief.", input_processors=[Recall(store), limiter])
    context = RequestContext({"user": "u1"})
    outcome = await call(agent, mode, LONG_INPUT, request_context=context)
    assert outcome.result.text == "Noted."
    (prompt,) = model.prompts
    sent = texts(prompt)
    assert sent[0] == "Be brief." and sent[-1] == LONG_INPUT  # the current input is never trimmed
    kept = [m.text for m in store if m.text in sent]
    assert 0 < len(kept) < len(store)
    assert kept == [m.text for m in store[len(store) - len(kept) :]]  # the newest ones, no gap
    assert prompt_tokens(limiter, prompt) <= 400
    ((removed, seen_context),) = trims.calls
    assert removed == [m.id for m in store[: len(store) - len(kept)]]
    assert seen_context.get("user") == "u1"
    assert [m.id for m in outcome.result.response.message_list.memory] == [m.id for m in store]


async def test_a_prompt_under_the_limit_is_left_alone() -> None:
    """Under the limit nothing is dropped and the callback is not called."""
    store = old_turns(2)
    trims = Trims()
    model = ScriptedModel(["ok"])
    limiter = TokenLimiter(2000, trim_mode="memory-only", trim_headroom=500, on_memory_trim=trims)
    agent = Agent(id="a", model=model, input_processors=[Recall(store), limiter])
    await agent.generate("Hi")
    assert texts(model.prompts[0]) == [m.text for m in store] + ["Hi"]
    assert trims.calls == []


async def test_current_input_over_the_limit_trips_instead_of_being_cut() -> None:
    """When what was not recalled does not fit, the call stops with a tripwire; nothing is cut from it."""
    model = ScriptedModel(["never"])
    limiter = TokenLimiter(60, trim_mode="memory-only")
    agent = Agent(id="a", model=model, input_processors=[Recall(old_turns(3)), limiter])
    result = await agent.generate(LONG_INPUT)
    assert result.tripwire is not None
    assert result.tripwire.metadata["cause"] == "nothing-fits"
    assert model.calls == 0


async def test_headroom_trims_below_the_limit_so_the_next_turns_do_not_trim() -> None:
    """With trim_headroom a trim goes down to limit - headroom; following turns fit without trimming."""
    limit, headroom = 500, 150

    async def conversation(headroom: int) -> list[int]:
        """Five turns; memory forgets what on_memory_trim reported. Returns the turns that trimmed."""
        store = old_turns(10)
        forgotten: set[str] = set()
        trimmed: list[int] = []
        for turn in range(5):

            def remember(ids: list[str], _: RequestContext, turn: int = turn) -> None:
                forgotten.update(ids)
                trimmed.append(turn)

            model = ScriptedModel([f"Reply {turn}, " + "noted for the schedule " * 4])
            limiter = TokenLimiter(
                limit, trim_mode="memory-only", trim_headroom=headroom, on_memory_trim=remember
            )
            agent = Agent(id="a", model=model, input_processors=[Recall(store, forgotten), limiter])
            question = f"Turn {turn}: " + "and what about the weekend deliveries " * 2
            result = await agent.generate(question)
            assert prompt_tokens(limiter, model.prompts[0]) <= (
                limit - headroom if trimmed[-1:] == [turn] else limit
            )
            store.extend(result.response.message_list.input + result.response.messages)
        return trimmed

    assert await conversation(0) == [0, 1, 2, 3, 4]  # at the limit: every new turn trims again
    with_headroom = await conversation(headroom)
    assert with_headroom[0] == 0 and len(with_headroom) < 3


@tool
def track(order: str) -> str:
    """Where an order is."""
    return f"order {order} is in Oslo"


async def test_recalled_tool_calls_go_with_their_results() -> None:
    """A recalled assistant message with a tool call and its result is kept or dropped as one."""
    call_part = ToolInvocationPart(
        tool_call_id="old_1",
        tool_name="track",
        args={"order": "A1"},
        state="result",
        result="in Bergen " * 30,
    )
    with_tool = Message(
        role="assistant", content=MessageContent(parts=[TextPart(text="Checking."), call_part])
    )
    store = [Message.user("Where is A1? " * 20), with_tool, *old_turns(2)]
    trims = Trims()
    model = ScriptedModel([ScriptedStep(tool_calls=[("track", {"order": "B2"})]), "It is in Oslo."])
    limiter = TokenLimiter(260, trim_mode="memory-only", on_memory_trim=trims)
    agent = Agent(id="a", model=model, tools=[track], input_processors=[Recall(store), limiter])
    result = await agent.generate("Where is B2?")
    assert result.text == "It is in Oslo."
    for prompt in model.prompts:
        ids = [p.tool_call_id for m in prompt for p in m.content if hasattr(p, "tool_call_id")]
        assert ids.count("old_1") in (0, 2)  # the call and its result together, or neither
        assert "Where is B2?" in texts(prompt)
    assert [
        p.tool_call_id
        for m in model.prompts[1]
        for p in m.content
        if getattr(p, "tool_call_id", "") == "call_0_0"
    ] == ["call_0_0", "call_0_0"]
    reported = [i for ids, _ in trims.calls for i in ids]
    assert with_tool.id in reported and len(reported) == len(set(reported))  # each id once per request


async def test_async_callback_is_awaited() -> None:
    """on_memory_trim may be a coroutine function."""
    seen: list[str] = []

    async def remember(ids: list[str], _: RequestContext) -> None:
        seen.extend(ids)

    store = old_turns(6)
    limiter = TokenLimiter(200, trim_mode="memory-only", on_memory_trim=remember)
    agent = Agent(id="a", model=ScriptedModel(["ok"]), input_processors=[Recall(store), limiter])
    await agent.generate("Hi")
    assert seen and set(seen) <= {m.id for m in store}


@pytest.mark.parametrize(
    "options",
    [
        {"on_memory_trim": lambda ids, ctx: None},
        {"trim_mode": "memory-only", "on_memory_trim": "not callable"},
        {"trim_mode": "memory-only", "trim_headroom": 100},
        {"trim_headroom": -1},
    ],
)
def test_bad_memory_options_are_rejected(options: dict[str, Any]) -> None:
    """on_memory_trim needs memory-only and a callable; trim_headroom must be in [0, limit)."""
    with pytest.raises(ConfigurationError):
        TokenLimiter(100, **options)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(1, 60), min_size=1, max_size=12),
    st.integers(1, 40),
    st.integers(50, 600),
    st.integers(0, 49),
)
async def test_memory_only_keeps_the_input_and_the_newest_recall_that_fits(
    recalled_words: list[int], input_words: int, limit: int, headroom: int
) -> None:
    """For any sizes: the input stays whole, the kept recall is the newest run that fits under the target."""
    history = [
        (Message.user if i % 2 == 0 else Message.assistant)(f"m{i} " + "word " * n)
        for i, n in enumerate(recalled_words)
    ]
    question = "q " + "ask " * input_words
    limiter = TokenLimiter(limit, trim_mode="memory-only", trim_headroom=headroom)
    outcome = await run_llm_request(limiter, [question], history=history)
    alone = await run_llm_request(TokenLimiter(10**6), [question])
    if outcome.tripwire is not None:
        assert alone.state["last_trim"]["tokens_before"] > limit
        return
    sent = texts(outcome.prompt)
    assert sent[-1] == question
    kept = sent[:-1]
    assert kept == [m.text for m in history[len(history) - len(kept) :]]
    trim = outcome.state["last_trim"]
    if len(kept) == len(history):
        assert trim["tokens_before"] <= limit
        return
    assert trim["tokens_before"] > limit
    target = limit - headroom
    assert trim["tokens_after"] <= max(target, alone.state["last_trim"]["tokens_before"])
    next_older = history[len(history) - len(kept) - 1]
    assert trim["tokens_after"] + 3 + limiter.count(next_older.role) + limiter.count(next_older.text) > target

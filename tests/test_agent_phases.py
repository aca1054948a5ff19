"""Processors in every phase of the agent loop: order, rewrites, overrides, state and metadata."""

from __future__ import annotations

from typing import Any

import pytest
from _agent_support import MODES, call, texts

from procflow import Agent, Chunk, Message, RequestContext, tool
from procflow.models import PromptMessage, PromptText
from procflow.processors import (
    ProcessInputArgs,
    ProcessInputStepArgs,
    ProcessLLMRequestArgs,
    ProcessLLMRequestResult,
    ProcessLLMResponseArgs,
    ProcessOutputResultArgs,
    ProcessOutputStepArgs,
    ProcessOutputStreamArgs,
)
from procflow.testing import ScriptedModel, ScriptedStep


@tool
def lookup(term: str) -> str:
    """Look a term up."""
    return f"{term}: found"


class Recorder:
    """Records which hook ran, with the step number where there is one."""

    id = "recorder"

    def __init__(self) -> None:
        self.log: list[str] = []

    def process_input(self, args: ProcessInputArgs) -> None:
        self.log.append("input")

    def process_input_step(self, args: ProcessInputStepArgs) -> None:
        self.log.append(f"input_step:{args.step_number}")

    def process_llm_request(self, args: ProcessLLMRequestArgs) -> None:
        self.log.append(f"llm_request:{args.step_number}")

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        if args.part.type in ("tool-call", "tool-result", "finish"):
            self.log.append(f"stream:{args.part.type}")
        return args.part

    def process_llm_response(self, args: ProcessLLMResponseArgs) -> None:
        self.log.append(f"llm_response:{args.step_number}")

    def process_output_step(self, args: ProcessOutputStepArgs) -> None:
        self.log.append(f"output_step:{args.step_number}")

    def process_output_result(self, args: ProcessOutputResultArgs) -> None:
        self.log.append("output_result")


def tool_then_text() -> ScriptedModel:
    return ScriptedModel([ScriptedStep(tool_calls=[("lookup", {"term": "x"})]), "Answer."])


@pytest.mark.parametrize("mode", MODES)
async def test_hooks_run_in_loop_order(mode: str) -> None:
    """Input once, then per step: input step, LLM request, stream, LLM response, output step; result once."""
    recorder = Recorder()
    agent = Agent(
        id="a",
        model=tool_then_text(),
        tools=[lookup],
        input_processors=[recorder],
        output_processors=[recorder],
    )
    await call(agent, mode, "Go")
    assert recorder.log == [
        "input",
        "input_step:0",
        "llm_request:0",
        "stream:tool-call",
        "llm_response:0",
        "output_step:0",
        "stream:tool-result",
        "input_step:1",
        "llm_request:1",
        "llm_response:1",
        "output_step:1",
        "output_result",
        "stream:finish",
    ]


class Lowercase:
    id = "lowercase"

    def process_input(self, args: ProcessInputArgs) -> list[Message]:
        return [m.with_text(m.text.lower()) for m in args.messages]


@pytest.mark.parametrize("mode", MODES)
async def test_process_input_rewrites_what_the_model_sees(mode: str) -> None:
    """A ``process_input`` rewrite reaches the prompt and the stored input."""
    model = ScriptedModel(["ok"])
    result = (await call(Agent(id="a", model=model, input_processors=[Lowercase()]), mode, "HELLO")).result
    assert texts(model.prompts[0]) == ["hello"]
    assert result.response.message_list.input[0].text == "hello"


class FinalStepWithoutTools:
    id = "final-step"

    def __init__(self, other: ScriptedModel) -> None:
        self.other = other

    def process_input_step(self, args: ProcessInputStepArgs) -> dict[str, Any] | None:
        if args.step_number == 1:
            return {"model": self.other, "tools": {}, "tool_choice": "none"}
        return None


@pytest.mark.parametrize("mode", MODES)
async def test_input_step_overrides_model_tools_and_tool_choice(mode: str) -> None:
    """``process_input_step`` may switch the model and change tools and tool choice for one step."""
    first, second = tool_then_text(), ScriptedModel(["From the second model."])
    agent = Agent(id="a", model=first, tools=[lookup], input_processors=[FinalStepWithoutTools(second)])
    result = (await call(agent, mode, "Go")).result
    assert (first.calls, second.calls) == (1, 1)
    assert (second.requests[0].tools, second.requests[0].tool_choice) == ([], "none")
    assert result.text == "From the second model."


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("is_async", [False, True])
async def test_prepare_step_is_a_shorthand_for_process_input_step(mode: str, is_async: bool) -> None:
    """``prepare_step`` receives the step args and its overrides apply, sync or async."""
    seen: list[int] = []

    def prepare(args: ProcessInputStepArgs) -> dict[str, Any]:
        seen.append(args.step_number)
        return {"tool_choice": "required"} if args.step_number == 0 else {"tool_choice": "none"}

    async def prepare_async(args: ProcessInputStepArgs) -> dict[str, Any]:
        return prepare(args)

    model = tool_then_text()
    agent = Agent(id="a", model=model, tools=[lookup])
    await call(agent, mode, "Go", prepare_step=prepare_async if is_async else prepare)
    assert seen == [0, 1]
    assert [r.tool_choice for r in model.requests] == ["required", "none"]


class Shout:
    """Rewrites the outgoing prompt's last message for the first call only."""

    id = "shout"

    def process_llm_request(self, args: ProcessLLMRequestArgs) -> list[PromptMessage] | None:
        if args.step_number > 0:
            return None
        last = args.prompt[-1]
        return [
            *args.prompt[:-1],
            PromptMessage(role=last.role, content=[PromptText(text=last.text.upper())]),
        ]


@pytest.mark.parametrize("mode", MODES)
async def test_llm_request_rewrites_are_transient(mode: str) -> None:
    """A prompt rewrite reaches this call only; the message list and later calls keep the original."""
    model = tool_then_text()
    agent = Agent(id="a", model=model, tools=[lookup], input_processors=[Shout()])
    result = (await call(agent, mode, "quiet please")).result
    assert texts(model.prompts[0])[-1] == "QUIET PLEASE"
    assert texts(model.prompts[1])[0] == "quiet please"
    assert result.response.message_list.input[0].text == "quiet please"


class CacheHit:
    """Answers from a 'cache' instead of the model, and records which hooks still ran."""

    id = "cache"

    def __init__(self) -> None:
        self.responses = 0

    def process_llm_request(self, args: ProcessLLMRequestArgs) -> ProcessLLMRequestResult:
        chunks = [
            Chunk.text_delta("cached "),
            Chunk.text_delta("answer"),
            Chunk("finish", {"finish_reason": "stop"}),
        ]
        return ProcessLLMRequestResult(chunks=chunks)

    def process_llm_response(self, args: ProcessLLMResponseArgs) -> None:
        self.responses += 1


class CountChunks:
    id = "count-chunks"

    def __init__(self) -> None:
        self.text_chunks = 0

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        self.text_chunks += args.part.type == "text-delta"
        return args.part


@pytest.mark.parametrize("mode", MODES)
async def test_llm_request_answer_replaces_the_model_call(mode: str) -> None:
    """``process_llm_request`` chunks stand in for the model: stream hooks see them, the response hook not."""
    model, cache, counter = ScriptedModel(), CacheHit(), CountChunks()
    agent = Agent(id="a", model=model, input_processors=[cache], output_processors=[counter])
    outcome = await call(agent, mode, "Hi")
    assert model.calls == 0
    assert outcome.result.text == "cached answer"
    assert outcome.result.steps[0].from_cache
    assert (counter.text_chunks, cache.responses) == (2, 0)
    assert [c.text for c in outcome.chunks if c.type == "text-delta"] == (
        ["cached ", "answer"] if outcome.chunks else []
    )


class Upper:
    id = "upper"

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk | None:
        part = args.part
        if part.type != "text-delta":
            return part
        if "secret" in (part.text or ""):
            return None
        return Chunk.text_delta((part.text or "").upper())


class SeeResponse:
    id = "see-response"

    def __init__(self) -> None:
        self.chunks: list[str] = []

    def process_llm_response(self, args: ProcessLLMResponseArgs) -> None:
        assert not args.from_cache
        self.chunks = [c.text or "" for c in args.chunks if c.type == "text-delta"]


@pytest.mark.parametrize("mode", MODES)
async def test_stream_processors_shape_the_text_and_the_stored_message(mode: str) -> None:
    """Changed and dropped chunks shape the text the consumer, the result and ``process_llm_response`` see."""
    model = ScriptedModel([ScriptedStep(chunks=[Chunk.text_delta(t) for t in ("abc ", "secret ", "def")])])
    seer = SeeResponse()
    agent = Agent(id="a", model=model, input_processors=[seer], output_processors=[Upper()])
    outcome = await call(agent, mode, "Hi")
    assert outcome.result.text == "ABC DEF"
    assert outcome.result.response.messages[0].text == "ABC DEF"
    assert seer.chunks == ["ABC ", "DEF"]


class WordCounter:
    """The seed's word counter: state shared by the stream and result hooks of one request."""

    id = "word-counter"

    def __init__(self) -> None:
        self.totals: list[int] = []

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        args.state.setdefault("word_count", 0)
        if args.part.type == "text-delta":
            args.state["word_count"] += len((args.part.text or "").split())
        return args.part

    def process_output_result(self, args: ProcessOutputResultArgs) -> None:
        self.totals.append(args.state["word_count"])


@pytest.mark.parametrize("mode", MODES)
async def test_state_is_shared_by_hooks_and_fresh_per_call(mode: str) -> None:
    """One state dict per processor per request: the result hook sees the stream's count; calls don't mix."""
    counter = WordCounter()
    model = ScriptedModel(["one two three", "four five"], chunk_size=100)
    agent = Agent(id="a", model=model, output_processors=[counter])
    await call(agent, mode, "Hi")
    await call(agent, mode, "Again")
    assert counter.totals == [3, 2]


class MetadataProcessor:
    """The seed's metadata example: stamps assistant messages in ``process_output_result``."""

    id = "metadata-processor"

    def process_output_result(self, args: ProcessOutputResultArgs) -> list[Message]:
        out = []
        for message in args.messages:
            if message.role == "assistant":
                content = message.content.model_copy(
                    update={"metadata": {**message.content.metadata, "custom_data": "your data here"}}
                )
                message = message.model_copy(update={"content": content})
            out.append(message)
        return out


@pytest.mark.parametrize("mode", MODES)
async def test_processor_metadata_is_visible_on_ui_messages(mode: str) -> None:
    """Metadata added in ``process_output_result`` shows on the UI messages (and the finish chunk)."""
    agent = Agent(id="a", model=ScriptedModel(["Hello"]), output_processors=[MetadataProcessor()])
    outcome = await call(agent, mode, "Hi")
    assistant = next(m for m in outcome.result.response.ui_messages if m.role == "assistant")
    assert assistant.metadata["custom_data"] == "your data here"
    if mode == "stream":
        (ui,) = outcome.chunks[-1].payload["response"]["ui_messages"]
        assert ui["metadata"]["custom_data"] == "your data here"


class UsageTracker:
    id = "usage-tracker"

    def __init__(self) -> None:
        self.seen: list[tuple[str, int, str, int]] = []

    def process_output_result(self, args: ProcessOutputResultArgs) -> None:
        r = args.result
        self.seen.append((r.text, r.usage.output_tokens, r.finish_reason, len(r.tool_calls)))


@pytest.mark.parametrize("mode", MODES)
async def test_output_result_sees_the_whole_generation(mode: str) -> None:
    """``process_output_result`` gets text, usage, finish reason and every step's tool calls."""
    tracker = UsageTracker()
    agent = Agent(id="a", model=tool_then_text(), tools=[lookup], output_processors=[tracker])
    await call(agent, mode, "Go")
    assert tracker.seen == [("Answer.", 2, "stop", 1)]


class Tag:
    """Appends its label to assistant text in ``process_output_result``."""

    def __init__(self, label: str) -> None:
        self.id = f"tag-{label}"
        self.label = label

    def process_output_result(self, args: ProcessOutputResultArgs) -> list[Message]:
        return [m.with_text(m.text + self.label) if m.role == "assistant" else m for m in args.messages]


class Memory:
    """A stand-in memory: loads one history message, saves the response messages it sees."""

    def __init__(self) -> None:
        self.saved: list[str] = []
        outer = self

        class Load:
            id = "memory-load"

            def process_input(self, args: ProcessInputArgs) -> None:
                args.message_list.add(Message.user("earlier question"), source="memory")

        class Save:
            id = "memory-save"

            def process_output_result(self, args: ProcessOutputResultArgs) -> None:
                outer.saved.extend(m.text for m in args.messages)

        self.load, self.save = Load(), Save()

    def input_processors(self, request_context: RequestContext) -> list[Any]:
        return [self.load]

    def output_processors(self, request_context: RequestContext) -> list[Any]:
        return [self.save]


@pytest.mark.parametrize("mode", MODES)
async def test_per_call_processors_replace_the_agents_list_only(mode: str) -> None:
    """A call's ``output_processors`` replace the agent's for that call; memory still runs after them."""
    memory = Memory()
    agent = Agent(
        id="a", model=ScriptedModel(["hi"], repeat_last=True), output_processors=[Tag("!")], memory=memory
    )
    replaced = (await call(agent, mode, "x", output_processors=[Tag("?")])).result
    default = (await call(agent, mode, "y")).result
    assert (replaced.text, default.text) == ("hi?", "hi!")
    assert memory.saved == ["hi?", "hi!"]


@pytest.mark.parametrize("mode", MODES)
async def test_memory_input_runs_before_yours(mode: str) -> None:
    """Memory's input processors load history before the agent's own processors see the messages."""
    seen: list[list[str]] = []

    class Inspect:
        id = "inspect"

        def process_input(self, args: ProcessInputArgs) -> None:
            seen.append([m.text for m in args.message_list.all])

    model = ScriptedModel(["ok"])
    agent = Agent(id="a", model=model, input_processors=[Inspect()], memory=Memory())
    await call(agent, mode, "new question")
    assert seen == [["earlier question", "new question"]]
    assert texts(model.prompts[0]) == ["earlier question", "new question"]


class Prefix:
    def __init__(self, prefix: str) -> None:
        self.id = "prefix"
        self.prefix = prefix

    def process_input(self, args: ProcessInputArgs) -> list[Message]:
        return [m.with_text(self.prefix + m.text) for m in args.messages]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("is_async", [False, True])
async def test_request_context_factory_builds_processors_per_request(mode: str, is_async: bool) -> None:
    """A factory receives each request's context and builds that request's processors."""

    def factory(context: RequestContext) -> list[Any]:
        return [Prefix(context.get("prefix", "[none] "))]

    async def factory_async(context: RequestContext) -> list[Any]:
        return factory(context)

    model = ScriptedModel(["ok"], repeat_last=True)
    agent = Agent(id="a", model=model, input_processors=factory_async if is_async else factory)
    await call(agent, mode, "hello", request_context={"prefix": "[vip] "})
    await call(agent, mode, "hello")
    assert [texts(p)[-1] for p in model.prompts] == ["[vip] hello", "[none] hello"]

"""Message history on both backends: recall order and limits, what is saved, and when nothing is."""

from __future__ import annotations

from typing import Any

import pytest
from memory_support import Backend, backend, echo_agent, texts

from procflow import Agent, tool
from procflow.errors import ConfigurationError
from procflow.memory import MESSAGE_HISTORY_ID, RESOURCE_ID_KEY, Memory, MessageHistory
from procflow.processors import ProcessInputArgs, ProcessOutputResultArgs, RegexFilterProcessor
from procflow.testing import ScriptedModel, ScriptedStep

__all__ = ["backend"]

T = {"thread": "t-1", "resource": "user-1"}


def _prompt_texts(model: ScriptedModel, call: int = -1) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in model.prompts[call] if m.role != "system"]


class Uppercase:
    """An output processor rewriting the response (and noting whether memory had saved yet)."""

    id = "uppercase"

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.saved_before: list[int] = []

    async def process_output_result(self, args: ProcessOutputResultArgs) -> list[Any]:
        self.saved_before.append(len(await self.backend.storage.get_messages("t-1")))
        return [m.with_text(m.text.upper()) for m in args.messages]


class Blocker:
    """Trips on a word, in the input or in the answer."""

    def __init__(self, id: str) -> None:
        self.id = id

    def process_input(self, args: ProcessInputArgs) -> None:
        if any("forbidden" in m.text for m in args.messages):
            args.abort("forbidden word")

    def process_output_result(self, args: ProcessOutputResultArgs) -> None:
        if "secret" in args.result.text:
            args.abort("secret in the answer")


async def test_recall_is_oldest_first_and_limited_to_last_messages(backend: Backend) -> None:
    """The model sees the last N stored messages, oldest first, before the new input."""
    agent, model = echo_agent(Memory(storage=backend.storage, last_messages=3))
    for text in ("one", "two", "three"):
        await agent.generate(text, memory=T)
    assert _prompt_texts(model) == [
        ("assistant", "echo: one"),
        ("user", "two"),
        ("assistant", "echo: two"),
        ("user", "three"),
    ]
    assert await texts(backend.storage, "t-1", last=2) == [("user", "three"), ("assistant", "echo: three")]
    assert len(await backend.storage.get_messages("t-1")) == 6


async def test_last_messages_zero_recalls_nothing_but_still_saves(backend: Backend) -> None:
    """last_messages controls recall only: with 0 the model sees just the input, and turns are saved."""
    agent, model = echo_agent(Memory(storage=backend.storage, last_messages=0))
    await agent.generate("one", memory=T)
    await agent.generate("two", memory=T)
    assert _prompt_texts(model) == [("user", "two")]
    assert len(await backend.storage.get_messages("t-1")) == 4


async def test_turn_is_saved_after_the_output_processors(backend: Backend) -> None:
    """Your output processors run first: what they changed is stored, and nothing was saved before."""
    upper = Uppercase(backend)
    agent, _ = echo_agent(Memory(storage=backend.storage), output_processors=[upper])
    await agent.generate("hello", memory=T)
    assert upper.saved_before == [0]
    assert await texts(backend.storage, "t-1") == [("user", "hello"), ("assistant", "ECHO: HELLO")]


async def test_input_tripwire_saves_nothing(backend: Backend) -> None:
    """A tripwire in an input processor ends the call before memory saves anything."""
    agent, _ = echo_agent(Memory(storage=backend.storage), input_processors=[Blocker("input-block")])
    result = await agent.generate("a forbidden word", memory=T)
    assert result.tripwire is not None
    assert await backend.storage.get_thread("t-1") is None


async def test_output_tripwire_saves_nothing_of_the_turn(backend: Backend) -> None:
    """A tripwire in an output processor skips memory's processors: the turn is not stored."""
    agent, _ = echo_agent(Memory(storage=backend.storage), output_processors=[Blocker("output-block")])
    await agent.generate("hello", memory=T)
    result = await agent.generate("tell me the secret", memory=T)
    assert result.tripwire is not None and result.tripwire.processor_id == "output-block"
    assert await texts(backend.storage, "t-1") == [("user", "hello"), ("assistant", "echo: hello")]


async def test_redacted_text_is_what_is_stored(backend: Backend) -> None:
    """Input and output redactions persist; the original address is never written to the storage."""
    redact = RegexFilterProcessor(presets=["pii"], strategy="redact")
    agent, model = echo_agent(
        Memory(storage=backend.storage), input_processors=[redact], output_processors=[redact]
    )
    await agent.generate("mail me at jane.doe@example.com", memory=T)
    stored = await backend.storage.get_messages("t-1")
    dumped = "".join(m.model_dump_json() for m in stored)
    assert "jane.doe@example.com" not in dumped
    assert "example.com" not in stored[0].text and stored[0].text.startswith("mail me at ")
    assert stored[1].text == model_answer(model)


async def test_history_comes_back_as_the_guards_left_it_when_it_was_saved(backend: Backend) -> None:
    """A tool result redacted before the model read it is stored redacted; recalled, it stays so. A
    turn saved without the guard is recalled as saved: input guards judge the new input only."""

    @tool
    def read_config(name: str) -> dict[str, str]:
        """Read a deployment's settings."""
        return {"region": "eu-west-3", "access_key": "AKIAZ7Q3K9XW2M4T6PLB"}

    def turn(guards: list[Any]) -> tuple[Agent, ScriptedModel]:
        model = ScriptedModel([ScriptedStep(tool_calls=[("read_config", {"name": "prod"})]), "Done."])
        agent = Agent(
            id="ops",
            model=model,
            tools=[read_config],
            memory=Memory(storage=backend.storage),
            input_processors=guards,
        )
        return agent, model

    redact = RegexFilterProcessor(presets=["secrets", "pii"], strategy="redact", phase="input")
    agent, _ = turn([redact])
    await agent.generate("Read prod; I am ana@example.org", memory=T)
    later, model = turn([redact])
    await later.generate("And staging?", memory=T)
    sent = "".join(m.model_dump_json() for m in model.prompts[0])
    assert "AKIAZ7Q3K9XW2M4T6PLB" not in sent and "ana@example.org" not in sent and "[AWS_KEY]" in sent

    other = {"thread": "t-2", "resource": "user-1"}
    unguarded, _ = turn([])
    await unguarded.generate("Read prod", memory=other)
    later, model = turn([redact])
    await later.generate("And staging?", memory=other)
    assert "AKIAZ7Q3K9XW2M4T6PLB" in "".join(m.model_dump_json() for m in model.prompts[0])


def model_answer(model: ScriptedModel) -> str:
    return "echo: " + [m.text for m in model.prompts[-1] if m.role == "user"][-1]


async def test_your_processor_with_a_memory_id_replaces_the_automatic_one(backend: Backend) -> None:
    """A MessageHistory you place by id runs where you put it, with your settings, instead of memory's."""
    seen: list[int] = []

    class Peek:
        id = "peek"

        def process_input(self, args: ProcessInputArgs) -> None:
            seen.append(len(args.message_list.memory))

    mine = MessageHistory(backend.storage, last_messages=1)
    agent, model = echo_agent(Memory(storage=backend.storage), input_processors=[Peek(), mine])
    await agent.generate("one", memory=T)
    await agent.generate("two", memory=T)
    assert seen == [0, 0]  # history now loads after Peek
    assert _prompt_texts(model) == [("assistant", "echo: one"), ("user", "two")]
    assert mine.id == MESSAGE_HISTORY_ID


async def test_read_only_memory_recalls_but_never_saves(backend: Backend) -> None:
    """read_only controls saving: a read-only memory sees the thread and adds nothing to it."""
    writer, _ = echo_agent(Memory(storage=backend.storage))
    await writer.generate("remember this", memory=T)
    reader, model = echo_agent(Memory(storage=backend.storage, read_only=True))
    await reader.generate("what did I say?", memory=T)
    assert _prompt_texts(model)[:2] == [("user", "remember this"), ("assistant", "echo: remember this")]
    assert len(await backend.storage.get_messages("t-1")) == 2


async def test_persisted_signals_are_stored_hidden_and_transient_ones_never(backend: Backend) -> None:
    """A persisted signal is stored but not recalled by default; a transient one is not stored at all."""

    class Signals:
        id = "signals"

        async def process_input(self, args: ProcessInputArgs) -> None:
            await args.send_signal("kept for the record")
            await args.send_signal("only for this call", type="hint", transient=True)

    agent, _model = echo_agent(Memory(storage=backend.storage), input_processors=[Signals()])
    await agent.generate("hello", memory=T)
    everything = await texts(backend.storage, "t-1", include_signals=True)
    assert ("signal", "kept for the record") in everything
    assert [text for role, text in everything if role == "signal"] == ["kept for the record"]
    assert ("signal", "kept for the record") not in await texts(backend.storage, "t-1")
    result = await agent.generate("again", memory=T)
    recalled = list(result.response.message_list.memory)
    assert [m.role for m in recalled] == ["user", "assistant"]
    assert all(m.role != "signal" for m in result.response.ui_messages)


async def test_resource_id_lands_in_the_request_context(backend: Backend) -> None:
    """memory={'resource': ...} is readable by any processor under RESOURCE_ID_KEY."""
    seen: list[Any] = []

    class Reader:
        id = "reader"

        def process_input(self, args: ProcessInputArgs) -> None:
            seen.append((args.request_context.get(RESOURCE_ID_KEY), args.request_context.resource_id))

    agent, _ = echo_agent(Memory(storage=backend.storage), input_processors=[Reader()])
    await agent.generate("hi", memory=T)
    assert seen == [("user-1", "user-1")]
    thread = await backend.storage.get_thread("t-1")
    assert thread is not None and thread.resource_id == "user-1" and thread.message_count == 2
    assert [t.id for t in await backend.storage.list_threads("user-1")] == ["t-1"]


async def test_a_call_without_a_thread_fails_clearly(backend: Backend) -> None:
    """Memory needs a thread id; the error says how to pass one."""
    agent, _ = echo_agent(Memory(storage=backend.storage))
    with pytest.raises(ConfigurationError, match="memory=\\{'thread'"):
        await agent.generate("hi")


async def test_an_unknown_memory_option_fails_clearly(backend: Backend) -> None:
    """memory= takes 'thread' and 'resource' only; anything else is a usage error naming the keys."""
    agent, _ = echo_agent(Memory(storage=backend.storage))
    with pytest.raises(ConfigurationError, match="'user'"):
        await agent.generate("hi", memory={"thread": "t-1", "user": "x"})
    with pytest.raises(ConfigurationError, match="non-empty string"):
        await agent.generate("hi", memory={"thread": ""})


async def test_delete_thread_forgets_it(backend: Backend) -> None:
    """After delete_thread the thread and its messages are gone."""
    agent, _ = echo_agent(Memory(storage=backend.storage))
    await agent.generate("hi", memory=T)
    await backend.storage.delete_thread("t-1")
    assert await backend.storage.get_thread("t-1") is None
    assert await backend.storage.get_messages("t-1") == []


def test_memory_rejects_a_storage_that_is_not_one() -> None:
    """Memory(storage=...) must be given a storage; the message names the two shipped ones."""
    with pytest.raises(ConfigurationError, match="SQLiteStorage"):
        Memory(storage=object())  # type: ignore[arg-type]
    assert Agent  # the public Agent import is what users combine Memory with


async def test_stream_saves_the_turn_as_the_stream_processors_left_it(backend: Backend) -> None:
    """Through stream(), the stored answer is the redacted stream, not what the model produced."""
    model = ScriptedModel(["write to jane.doe@example.com today"], chunk_size=3)
    redact = RegexFilterProcessor(presets=["pii"], strategy="redact")
    agent = Agent(id="s", model=model, memory=Memory(storage=backend.storage), output_processors=[redact])
    output = agent.stream("where do I write?", memory=T)
    chunks = [c.text for c in [c async for c in output.full_stream] if c.type == "text-delta"]
    stored = await texts(backend.storage, "t-1")
    assert stored[1] == ("assistant", "".join(chunks))
    assert "jane.doe@example.com" not in stored[1][1]


async def test_another_resource_naming_the_thread_recalls_none_of_it(backend: Backend) -> None:
    """A call whose resource differs from the thread's never sees that resource's messages."""
    agent, model = echo_agent(Memory(storage=backend.storage))
    await agent.generate("my secret plan", memory=T)
    await agent.generate("what was the plan?", memory={"thread": "t-1", "resource": "intruder"})
    assert _prompt_texts(model) == [("user", "what was the plan?")]
    assert await texts(backend.storage, "t-1", resource_id="user-1") == [
        ("user", "my secret plan"),
        ("assistant", "echo: my secret plan"),
    ]


async def test_recalled_signals_reach_the_model_as_reminders_when_asked(backend: Backend) -> None:
    """With include_signals, a persisted signal comes back as <system-reminder> context."""

    class Signals:
        id = "signals"

        async def process_input(self, args: ProcessInputArgs) -> None:
            if args.messages[-1].text == "first":
                await args.send_signal("the user prefers short answers")

    history = MessageHistory(backend.storage, include_signals=True)
    agent, model = echo_agent(Memory(storage=backend.storage), input_processors=[Signals(), history])
    await agent.generate("first", memory=T)
    await agent.generate("second", memory=T)
    reminders = [t for role, t in _prompt_texts(model) if role == "user" and t.startswith("<system-reminder")]
    assert reminders == ["<system-reminder>the user prefers short answers</system-reminder>"]


async def test_an_output_processor_with_the_history_id_replaces_the_saver(backend: Backend) -> None:
    """Your read-only MessageHistory in the output list takes the place of memory's saver."""
    agent, _ = echo_agent(
        Memory(storage=backend.storage), output_processors=[MessageHistory(backend.storage, read_only=True)]
    )
    await agent.generate("hello", memory=T)
    assert await backend.storage.get_thread("t-1") is None

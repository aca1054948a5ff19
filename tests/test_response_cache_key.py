"""build_response_cache_key: deterministic over its inputs, by value for files, blind to dict order."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procflow import Agent, RequestContext
from procflow._messages import PromptPart
from procflow.cache import InMemoryServerCache
from procflow.errors import ConfigurationError
from procflow.memory import RESOURCE_ID_KEY
from procflow.models import PromptFile, PromptMessage, PromptText, PromptToolCall, PromptToolResult
from procflow.processors import ResponseCache, ResponseCacheKeyInputs, build_response_cache_key
from procflow.testing import ScriptedModel

MODEL = {"provider": "openai", "model_id": "gpt-5-mini", "spec_version": "v2"}


def image_prompt(*, url: str | None = None, data: str | None = None) -> list[PromptMessage]:
    image = PromptFile(media_type="image/png", url=url, data=data)
    return [PromptMessage(role="user", content=[PromptText(text="What is this?"), image])]


def key(**changes: object) -> str:
    inputs: dict[str, object] = {
        "agent_id": "a",
        "step_number": 0,
        "scope": "u-1",
        "model": MODEL,
        "prompt": image_prompt(url="https://x.test/cat.png"),
    }
    inputs.update(changes)
    return build_response_cache_key(**inputs)  # type: ignore[arg-type]


def test_the_key_is_stable_across_processes() -> None:
    """The same inputs give the same key in another interpreter (no per-process hash seed)."""
    code = (
        "from procflow.processors import build_response_cache_key as k;"
        "print(k(agent_id='a', step_number=1, scope='s', model={'provider': 'p'}, prompt=[{'t': 'hé'}]))"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    here = build_response_cache_key(
        agent_id="a", step_number=1, scope="s", model={"provider": "p"}, prompt=[{"t": "hé"}]
    )
    assert other.stdout.strip() == here


@pytest.mark.parametrize(
    "change",
    [
        {"agent_id": "b"},
        {"step_number": 1},
        {"scope": "u-2"},
        {"scope": None},
        {"model": {**MODEL, "provider": "azure"}},
        {"model": {**MODEL, "model_id": "gpt-5"}},
        {"model": {**MODEL, "spec_version": "v3"}},
        {"prompt": image_prompt(url="https://x.test/dog.png")},
    ],
)
def test_every_input_changes_the_key(change: dict[str, object]) -> None:
    """Agent, step, scope, each part of the model identity and the prompt all count."""
    assert key(**change) != key()


def test_images_count_by_value() -> None:
    """A URL counts by its full href; inline data by its contents, bytes by their digest."""
    assert key(prompt=image_prompt(url="https://x.test/a.png?v=1")) != key(
        prompt=image_prompt(url="https://x.test/a.png?v=2")
    )
    assert key(prompt=image_prompt(data="aGVsbG8=")) != key(prompt=image_prompt(data="aGVsbG9v"))
    assert key(prompt=image_prompt(data="aGVsbG8=")) == key(prompt=image_prompt(data="aGVsbG8="))
    raw = [{"role": "user", "content": [{"type": "file", "data": b"\x89PNG one"}]}]
    other = [{"role": "user", "content": [{"type": "file", "data": b"\x89PNG two"}]}]
    assert key(prompt=raw) != key(prompt=other)
    assert key(prompt=raw) == key(
        prompt=[{"role": "user", "content": [{"data": bytearray(b"\x89PNG one"), "type": "file"}]}]
    )


@given(st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=6))
def test_dict_order_does_not_matter(data: dict[str, object]) -> None:
    """Any insertion order of the same mapping gives the same key."""
    reversed_data = dict(reversed(list(data.items())))
    assert key(prompt=[data]) == key(prompt=[reversed_data])


def test_procflow_internal_metadata_is_ignored() -> None:
    """``procflow__…`` keys are bookkeeping and leave the key unchanged."""
    plain = [{"role": "user", "content": "Hi", "metadata": {"source": "web"}}]
    tagged = [{"role": "user", "content": "Hi", "metadata": {"source": "web", "procflow__trace": "x1"}}]
    assert key(prompt=plain) == key(prompt=tagged)


def test_extra_inputs_and_overrides() -> None:
    """Reusing the helper with one field replaced gives that field's key; extras are hashed too."""
    assert key(scope="global") == build_response_cache_key(**{**_inputs(), "scope": "global"})
    assert key(tools=["search"]) != key()


def _inputs() -> dict[str, object]:
    return {
        "agent_id": "a",
        "step_number": 0,
        "scope": "u-1",
        "model": MODEL,
        "prompt": image_prompt(url="https://x.test/cat.png"),
    }


def test_unhashable_inputs_are_a_configuration_error() -> None:
    """Objects without a stable value (a set, an arbitrary object) cannot be part of a key."""
    with pytest.raises(ConfigurationError, match="cannot derive a cache key"):
        key(prompt=[object()])


async def test_two_requests_differing_only_in_an_image_miss() -> None:
    """Through the agent, a different attached image is a different entry."""
    model = ScriptedModel(["a cat", "a dog"])
    agent = Agent(id="a", model=model, input_processors=[ResponseCache(cache=InMemoryServerCache())])

    def ask(url: str) -> dict[str, object]:
        parts = [{"type": "text", "text": "What is this?"}, {"type": "image", "url": url}]
        return {"role": "user", "content": {"parts": parts}}

    cat = await agent.generate(ask("https://x.test/cat.png"))
    dog = await agent.generate(ask("https://x.test/dog.png"))
    again = await agent.generate(ask("https://x.test/cat.png"))
    assert (cat.text, dog.text, again.text, model.calls) == ("a cat", "a dog", "a cat", 2)


LONG = 1100  # over the length from which a string enters the key as its remembered digest

leaf_texts = st.text(max_size=24) | st.text(min_size=1, max_size=6).map(lambda t: t * (LONG // len(t) + 1))


def _part(kind: int, text: str) -> PromptPart:
    if kind == 0:
        return PromptText(text=text)
    if kind == 1:
        return PromptFile(media_type="image/png", data=text)
    if kind == 2:
        return PromptToolCall(tool_call_id="c1", tool_name="search", args={"q": text, "n": 3})
    return PromptToolResult(tool_call_id="c1", tool_name="search", result={"hits": [text]})


def _messages(leaves: list[list[tuple[int, str]]]) -> list[PromptMessage]:
    """New prompt objects on every call, as each request builds them."""
    return [PromptMessage(role="user", content=[_part(k, t) for k, t in parts]) for parts in leaves]


def _one_char_change(text: str, position: int, char: str, how: int) -> str:
    at = position % (len(text) + 1)
    if how == 0 or not text:
        return text[:at] + char + text[at:]  # insert
    at = min(at, len(text) - 1)
    if how == 1:
        return text[:at] + text[at + 1 :]  # delete
    replacement = char if char != text[at] else chr(ord(char) % 0x10FFFF + 1)
    return text[:at] + replacement + text[at + 1 :]  # replace


@settings(max_examples=150, deadline=None)
@given(
    leaves=st.lists(
        st.lists(st.tuples(st.integers(0, 3), leaf_texts), min_size=1, max_size=3), min_size=1, max_size=4
    ),
    data=st.data(),
)
def test_any_one_character_change_in_any_message_changes_the_key(
    leaves: list[list[tuple[int, str]]], data: st.DataObject
) -> None:
    """Inserting, deleting or replacing one character of any text, file, tool call or result moves the key."""
    message = data.draw(st.integers(0, len(leaves) - 1))
    part = data.draw(st.integers(0, len(leaves[message]) - 1))
    kind, text = leaves[message][part]
    changed_text = _one_char_change(
        text, data.draw(st.integers(0, 10_000)), data.draw(st.characters()), data.draw(st.integers(0, 2))
    )
    changed = [list(parts) for parts in leaves]
    changed[message][part] = (kind, changed_text)
    original = key(prompt=_messages(leaves))
    assert key(prompt=_messages(leaves)) == original  # the same content as new objects: the same key
    assert key(prompt=_messages(changed)) != original
    assert key(prompt=_messages(leaves)) == original  # and the change did not disturb the original


@settings(max_examples=50, deadline=None)
@given(
    leaves=st.lists(st.lists(st.tuples(st.integers(0, 3), leaf_texts), min_size=1, max_size=3), max_size=3)
)
def test_models_and_their_dumps_give_the_same_key(leaves: list[list[tuple[int, str]]]) -> None:
    """A prompt of pydantic messages and the same prompt as plain dicts are one key."""
    prompt = _messages(leaves)
    assert key(prompt=prompt) == key(prompt=[m.model_dump() for m in prompt])


def test_long_texts_sharing_head_tail_and_middles_still_differ() -> None:
    """Two long texts that agree everywhere but one character far from their ends get two keys."""
    base = "a" * 3000
    other = base[:1500] + "b" + base[1501:]
    first, second = key(prompt=[{"text": base}]), key(prompt=[{"text": other}])
    assert first != second
    assert key(prompt=[{"text": "a" * 3000}]) == first and key(prompt=[{"text": other[:]}]) == second


def test_long_texts_give_the_same_key_in_another_process() -> None:
    """A long message's key does not depend on what this process has keyed before."""
    code = (
        "from procflow.processors import build_response_cache_key as k;"
        "print(k(scope='s', prompt=[{'t': 'hé📦' * 2000}, {'t': 'x' * 5000}]))"
    )
    key(prompt=[{"t": "x" * 5000}])  # seen here already
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    here = build_response_cache_key(scope="s", prompt=[{"t": "hé📦" * 2000}, {"t": "x" * 5000}])
    assert other.stdout.strip() == here


def test_a_string_subclass_counts_by_its_text() -> None:
    """A ``str`` subclass (an enum value, a marked-up string) keys like the plain text it holds."""

    class Marked(str):
        __slots__ = ()

    for text in ("short", "long " * 400):
        assert key(prompt=[{"text": Marked(text)}]) == key(prompt=[{"text": text}])


PINNED_TEXT = "Lieferung 注文 📦 " * 300


async def test_keys_are_those_the_previous_release_wrote() -> None:
    """Default keys are pinned: entries an earlier build stored (on Redis, say) are found again."""
    prompt = [
        PromptMessage(role="system", content=[PromptText(text="Be brief.")]),
        PromptMessage(role="user", content=[PromptText(text=PINNED_TEXT), PromptText(text="Why?")]),
    ]
    assert (
        build_response_cache_key(agent_id="support", step_number=2, scope="org-1", model=MODEL, prompt=prompt)
        == "rc2:22de874cbb0ed3ffd60e5a162f0fe417765432f564b4dcb680747873cb894d58"
    )
    store = InMemoryServerCache()
    model = ScriptedModel(["ok"], repeat_last=True)
    cache = ResponseCache(cache=store, agent_id="support")
    agent = Agent(id="a", model=model, instructions="Be brief.", input_processors=[cache])
    await agent.generate(PINNED_TEXT, request_context=RequestContext({RESOURCE_ID_KEY: "u-1"}))
    await agent.generate("Hi")
    assert list(store._entries) == [
        "rc2:7ed8a9b39297cb4b8c93adfc54e4421226286900249c00f24e24d426df281e11",
        "rc2:867f63f5d60146f63b04ebf74c70a8471218e4123dac623f1276ace0b2761e96",
    ]


@settings(max_examples=60, deadline=None)
@given(
    agent_id=st.none() | st.text(max_size=6),
    scope=st.none() | st.text(max_size=6),
    texts=st.lists(leaf_texts, min_size=1, max_size=3),
)
def test_the_default_key_is_the_public_helper_over_the_same_inputs(
    agent_id: str | None, scope: str | None, texts: list[str]
) -> None:
    """Whatever the agent, scope and prompt, the processor stores under build_response_cache_key(**inputs)."""

    async def run() -> None:
        seen: list[str] = []

        def helper(inputs: ResponseCacheKeyInputs) -> str:
            seen.append(build_response_cache_key(**inputs))
            return "custom"

        store = InMemoryServerCache()
        cache = ResponseCache(cache=store, agent_id=agent_id, scope=scope)
        agent = Agent(id="a", model=ScriptedModel(["ok"], repeat_last=True), input_processors=[cache])
        messages: list[Any] = [{"role": "user", "content": text} for text in texts]
        await agent.generate(messages, request_context=ResponseCache.context(key=helper, scope=scope))
        await agent.generate(messages)
        assert sorted(store._entries) == sorted(["custom", *seen])

    anyio.run(run)

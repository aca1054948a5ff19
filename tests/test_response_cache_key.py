"""build_response_cache_key: deterministic over its inputs, by value for files, blind to dict order."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from procflow import Agent
from procflow.cache import InMemoryServerCache
from procflow.errors import ConfigurationError
from procflow.models import PromptFile, PromptMessage, PromptText
from procflow.processors import ResponseCache, build_response_cache_key
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

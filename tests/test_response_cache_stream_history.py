"""``ResponseCache`` with ``stream_history``: a hit replays the whole answer, or there is no hit."""

from __future__ import annotations

import math
from typing import Any

import anyio
import pytest
from _agent_support import MODES, call
from guard_seams_support import SHAPES, listed
from hypothesis import given, settings
from hypothesis import strategies as st
from log_support import captured_logs

from procflow import Agent
from procflow.cache import InMemoryServerCache
from procflow.processors import ProcessLLMResponseArgs, ResponseCache
from procflow.testing import ScriptedModel, ScriptedStep

ANSWERS = {
    "en": "".join(f"word{i} " for i in range(20)),
    "fr": "Voici la réponse complète, écrite en français, avec des accents : élève, garçon, où.",
    "es": "Esta es la respuesta completa, en español, con eñes y tildes: año, corazón, pingüino.",
    "zh": "这是完整的回答，用中文写成，每个字都必须在缓存命中时完整地重放出来，一个也不能少。",
}


class Responses:
    """Records each ``process_llm_response`` call: how many chunks it got and how many were dropped."""

    id = "responses"

    def __init__(self) -> None:
        self.seen: list[tuple[int, int]] = []

    def process_llm_response(self, args: ProcessLLMResponseArgs) -> None:
        self.seen.append((len(args.chunks), args.dropped_chunks))


def chunks(text: str, size: int) -> int:
    """How many text chunks the scripted model streams ``text`` in."""
    return math.ceil(len(text) / size)


def cached_agent(text: str, chunk_size: int, *more: Any) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel([ScriptedStep(text=text, chunk_size=chunk_size)], repeat_last=True)
    cache = ResponseCache(cache=InMemoryServerCache())
    return Agent(id="a", model=model, input_processors=[cache, *more]), model


@pytest.mark.parametrize("second_mode", MODES)
@pytest.mark.parametrize("first_mode", MODES)
@pytest.mark.parametrize("lang", ANSWERS)
async def test_an_answer_longer_than_the_history_is_not_stored(
    lang: str, first_mode: str, second_mode: str
) -> None:
    """With stream_history=4 a longer answer keeps its tail only: not stored, the next call asks again."""
    text = ANSWERS[lang]
    size = math.ceil(len(text) / 20)
    agent, model = cached_agent(text, size)
    with captured_logs() as logs:
        first = await call(agent, first_mode, "Hi", stream_history=4)
    second = await call(agent, second_mode, "Hi", stream_history=4)
    assert first.result.text == second.result.text == text
    assert not second.result.steps[0].from_cache and model.calls == 2
    [skipped] = [e for e in logs if e["event"] == "response_cache_not_stored"]
    assert skipped["reason"] == "stream_history" and skipped["dropped_chunks"] == chunks(text, size) - 4
    assert skipped["log_level"] == "debug"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("lang", ANSWERS)
async def test_an_answer_within_the_history_is_replayed_whole(lang: str, mode: str) -> None:
    """An answer of no more than stream_history chunks is stored, and a hit replays all of it."""
    text = ANSWERS[lang]
    agent, model = cached_agent(text, math.ceil(len(text) / 4))
    await call(agent, mode, "Hi", stream_history=4)
    second = await call(agent, mode, "Hi", stream_history=4)
    assert second.result.steps[0].from_cache and model.calls == 1
    assert second.result.text == text
    if mode == "stream":
        assert "".join(c.text or "" for c in second.chunks if c.type == "text-delta") == text


@settings(max_examples=40)
@given(
    chunk_size=st.integers(min_value=1, max_value=40),
    history=st.integers(min_value=1, max_value=30),
    lang=st.sampled_from(sorted(ANSWERS)),
    mode=st.sampled_from(MODES),
)
def test_any_chunking_a_hit_is_the_whole_answer(chunk_size: int, history: int, lang: str, mode: str) -> None:
    """For any chunking and any stream_history, a second call gets the whole text; it is a hit iff it fit."""
    text = ANSWERS[lang]

    async def scenario() -> None:
        agent, model = cached_agent(text, chunk_size)
        await call(agent, mode, "Hi", stream_history=history)
        second = await call(agent, mode, "Hi", stream_history=history)
        assert second.result.text == text
        fits = chunks(text, chunk_size) <= history
        assert second.result.steps[0].from_cache is fits
        assert model.calls == (1 if fits else 2)

    anyio.run(scenario)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", SHAPES)
async def test_process_llm_response_is_told_what_was_dropped(shape: str, mode: str) -> None:
    """A process_llm_response hook, listed or in a workflow, learns how many chunks the history dropped."""
    responses = Responses()
    text = ANSWERS["en"]
    model = ScriptedModel([ScriptedStep(text=text, chunk_size=7)])
    agent = Agent(id="a", model=model, input_processors=listed(shape, lambda: [responses]))
    await call(agent, mode, "Hi", stream_history=5)
    whole = Agent(id="b", model=ScriptedModel([text], chunk_size=7), input_processors=[responses])
    await call(whole, mode, "Hi")
    assert responses.seen == [(5 + 1, chunks(text, 7) - 5), (chunks(text, 7) + 1, 0)]  # + the finish chunk


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", SHAPES)
async def test_a_cache_in_a_workflow_stores_no_truncated_answer(shape: str, mode: str) -> None:
    """ResponseCache inside a workflow, with stream_history: the later call is a miss, not a tail."""
    text = ANSWERS["es"]
    model = ScriptedModel([ScriptedStep(text=text, chunk_size=3)], repeat_last=True)
    inputs = listed(shape, lambda: [ResponseCache(cache=InMemoryServerCache())])
    agent = Agent(id="a", model=model, input_processors=inputs)
    await call(agent, mode, "Hola", stream_history=8)
    second = await call(agent, mode, "Hola", stream_history=8)
    assert second.result.text == text and model.calls == 2

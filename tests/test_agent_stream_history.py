"""``stream_history``: a long stream keeps a bounded window of chunks, and loses none of its text."""

from __future__ import annotations

from typing import Any

import pytest

from procflow import Agent, Chunk
from procflow.errors import ConfigurationError
from procflow.processors import ProcessOutputStreamArgs
from procflow.testing import ScriptedModel

WORDS = "".join(f"w{i:03d} " for i in range(300))


class Window:
    """Records, for each chunk, how many parts ``stream_parts`` held and whether it ends with the chunk."""

    id = "window"

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.last_is_current: list[bool] = []
        self.count = 0

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        self.count += 1
        self.sizes.append(len(args.stream_parts))
        self.last_is_current.append(args.stream_parts[-1] is args.part)
        return args.part


def _agent(window: Window) -> Agent:
    return Agent(id="a", model=ScriptedModel([WORDS], chunk_size=5), output_processors=[window])


async def test_bounded_history_keeps_a_window_and_the_whole_text() -> None:
    """stream_history=10: processors see 10 to 20 recent parts, the step keeps 10, the text is whole."""
    window = Window()
    result = await _agent(window).generate("go", stream_history=10)
    assert result.text == WORDS
    assert window.count > 100
    assert max(window.sizes) <= 20
    assert all(size >= min(10, seen + 1) for seen, size in enumerate(window.sizes))
    assert all(window.last_is_current)
    assert len(result.steps[0].chunks) == 10
    assert result.steps[0].chunks[-1].type == "text-delta"


async def test_default_keeps_every_chunk() -> None:
    """Without stream_history every chunk stays in stream_parts and in the step's chunks."""
    window = Window()
    result = await _agent(window).generate("go")
    assert result.text == WORDS
    assert window.sizes == list(range(1, window.count + 1))
    text = "".join(c.payload.get("text") or "" for c in result.steps[0].chunks if c.type == "text-delta")
    assert text == WORDS


async def test_bounded_stream_yields_every_chunk_to_the_consumer() -> None:
    """The consumer still receives every text delta of a bounded stream."""
    output = _agent(Window()).stream("go", stream_history=3)
    texts = [c.payload.get("text") or "" async for c in output.full_stream if c.type == "text-delta"]
    assert "".join(texts) == WORDS


@pytest.mark.parametrize("value", [0, -1, 2.5, True, "10"])
def test_a_bad_stream_history_is_refused(value: Any) -> None:
    """stream_history must be a positive integer or None."""
    with pytest.raises(ConfigurationError, match="stream_history"):
        _agent(Window()).stream("go", stream_history=value)

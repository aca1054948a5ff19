"""Shared helpers for the agent tests: run one scenario through generate() or stream()."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from procflow import Agent, Chunk, GenerateResult
from procflow.errors import ProcessorFailedError
from procflow.models import PromptMessage

MODES = ("generate", "stream")
"""Every agent scenario is parametrised over both entry points."""


@dataclass
class Outcome:
    """A call's result, plus the chunks a stream consumer received (empty for generate())."""

    result: GenerateResult
    chunks: list[Chunk] = field(default_factory=list)

    @property
    def types(self) -> list[str]:
        return [c.type for c in self.chunks]


async def call(agent: Agent, mode: str, messages: Any, **options: Any) -> Outcome:
    """Run ``agent`` on ``messages`` through ``generate()`` or ``stream()``."""
    if mode == "generate":
        return Outcome(await agent.generate(messages, **options))
    output = agent.stream(messages, **options)
    chunks = [chunk async for chunk in output.full_stream]
    return Outcome(output.result, chunks)


def texts(prompt: list[PromptMessage]) -> list[str]:
    """The text of each prompt message."""
    return [m.text for m in prompt]


MISUSE = (ValueError, ProcessorFailedError)
"""What a misuse of procflow's API inside a hook raises: a ``ValueError`` (a procflow error, passed
through as it is), or — while that API raises a plain ``ValueError`` — the fail-closed wrapper."""


def misuse(error: BaseException) -> BaseException:
    """The misuse error itself, unwrapped from a :class:`ProcessorFailedError`."""
    return error.original if isinstance(error, ProcessorFailedError) else error

"""A redacting guard before TokenLimiter on the output: a cut never leaves part of a match unredacted."""

from __future__ import annotations

from typing import Any

import pytest
from _agent_support import MODES, call
from guard_seams_support import SHAPES, Observer, in_parallel, listed

from procflow import Agent, Chunk
from procflow.processors import RegexFilterProcessor, TiktokenCounter, TokenLimiter
from procflow.testing import ScriptedModel, ScriptedStep

COUNTER = TiktokenCounter()
EMAIL = "ana.lopez@example.org"
ANSWERS = {
    "en": f"Contact {EMAIL} today for the refund.",
    "fr": f"Écrivez à {EMAIL} dès aujourd'hui pour le remboursement.",
    "es": f"Escriba a {EMAIL} hoy mismo para el reembolso.",
    "zh": f"请发邮件至 {EMAIL} 申请退款。",
}


def deltas(chunks: list[Chunk]) -> str:
    return "".join(c.text or "" for c in chunks if c.type == "text-delta")


def redact_then_limit(shape: str, limit: int) -> list[Any]:
    """The documented output order, listed or in a workflow: the redacting guard, then the limit."""
    redact = RegexFilterProcessor(presets=["pii"], strategy="redact")
    if shape == "parallel":
        return [in_parallel(redact, Observer()), TokenLimiter(limit)]
    return listed(shape, lambda: [redact, TokenLimiter(limit)])


@pytest.mark.parametrize("lang", sorted(ANSWERS))
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", MODES)
async def test_redact_then_limit_never_leaks_part_of_an_address(lang: str, shape: str, mode: str) -> None:
    """Filter first: wherever the limit cuts, no part of the address is sent, and the result matches."""
    text = ANSWERS[lang]
    redacted = text.replace(EMAIL, "[EMAIL]")
    for limit in range(1, COUNTER.count(redacted) + 2):
        for chunk_size in (3, 7):
            model = ScriptedModel([ScriptedStep(text=text, chunk_size=chunk_size)])
            agent = Agent(id="a", model=model, output_processors=redact_then_limit(shape, limit))
            outcome = await call(agent, mode, "?")
            kept = outcome.result.text
            assert "ana" not in kept and "lopez" not in kept and "@" not in kept
            assert redacted.startswith(kept) and COUNTER.count(kept) <= limit
            if mode == "stream":
                assert deltas(outcome.chunks) == kept

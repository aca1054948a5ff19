"""The agent example script runs offline and shows redaction, a retry, a tool and a block."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "agent_processors.py"


async def test_example_runs_and_prints_what_happened(capsys: pytest.CaptureFixture[str]) -> None:
    """The example's main() redacts, retries once, calls its tool, answers, then blocks a card number."""
    namespace = runpy.run_path(str(EXAMPLE), run_name="agent_processors_example")
    await namespace["main"]()
    out = capsys.readouterr().out
    assert "the model saw: I'm [EMAIL]. Where is my order 42?" in out
    assert "discarded 'Too short: say where the order is and when it arrives.'" in out
    assert "data-progress {'data': {'order_id': '42', 'step': 'lookup'}}" in out
    assert "answer:        Order 42 left our warehouse today and arrives on Thursday." in out
    assert "finish:        stop | model calls: 3" in out
    assert "blocked by block-card-numbers: Please don't share card numbers here. (other)" in out

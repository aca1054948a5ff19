"""examples/llm_guards.py runs against an Ollama-compatible server (the fake provider on a socket)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from guard_support import judge_responder

from procflow.testing import FakeProviderServer, FakeReply, RecordedRequest

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "llm_guards.py"


def _answer(request: RecordedRequest) -> FakeReply:
    messages = request.json["messages"]
    if messages[0]["content"].startswith("You are the support assistant"):
        return FakeReply(text="Bien sûr, écrivez-nous à marie.dupont@example.fr.")
    return judge_responder(request)


async def test_the_example_guards_an_agent_on_ollama(monkeypatch: pytest.MonkeyPatch) -> None:
    """Input PII is redacted before the model, and the model's own PII is redacted on the way out."""
    spec = importlib.util.spec_from_file_location("llm_guards", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with FakeProviderServer([_answer] * 10) as server:
        monkeypatch.setenv("OLLAMA_BASE_URL", server.url)
        answer = await module.main(["Mon e-mail est marie.dupont@example.fr, pouvez-vous m'aider ?"])
        agent_request = next(
            r.json
            for r in server.requests
            if r.json["messages"][0]["content"].startswith("You are the support")
        )
    assert answer == "Bien sûr, écrivez-nous à [EMAIL]."
    assert "marie.dupont@example.fr" not in json.dumps(agent_request)

"""``procflow run``'s report counts exactly the redactions its output holds."""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from cli_support import EXAMPLE_DATA, jsonl, procflow
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

PLACEHOLDERS = {
    "[EMAIL]": ("email",),
    "[PHONE]": ("phone",),
    "[SSN]": ("ssn",),
    "[CREDIT_CARD]": ("credit-card",),
    "[API_KEY]": ("api-key",),
    "[SECRET]": ("client-secret",),
    "[BEARER_TOKEN]": ("bearer-token",),
    "[BASIC_AUTH]": ("basic-auth",),
    "[JWT]": ("jwt",),
    "[PASSWORD]": ("password",),
    "[AWS_KEY]": ("aws-key", "aws-secret-key"),
    "[PRIVATE_KEY]": ("private-key",),
}
"""What the bundled guard writes in place of a match, and the rules that write it."""


def _held(output: str) -> Counter[str]:
    """The placeholders the written conversations hold (the ``blocked`` reports left out)."""
    text = json.dumps([record["messages"] for record in jsonl(output)], ensure_ascii=False)
    return Counter({p: text.count(p) for p in PLACEHOLDERS if p in text})


def _reported(report: dict[str, Any]) -> Counter[str]:
    """The report's redactions per placeholder."""
    counts: Counter[str] = Counter()
    for placeholder, rules in PLACEHOLDERS.items():
        for rule in rules:
            counts[placeholder] += report["redactions"].get(rule, 0)
    assert sum(counts.values()) == report["redactions_total"]  # no rule the table misses
    return +counts


def _run(*args: str | Path, stdin: str | None = None) -> tuple[str, dict[str, Any]]:
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        done = procflow("run", *args, "-q", "--keep-blocked", "--report", report, stdin=stdin)
        assert done.returncode == 0, done.stderr
        return done.stdout, json.loads(report.read_text(encoding="utf-8"))


@pytest.mark.parametrize("workers", ["1", "2"])
def test_the_report_on_the_bundled_data_counts_what_the_output_holds(workers: str) -> None:
    """Each rule's count is the number of its placeholders in the output, with one worker or two."""
    output, report = _run(EXAMPLE_DATA, "--workers", workers)
    assert _reported(report) == _held(output)
    assert report["redactions"]["email"] == 17
    assert report["redactions"]["phone"] == 9


def test_a_tool_call_redacted_once_is_counted_once() -> None:
    """The arguments of a call are the assistant turn's: its tool turn does not count them again."""
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "lookup", "arguments": json.dumps({"email": "ana.garcia@example.com"})},
    }
    record = {
        "messages": [
            {"role": "user", "content": "where is my order?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": '{"status": "shipped"}'},
        ]
    }
    output, report = _run("-", stdin=json.dumps(record) + "\n")
    assert report["redactions"] == {"email": 1}
    assert output.count("[EMAIL]") == 1


VALUES = [
    "ana.garcia@example.com",
    "marie.dupont@example.fr",
    "+1 555 123 4567",
    "电话+86 139 1234 5678。",
    "4111 1111 1111 1111",
    "123-45-6789",
    "sk-proj-abcdefghijkmnpqrstuvwx0123",
]
WORDS = ["Where is my order?", "Où est ma commande ?", "¿Dónde está mi pedido?", "我的订单在哪里", *VALUES]


def _texts() -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)


@st.composite
def conversations(draw: st.DrawFn) -> dict[str, Any]:
    """Values in every place the guard checks: each role's text, content parts, tool calls and their
    results, reasoning and refusals."""
    texts = _texts()
    turns: list[dict[str, Any]] = [
        {"role": draw(st.sampled_from(["system", "developer"])), "content": draw(texts)}
    ]
    for index in range(draw(st.integers(1, 3))):
        parts = st.lists(texts.map(lambda t: {"type": "text", "text": t}), min_size=1, max_size=2)
        turns.append({"role": "user", "content": draw(st.one_of(texts, parts))})
        arguments = {"email": draw(st.sampled_from(VALUES)), "q": draw(texts)}
        function = {"name": "lookup", "arguments": json.dumps(arguments, ensure_ascii=False)}
        turns.append(
            {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{index}", "function": function}]}
        )
        turns.append({"role": "tool", "tool_call_id": f"c{index}", "content": draw(st.one_of(texts, parts))})
        answer = {"role": "assistant", "content": draw(texts), "reasoning_content": draw(texts)}
        if draw(st.booleans()):
            answer["refusal"] = draw(texts)
        turns.append(answer)
    return {"id": "c", "messages": turns}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(conversations(), min_size=1, max_size=4))
def test_the_report_counts_what_the_output_holds_for_any_conversation(records: list[dict[str, Any]]) -> None:
    """Whatever the turns hold and wherever, every count equals the placeholders written."""
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    output, report = _run("-", stdin=lines)
    assert _reported(report) == _held(output)

"""The bundled example (what `make run` does): the default guard over examples/data, the example workflow."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from cli_support import EXAMPLE_DATA, EXAMPLE_PIPELINE, jsonl, procflow

SECRETS_AND_PII = [
    "maria.schmidt@example.de",
    "4111 1111 1111 1111",
    "jordan.lee@example.com",
    "+44 20 7946 0958",
    "07700 900123",
    "nb_live_4f9a7c2e8d1b6a3f5e0c9d8b7a6f5e4d",
    "eyJhbGciOiJIUzI1NiJ9",
    "josé.garcía@ejemplo.es",
    "+34 612 345 678",
    "BEGIN OPENSSH PRIVATE KEY",
    "nb_live_9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f",
    "(415) 555-0132",
    "accounts-payable@kestrel.example",
    "ghp_R4nd0mL00k1ngT0k3nF0rD0cs0nly1234567",
    "AKIA2E0A8F3B244C9986",
    "q8Hn2Lr+Vt5Wx7Zb9Pd1Kf3Mg/Js4Qc6Ye0Ua2Io",
    "5555 5555 5555 4444",
    "xoxb-2048193847",
    "zoë.müller@example.ch",
    "+41 44 668 18 00",
    "nb_live_1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d",
    "aiko.tanaka+gear@example.jp",
    "+81 3-1234-5678",
    "Kx9mQ2vR7tY4wZ1aB8cD5eF3gH6jL0nP",
    "3782 822463 10005",
    "dana.okafor@example.net",
]
KEPT = ["order #48213", "2024-11-7731", "1Z999AA10123456784", "account 00231877", "7731-0042", "$389.00"]


def test_the_default_guard_redacts_the_example_data_and_marks_blocked_conversations(tmp_path: Path) -> None:
    """Every planted e-mail, card, phone and key is redacted; injections are blocked; ids and orders stay."""
    out = tmp_path / "out" / "conversations.jsonl"
    done = procflow("run", EXAMPLE_DATA, "-o", out, "--report", tmp_path / "report.json")
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    assert [s for s in SECRETS_AND_PII if s in text] == []
    assert all(kept in text for kept in KEPT)
    records = jsonl(text)
    assert len(records) == 31
    blocked = {r["id"]: r["blocked"]["processor_id"] for r in records if "blocked" in r}
    assert blocked == dict.fromkeys(["conv-007", "conv-014", "conv-019", "conv-027"], "injection-guard")
    assert re.search(r"conversations processed\s*│\s*31", done.stderr)
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert report["conversations"]["blocked"] == 4
    assert {"email", "phone", "credit-card", "api-key", "private-key"} <= set(report["redactions"])


def test_the_example_workflow_checks_clean() -> None:
    """`procflow check` on the example workflow finds no errors."""
    done = procflow("check", f"{EXAMPLE_PIPELINE}:pipeline")
    assert done.returncode == 0, done.stdout
    assert "workflow 'support-guards'" in done.stdout


def test_the_example_workflow_is_drawn_as_svg() -> None:
    """`procflow graph examples/pipeline.py:pipeline --format svg` is a valid SVG naming every step."""
    done = procflow("graph", f"{EXAMPLE_PIPELINE}:pipeline", "--format", "svg")
    assert done.returncode == 0, done.stderr
    root = ET.fromstring(done.stdout.encode("utf-8"))
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    labels = {element.text for element in root.iter("{http://www.w3.org/2000/svg}text")}
    assert {"processor:injection-guard", "processor:legal-handoff", "processor:redact-pii-secrets"} <= labels


def test_the_example_workflow_runs_over_the_example_data() -> None:
    """The example workflow, used as a pipeline, blocks injections and legal threats and redacts the rest."""
    done = procflow("run", EXAMPLE_DATA, "-p", f"{EXAMPLE_PIPELINE}:pipeline", "-q")
    assert done.returncode == 0, done.stderr
    records = jsonl(done.stdout)
    assert "maria.schmidt@example.de" not in done.stdout
    blocked = {r["id"]: r["blocked"]["processor_id"] for r in records if "blocked" in r}
    assert blocked == {
        **dict.fromkeys(["conv-007", "conv-014", "conv-019", "conv-027"], "injection-guard"),
        "conv-031": "legal-handoff",
    }

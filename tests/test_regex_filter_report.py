"""The original's report contract: rule names, overlapping_rules, block metadata, tie-breaking."""

from __future__ import annotations

from procflow.processors import ProcessorViolation, RegexFilterProcessor, RegexRule
from procflow.testing import run_input, run_output_stream


async def _redactions(f: RegexFilterProcessor, text: str) -> list[dict[str, object]]:
    seen: list[ProcessorViolation] = []
    f.on_violation = seen.append
    await run_input(f, [text])
    return [dict(entry) for v in seen for entry in v.detail["redactions"]]


async def test_aws_access_key_ids_keep_the_original_rule_name() -> None:
    """AWS access key ids are reported as ``aws-key``; secret keys keep ``aws-secret-key``."""
    f = RegexFilterProcessor(presets=["secrets"], strategy="redact")
    text = "id AKIA2E0A8F3B244C9986 aws_secret_access_key=q8Hn2Lr+Vt5Wx7Zb9Pd1Kf3Mg/Js4Qc6Ye0Ua2Io"
    assert [e["rule"] for e in await _redactions(f, text)] == ["aws-key", "aws-secret-key"]


async def test_overlapping_rules_only_when_different_rules_overlap() -> None:
    """Two patterns of one rule merged into a region do not set ``overlapping_rules``; different rules
    do, each name listed once."""
    same = [RegexRule("code", r"AB\d+"), RegexRule("code", r"\d+CD")]
    entries = await _redactions(RegexFilterProcessor(rules=same, strategy="redact"), "x AB12CD y")
    assert entries == [{"rule": "code", "index": 2, "length": 6, "replacement": "[REDACTED]"}]
    rules = [*same, RegexRule("digits", r"\d\d")]
    entries = await _redactions(RegexFilterProcessor(rules=rules, strategy="redact"), "x AB12CD y")
    assert entries[0]["overlapping_rules"] == ["code", "digits"]


async def test_nested_entities_in_a_merged_region_are_listed() -> None:
    """An e-mail inside a URL is redacted with the URL and named in ``overlapping_rules``."""
    f = RegexFilterProcessor(presets=["pii", "urls"], strategy="redact")
    entries = await _redactions(f, "see https://example.com/invite?to=ana@example.org now")
    assert [(e["rule"], e.get("overlapping_rules")) for e in entries] == [("url", ["url", "email"])]


async def test_block_metadata_lists_each_rule_and_index_once() -> None:
    """A text several patterns of one rule match at the same place is listed once per (rule, index)."""
    rules = [RegexRule("id", r"ID-\d+"), RegexRule("id", r"ID-\d{3}")]
    f = RegexFilterProcessor(rules=rules)
    out = await run_input(f, ["ref ID-123 and ID-4567"])
    assert out.tripwire is not None
    pairs = [(m["rule"], m["index"]) for m in out.tripwire.metadata["matches"]]
    assert pairs == [("id", 4), ("id", 15)]
    streamed = await run_output_stream(f, ["ref ID-1", "23 and ID-4567"])
    assert streamed.tripwire is not None
    pairs = [(m["rule"], m["index"]) for m in streamed.tripwire.metadata["matches"]]
    assert len(pairs) == len(set(pairs))


def test_a_preset_wins_an_equal_length_tie_with_a_custom_rule() -> None:
    """Presets are ordered first, as in the original: on a tie the preset's replacement is used."""
    rule = RegexRule("mail", r"\S+@\S+", replacement="<MAIL>")
    f = RegexFilterProcessor(rules=[rule], presets=["pii"], strategy="redact")
    assert f.redact("write ana@example.org") == "write [EMAIL]"

"""RegexFilterProcessor on whole messages: parameters, strategies, phases, every text a message carries."""

from __future__ import annotations

import re

import pytest
import regex
from log_support import captured_logs as capture_logs

from procflow import Message, MessageContent, TextPart, ToolInvocationPart
from procflow._messages.results import OutputResult
from procflow.errors import ConfigurationError, PatternTimeoutError
from procflow.processors import ProcessorViolation, RegexFilterProcessor, RegexRule
from procflow.testing import run_input, run_output_result

CARD = "4111111111111111"


def test_identity_matches_the_seed() -> None:
    """The processor's id is ``regex-filter`` and its name ``Regex Filter``; ``id=`` overrides the id."""
    assert RegexFilterProcessor(presets=["pii"]).id == "regex-filter"
    assert RegexFilterProcessor(presets=["pii"]).name == "Regex Filter"
    assert RegexFilterProcessor(presets=["pii"], id="pii-2").id == "pii-2"


def test_defaults_are_block_all_and_128() -> None:
    """Without options the strategy is block, the phase all, the carryover 128, values not included."""
    f = RegexFilterProcessor(presets=["secrets"])
    assert (f.strategy, f.phase, f.stream_carryover_size, f.include_redacted_values) == (
        "block",
        "all",
        128,
        False,
    )


def test_needs_a_rule_or_a_preset() -> None:
    """A filter with neither rules nor presets is a configuration error that says what to pass."""
    with pytest.raises(ConfigurationError, match="at least one rule or preset"):
        RegexFilterProcessor()


@pytest.mark.parametrize("size", [0, -5, 1.5, "128", True])
def test_carryover_must_be_a_positive_integer(size: object) -> None:
    """``stream_carryover_size`` must be a positive integer."""
    with pytest.raises(ConfigurationError, match="stream_carryover_size must be a positive integer"):
        RegexFilterProcessor(presets=["pii"], stream_carryover_size=size)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"presets": ["phones"]}, "unknown preset 'phones'"),
        ({"presets": ["pii"], "strategy": "mask"}, "strategy must be one of"),
        ({"presets": ["pii"], "phase": "both"}, "phase must be one of"),
        ({"rules": [RegexRule("bad", "(unclosed")]}, "rule 'bad': invalid pattern"),
        ({"rules": [RegexRule("", "x")]}, "non-empty string name"),
        ({"rules": [{"pattern": "x"}]}, "needs 'name' and 'pattern'"),
        ({"rules": [RegexRule("t", "x", timeout=0)]}, "timeout must be a positive number"),
        ({"rules": [RegexRule("g", "(a)", replacement="$2")]}, r"refers to \$2 but the pattern has 1 group"),
        ({"rules": [RegexRule("n", "(a)", replacement="$<who>")]}, r"refers to \$<who>"),
    ],
)
def test_bad_configuration_is_reported(options: dict[str, object], message: str) -> None:
    """Unknown presets, strategies and phases, broken patterns and references raise clear errors."""
    with pytest.raises(ConfigurationError, match=message):
        RegexFilterProcessor(**options)  # type: ignore[arg-type]


async def test_seed_example_card_is_redacted() -> None:
    """The seed's example: ``Charge 4111111111111111 today`` becomes ``Charge [CREDIT_CARD] today``."""
    out = await run_input(RegexFilterProcessor(presets=["pii"], strategy="redact"), [f"Charge {CARD} today"])
    assert out.text == "Charge [CREDIT_CARD] today"


async def test_seed_custom_rule_with_replacement() -> None:
    """The seed's custom rule: ``INTERNAL-\\d{6}`` replaced by ``[INTERNAL_ID]``."""
    rule = RegexRule("internal-id", re.compile(r"INTERNAL-\d{6}"), replacement="[INTERNAL_ID]")
    out = await run_input(RegexFilterProcessor(rules=[rule], strategy="redact"), ["see INTERNAL-123456 now"])
    assert out.text == "see [INTERNAL_ID] now"


async def test_seed_secrets_redacted_on_output() -> None:
    """The seed's output example: secrets redacted in the output result, input left alone."""
    f = RegexFilterProcessor(presets=["secrets"], strategy="redact", phase="output")
    text = "use Bearer eyJhbGciOiJIUzI1NiJ9.abc123 and AKIA2E0A8F3B244C9986"
    assert (await run_output_result(f, [text])).text == "use Bearer [BEARER_TOKEN] and [AWS_KEY]"
    assert (await run_input(f, [text])).text == text


async def test_rules_may_be_mappings_and_default_to_redacted() -> None:
    """Rules may be given seed-style as mappings; without a replacement the text is ``[REDACTED]``."""
    f = RegexFilterProcessor(rules=[{"name": "ticket", "pattern": r"TCK-\d+"}], strategy="redact")
    assert (await run_input(f, ["ticket TCK-42 closed"])).text == "ticket [REDACTED] closed"


async def test_compiled_regex_package_patterns_keep_their_flags() -> None:
    """A compiled ``regex`` pattern is accepted and keeps its flags (here: ignore case)."""
    f = RegexFilterProcessor(rules=[RegexRule("code", regex.compile("secret", regex.I))], strategy="redact")
    assert (await run_input(f, ["a SeCrEt b"])).text == "a [REDACTED] b"


async def test_block_raises_a_tripwire_with_masked_matches() -> None:
    """``block`` stops with ``retry=False`` and metadata naming rule and index, the value masked."""
    f = RegexFilterProcessor(presets=["pii"], strategy="block", phase="input")
    out = await run_input(f, ["write to bob@example.com"])
    assert out.tripwire is not None
    assert out.tripwire.retry is False
    assert out.tripwire.processor_id == "regex-filter"
    meta = out.tripwire.metadata
    assert meta["processor_id"] == "regex-filter"
    assert meta["strategy"] == "block"
    assert meta["matches"][0] | {"message_id": None} == {
        "rule": "email",
        "match": "[REDACTED_MATCH]",
        "index": 9,
        "message_id": None,
        "part_index": 0,
    }
    assert "bob@example.com" not in repr(out.tripwire)


async def test_block_passes_clean_text() -> None:
    """``block`` leaves text without matches alone."""
    out = await run_input(RegexFilterProcessor(presets=["pii", "secrets", "urls"]), ["Order #4711 shipped."])
    assert out.tripwire is None
    assert out.text == "Order #4711 shipped."


async def test_warn_logs_and_passes_unchanged() -> None:
    """``warn`` logs rule names (never values) and passes the content unchanged."""
    f = RegexFilterProcessor(presets=["pii"], strategy="warn")
    with capture_logs() as logs:
        out = await run_input(f, [f"card {CARD}"])
    assert out.text == f"card {CARD}" and out.tripwire is None
    [event] = [e for e in logs if e["event"] == "regex_filter_match"]
    assert event["rules"] == ["credit-card"] and event["log_level"] == "warning"
    assert CARD not in repr(logs)


@pytest.mark.parametrize(
    ("phase", "input_hit", "output_hit"), [("input", 1, 0), ("output", 0, 1), ("all", 1, 1)]
)
async def test_phases_select_the_hooks(phase: str, input_hit: int, output_hit: int) -> None:
    """``input`` filters input messages, ``output`` the output result (and stream), ``all`` both."""
    f = RegexFilterProcessor(presets=["pii"], strategy="redact", phase=phase)  # type: ignore[arg-type]
    inp = await run_input(f, ["mail bob@example.com"])
    out = await run_output_result(f, ["mail bob@example.com"])
    assert inp.text.count("[EMAIL]") == input_hit
    assert out.text.count("[EMAIL]") == output_hit


async def test_every_text_part_and_the_flattened_fallback_are_checked() -> None:
    """Text parts and the flattened ``content.content`` are redacted; other parts are left untouched
    (tool-call arguments too when ``tool_arguments`` is off)."""
    tool = ToolInvocationPart(tool_call_id="c1", tool_name="lookup", args={"email": "bob@example.com"})
    message = Message(
        role="user",
        content=MessageContent(
            parts=[TextPart(text="mail bob@example.com"), tool, TextPart(text=" or amy@example.org")],
            content="mail bob@example.com or amy@example.org",
        ),
    )
    f = RegexFilterProcessor(presets=["pii"], strategy="redact", tool_arguments=False)
    out = await run_input(f, [message])
    [result] = out.messages
    texts = [p.text for p in result.content.parts if isinstance(p, TextPart)]
    assert texts == ["mail [EMAIL]", " or [EMAIL]"]
    assert result.content.content == "mail [EMAIL] or [EMAIL]"
    assert result.content.parts[1] == tool
    assert result.id == message.id


async def test_block_sees_the_fallback_text_alone() -> None:
    """A secret only in the flattened fallback still trips ``block``."""
    message = Message(role="user", content=MessageContent(content="key sk-proj-abc123DEF456ghi789JKL0"))
    out = await run_input(RegexFilterProcessor(presets=["secrets"]), [message])
    assert out.tripwire is not None
    assert "part_index" not in out.tripwire.metadata["matches"][0]


async def test_output_result_text_is_redacted_too() -> None:
    """``process_output_result`` redacts the response messages and the result's text."""
    result = OutputResult(text=f"card {CARD}", finish_reason="stop")
    f = RegexFilterProcessor(presets=["pii"], strategy="redact")
    out = await run_output_result(f, [f"card {CARD}"], result=result)
    assert out.text == "card [CREDIT_CARD]"
    assert result.text == "card [CREDIT_CARD]"


async def test_redact_without_matches_returns_nothing_new() -> None:
    """When nothing matches, the messages are left as they were (the same objects)."""
    message = Message.user("nothing to see")
    out = await run_input(RegexFilterProcessor(presets=["pii"], strategy="redact"), [message])
    assert out.messages[0] is message


async def test_string_pattern_timeout_is_a_clear_error() -> None:
    """A string pattern that runs past its timeout raises PatternTimeoutError instead of hanging."""
    rule = RegexRule("evil", r"(a|aa)+$", timeout=0.05)
    f = RegexFilterProcessor(rules=[rule], strategy="redact")
    with pytest.raises(PatternTimeoutError, match=r"regex rule 'evil' ran longer than its 0\.05s timeout"):
        await run_input(f, ["a" * 64 + "b"])


def test_redact_method_works_without_an_agent() -> None:
    """``redact()`` replaces matches in a plain string, whatever the strategy."""
    assert RegexFilterProcessor(presets=["urls"]).redact("see https://example.com.") == "see [URL]."


async def test_validate_filters_candidates() -> None:
    """A rule's ``validate`` rejects candidates; a rejected candidate hides no match inside it."""
    rule = RegexRule("even", r"\d+", validate=lambda value: int(value) % 2 == 0)
    f = RegexFilterProcessor(rules=[rule], strategy="redact")
    assert (await run_input(f, ["7 and 12 and 9"])).text == "7 and [REDACTED] and 9"


class _Recorder:
    def __init__(self) -> None:
        self.seen: list[ProcessorViolation] = []

    async def __call__(self, violation: ProcessorViolation) -> None:
        self.seen.append(violation)


async def test_redaction_report_per_part_and_fallback() -> None:
    """``on_violation`` gets one report per redacted part and one for the fallback, with offsets."""
    recorder = _Recorder()
    f = RegexFilterProcessor(presets=["pii"], strategy="redact")
    f.on_violation = recorder
    message = Message(
        role="user",
        content=MessageContent(
            parts=[TextPart(text="hi"), TextPart(text="to bob@example.com")], content="x 123-45-6789"
        ),
    )
    await run_input(f, [message])
    details = [v.detail for v in recorder.seen]
    assert details == [
        {
            "strategy": "redact",
            "phase": "process_input",
            "message_id": message.id,
            "part_index": 1,
            "redactions": [{"rule": "email", "index": 3, "length": 15, "replacement": "[EMAIL]"}],
        },
        {
            "strategy": "redact",
            "phase": "process_input",
            "message_id": message.id,
            "redactions": [{"rule": "ssn", "index": 2, "length": 11, "replacement": "[SSN]"}],
        },
    ]
    assert all(v.processor_id == "regex-filter" for v in recorder.seen)


async def test_report_values_only_when_asked() -> None:
    """``include_redacted_values=True`` adds the redacted text to each report entry."""
    recorder = _Recorder()
    f = RegexFilterProcessor(presets=["pii"], strategy="redact", include_redacted_values=True, phase="output")
    f.on_violation = recorder
    await run_output_result(f, ["mail bob@example.com"])
    [violation] = recorder.seen
    assert violation.detail["phase"] == "process_output_result"
    assert violation.detail["redactions"][0]["value"] == "bob@example.com"


async def test_sync_callbacks_work_and_callback_errors_are_swallowed() -> None:
    """A sync callback is called; one that raises does not fail the request."""
    calls: list[str] = []

    def broken(violation: ProcessorViolation) -> None:
        calls.append(violation.message)
        raise RuntimeError("audit sink down")

    f = RegexFilterProcessor(presets=["pii"], strategy="redact")
    f.on_violation = broken
    out = await run_input(f, ["mail bob@example.com"])
    assert out.text == "mail [EMAIL]"
    assert calls == ["Redacted 1 match(es): email"]


async def test_block_reports_its_tripwire_metadata() -> None:
    """For ``block`` the runner's ``on_violation`` gets the tripwire metadata, not a redaction detail."""
    recorder = _Recorder()
    f = RegexFilterProcessor(presets=["pii"])
    f.on_violation = recorder
    await run_input(f, ["ssn 123-45-6789"])
    [violation] = recorder.seen
    assert violation.detail["strategy"] == "block"
    assert violation.detail["matches"][0]["match"] == "[REDACTED_MATCH]"

"""Tool-call arguments as a first-class option: every string inside them checked, each redaction once."""

from __future__ import annotations

import pytest

from procflow import Message, MessageContent, TextPart, ToolInvocationPart
from procflow.processors import ProcessorViolation, RegexFilterProcessor
from procflow.testing import run_input, run_output_result


def _call(args: dict[str, object], text: str = "looking that up") -> Message:
    part = ToolInvocationPart(tool_call_id="c1", tool_name="lookup_customer", args=args)
    return Message(role="assistant", content=MessageContent(parts=[TextPart(text=text), part]))


ARGS = {
    "email": "ana.garcia@ejemplo.es",
    "filters": [{"phone": "+33 6 12 34 56 78"}, {"note": "客户电话13912345678"}],
    "limit": 5,
    "token": "api_key=sk-proj-abc123DEF456ghi789JKL0",
}


async def test_strings_inside_tool_arguments_are_redacted_at_any_depth() -> None:
    """E-mails, phones (French, Chinese) and keys inside nested dicts and lists are redacted; numbers
    and the structure stay; the text part is checked as before."""
    f = RegexFilterProcessor(presets=["pii", "secrets"], strategy="redact")
    out = await run_input(f, [_call(ARGS, text="write to bob@example.com")])
    [message] = out.messages
    text, call = message.content.parts
    assert isinstance(text, TextPart) and text.text == "write to [EMAIL]"
    assert isinstance(call, ToolInvocationPart)
    assert call.args == {
        "email": "[EMAIL]",
        "filters": [{"phone": "[PHONE]"}, {"note": "客户电话[PHONE]"}],
        "limit": 5,
        "token": "api_key=[API_KEY]",
    }


async def test_each_redaction_is_reported_once_with_its_path() -> None:
    """One report per redacted string, naming the part and the argument path; no duplicate counts."""
    f = RegexFilterProcessor(presets=["pii", "secrets"], strategy="redact")
    seen: list[ProcessorViolation] = []
    f.on_violation = seen.append
    await run_input(f, [_call(ARGS)])
    paths = [(v.detail["part_index"], v.detail["arg_path"]) for v in seen]
    assert paths == [
        (1, ["email"]),
        (1, ["filters", 0, "phone"]),
        (1, ["filters", 1, "note"]),
        (1, ["token"]),
    ]
    assert sum(len(v.detail["redactions"]) for v in seen) == 4


async def test_block_trips_on_tool_arguments() -> None:
    """Under ``block`` a secret in tool-call arguments stops the request, listed with its path."""
    f = RegexFilterProcessor(presets=["secrets"])
    out = await run_input(f, [_call({"password": "password=Tr0ub4dor&3"})])
    assert out.tripwire is not None
    [match] = out.tripwire.metadata["matches"]
    assert (match["rule"], match["arg_path"]) == ("password", ["password"])


@pytest.mark.parametrize(("phase", "checked"), [("input", True), ("all", True), ("output", False)])
async def test_the_default_follows_the_phase(phase: str, checked: bool) -> None:
    """On by default for ``phase="input"`` and ``"all"``, off for ``"output"`` unless asked for."""
    f = RegexFilterProcessor(presets=["pii"], strategy="redact", phase=phase)  # type: ignore[arg-type]
    assert f.tool_arguments is checked
    forced = RegexFilterProcessor(presets=["pii"], strategy="redact", phase="output", tool_arguments=True)
    out = await run_output_result(forced, [_call({"email": "ana@example.org"})])
    call = out.messages[0].content.parts[1]
    assert isinstance(call, ToolInvocationPart) and call.args == {"email": "[EMAIL]"}


async def test_tool_arguments_can_be_turned_off() -> None:
    """``tool_arguments=False`` leaves the arguments as they are."""
    f = RegexFilterProcessor(presets=["pii"], strategy="redact", tool_arguments=False)
    out = await run_input(f, [_call({"email": "ana@example.org"})])
    assert out.messages[0].content.parts[1].args == {"email": "ana@example.org"}  # type: ignore[union-attr]

"""UnicodeNormalizer's ``system_messages`` option: system text normalized where a filter checks it.

A redacting filter with ``system_messages=True`` checks the system messages; a normalizer before it
normalizes them only with the same option, or a full-width secret or e-mail there (``ｓｋ-proj-…``,
``ana.garcia＠example.com``) passes the redaction its ASCII form gets. Tested listed directly and inside
workflows (sequence, nested, a parallel branch), on ``generate()`` and ``stream()``, in English, French,
Spanish and Chinese, and in the system and developer turns ``procflow run`` writes back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _agent_support import MODES, call
from cli_support import EXAMPLE_DATA, jsonl, procflow
from guard_seams_support import SHAPES, Observer, in_parallel, listed

from procflow import Agent, Message
from procflow.processors import RegexFilterProcessor, UnicodeNormalizer
from procflow.testing import ScriptedModel, run_input

# (language, instructions with a value in compatibility forms, the instructions as the guard leaves them)
INSTRUCTIONS = [
    ("en", "Escalate to ana.garcia＠example.com when unsure.", "Escalate to [EMAIL] when unsure."),
    (
        "fr",
        "Écrivez à ｍａｒｉｅ．ｄｕｐｏｎｔ＠ｅｘａｍｐｌｅ．ｆｒ si besoin.",
        "Écrivez à [EMAIL] si besoin.",
    ),
    (
        "es",
        "Use la clave ｓｋ-proj-abcdefghijkmnpqrstuvwx0123 para la API.",
        "Use la clave [API_KEY] para la API.",
    ),
    ("zh", "客服邮箱ｌｉ．ｗｅｉ＠ｅｘａｍｐｌｅ．ｏｒｇ，谢谢。", "客服邮箱[EMAIL],谢谢。"),
]
LANGS = [lang for lang, _, _ in INSTRUCTIONS]


def _redactor() -> RegexFilterProcessor:
    return RegexFilterProcessor(presets=["pii", "secrets"], strategy="redact", system_messages=True)


def _guards(*, system_messages: bool) -> list[Any]:
    return [UnicodeNormalizer(system_messages=system_messages), _redactor()]


def _placed(shape: str) -> list[Any]:
    """The normalizer then the redactor, listed directly or in a workflow of ``shape`` (parallel: the
    normalizer's branch is selected, and the redactor follows the block)."""
    if shape == "parallel":
        return [in_parallel(UnicodeNormalizer(system_messages=True), Observer()), _redactor()]
    return listed(shape, lambda: _guards(system_messages=True))


async def _system_prompt(processors: list[Any], instructions: str, mode: str) -> str:
    """The system text the model was sent, with ``processors`` as the agent's input processors."""
    model = ScriptedModel(["ok"])
    agent = Agent(id="a", model=model, instructions=instructions, input_processors=processors)
    await call(agent, mode, "hi")
    [system] = [m for m in model.prompts[0] if m.role == "system"]
    return "".join(part.text for part in system.content)  # type: ignore[union-attr]


# --- the option on its own -------------------------------------------------------------------------


@pytest.mark.parametrize(("lang", "instructions", "expected"), INSTRUCTIONS, ids=LANGS)
async def test_with_the_option_system_messages_are_normalized(
    lang: str, instructions: str, expected: str
) -> None:
    """The system messages come out normalized, before the input messages, which are normalized too."""
    out = await run_input(
        UnicodeNormalizer(system_messages=True), ["ｈｉ  there"], system_messages=[instructions]
    )
    assert [m.text for m in out.system_messages] == [UnicodeNormalizer().normalize(instructions)]
    assert "＠" not in out.system_messages[0].text and "ｓｋ" not in out.system_messages[0].text
    assert [m.text for m in out.messages] == ["hi there"]


async def test_without_it_system_messages_stay_as_written() -> None:
    """By default the instructions are the app's: left as written, the input still normalized."""
    instructions = INSTRUCTIONS[0][1]
    out = await run_input(UnicodeNormalizer(), ["ｈｉ"], system_messages=[instructions])
    assert [m.text for m in out.system_messages] == [instructions]
    assert [m.text for m in out.messages] == ["hi"]


async def test_unchanged_system_and_input_messages_keep_their_identity() -> None:
    """Only a changed message is replaced: a plain system message and a plain input pass on as such."""
    plain = Message.system("Answer briefly.")
    wide = Message.system(INSTRUCTIONS[2][1])
    user = Message.user("hello")
    normalizer = UnicodeNormalizer(system_messages=True)
    out = await run_input(normalizer, [user], system_messages=[plain, wide])
    assert out.system_messages[0] is plain
    assert out.system_messages[1] is not wide and "ｓｋ" not in out.system_messages[1].text
    assert out.messages[0] is user
    untouched = await run_input(normalizer, [user], system_messages=[plain])
    assert untouched.system_messages[0] is plain and untouched.messages[0] is user


async def test_a_phase_output_normalizer_leaves_system_messages_alone() -> None:
    """``phase="output"`` has no input hook, system messages included."""
    instructions = INSTRUCTIONS[0][1]
    normalizer = UnicodeNormalizer(phase="output", system_messages=True)
    assert normalizer.process_input is None
    model = ScriptedModel(["ok"])
    agent = Agent(id="a", model=model, instructions=instructions, output_processors=[normalizer])
    await agent.generate("hi")
    [system] = [m for m in model.prompts[0] if m.role == "system"]
    assert system.content[0].text == instructions  # type: ignore[index,union-attr]


# --- in an agent, before a filter that checks system messages ----------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(("lang", "instructions", "expected"), INSTRUCTIONS, ids=LANGS)
async def test_a_value_in_compatibility_forms_in_the_instructions_is_redacted(
    lang: str, instructions: str, expected: str, shape: str, mode: str
) -> None:
    """The model reads the instructions normalized and redacted, wherever the guard is placed."""
    assert await _system_prompt(_placed(shape), instructions, mode) == expected


@pytest.mark.parametrize("mode", MODES)
async def test_without_the_option_the_filter_misses_the_full_width_value(mode: str) -> None:
    """The seam the option closes: the filter alone does not see a full-width e-mail as one."""
    instructions = INSTRUCTIONS[0][1]
    assert await _system_prompt(_guards(system_messages=False), instructions, mode) == instructions


# --- procflow run: the bundled guard normalizes system and developer turns ---------------------------


@pytest.mark.parametrize(("lang", "instructions", "expected"), INSTRUCTIONS, ids=LANGS)
@pytest.mark.parametrize("role", ["system", "developer"])
def test_procflow_run_redacts_full_width_values_in_system_and_developer_turns(
    role: str, lang: str, instructions: str, expected: str
) -> None:
    """A stored conversation's system text is normalized, then redacted as its ASCII form is."""
    record = {"messages": [{"role": role, "content": instructions}, {"role": "user", "content": "hi"}]}
    done = procflow("run", "-", "-q", stdin=json.dumps(record, ensure_ascii=False) + "\n")
    assert done.returncode == 0, done.stderr
    [written] = jsonl(done.stdout)
    assert written["messages"] == [{"role": role, "content": expected}, {"role": "user", "content": "hi"}]


_OLD_GUARD = """
from procflow._cli.defaults import default_pipeline

guard = default_pipeline()
guard[0].system_messages = False  # the bundled guard as it was before the option
"""


def test_procflow_run_on_the_example_data_is_unchanged(tmp_path: Path) -> None:
    """The example conversations (system turns in plain text) come out as the guard wrote them before."""
    (tmp_path / "old.py").write_text(_OLD_GUARD, encoding="utf-8")
    new = procflow("run", EXAMPLE_DATA, "-q")
    old = procflow("run", EXAMPLE_DATA, "-q", "-p", f"{tmp_path / 'old.py'}:guard")
    assert new.returncode == old.returncode == 0, new.stderr + old.stderr
    assert new.stdout and new.stdout == old.stdout

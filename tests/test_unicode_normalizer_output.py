"""UnicodeNormalizer on the output side: the model's answer, streamed and whole, and assistant turns.

With ``phase="output"`` (or ``"all"``) a full-width or decomposed value in the model's answer is made
plain before the redacting filter after the normalizer reads it, so it is redacted as it would be in
the input: on ``generate()`` and ``stream()`` (in any chunking), listed directly and inside workflows
(sequence, nested, a parallel branch), in English, French, Spanish and Chinese, and in the assistant
turns ``procflow run`` writes back. A stream comes out as the whole answer normalized, holding back
only the tail a later character may still change.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from _agent_support import MODES, call
from cli_support import procflow
from guard_seams_support import SHAPES, Observer, dump_chunks, in_parallel, listed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from procflow import Agent, Chunk, Message, MessageContent, TextPart
from procflow.errors import APICallError, ConfigurationError
from procflow.processors import RegexFilterProcessor, StreamErrorRetryProcessor, UnicodeNormalizer
from procflow.testing import ScriptedModel, ScriptedStep, run_output_result, run_output_stream
from procflow.workflows import ProcessorStepSchema, create_workflow

# (case, the model's answer with a value in compatibility forms, the answer as the guard leaves it)
ANSWERS = [
    ("en-email", "Mail ana.garcia＠example.com today.", "Mail [EMAIL] today."),
    ("en-card", "card ４１１１ １１１１ １１１１ １１１１", "card [CREDIT_CARD]"),
    ("en-ssn", "SSN １２３-４５-６７８９", "SSN [SSN]"),
    ("en-key", "key ｓｋ-proj-abcdefghijkmnpqrstuvwx0123", "key [API_KEY]"),
    ("fr", "Écrivez à ｍａｒｉｅ．ｄｕｐｏｎｔ＠ｅｘａｍｐｌｅ．ｆｒ, merci.", "Écrivez à [EMAIL], merci."),
    (
        "es",
        "Mi tarjeta es ４１１１ １１１１ １１１１ １１１１, gracias.",
        "Mi tarjeta es [CREDIT_CARD], gracias.",
    ),
    ("zh", "我的邮箱是ｌｉ．ｗｅｉ＠ｅｘａｍｐｌｅ．ｏｒｇ谢谢", "我的邮箱是[EMAIL]谢谢"),
]
IDS = [case for case, _, _ in ANSWERS]
PLAIN = {
    "en-email": "ana.garcia@example.com",
    "en-card": "4111 1111 1111 1111",
    "en-ssn": "123-45-6789",
    "en-key": "sk-proj-abcdefghijkmnpqrstuvwx0123",
    "fr": "marie.dupont@example.fr",
    "es": "4111 1111 1111 1111",
    "zh": "li.wei@example.org",
}


def _redactor() -> RegexFilterProcessor:
    return RegexFilterProcessor(presets=["pii", "secrets"], strategy="redact")


def _guards(shape: str) -> list[Any]:
    """The normalizer then the redactor, listed directly or in a workflow of ``shape`` (parallel: the
    normalizer's branch is selected, and the redactor follows the block)."""
    if shape == "parallel":
        return [in_parallel(UnicodeNormalizer(phase="output"), Observer()), _redactor()]
    return listed(shape, lambda: [UnicodeNormalizer(phase="output"), _redactor()])


def _split(text: str, data: st.DataObject) -> list[str]:
    """``text`` cut into deltas where hypothesis chooses."""
    cuts = sorted(data.draw(st.sets(st.integers(1, len(text) - 1)))) if len(text) > 1 else []
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def _text(chunks: list[Chunk]) -> str:
    return "".join(c.text or "" for c in chunks if c.type == "text-delta")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(("case", "answer", "expected"), ANSWERS, ids=IDS)
async def test_a_value_in_compatibility_forms_is_redacted_in_the_answer(
    case: str, answer: str, expected: str, shape: str, mode: str
) -> None:
    """The answer reaches the consumer with the value redacted, streamed or whole, in any shape."""
    agent = Agent(id="a", model=ScriptedModel([answer], chunk_size=3), output_processors=_guards(shape))
    outcome = await call(agent, mode, "hi")
    assert outcome.result.text == expected
    if mode == "stream":
        assert _text(outcome.chunks) == expected
        assert PLAIN[case] not in dump_chunks(outcome.chunks)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(ANSWERS), st.sampled_from(SHAPES), st.data())
async def test_any_chunking_of_the_answer_is_redacted_alike(
    answer_case: tuple[str, str, str], shape: str, data: st.DataObject
) -> None:
    """However the model splits the answer into deltas, the consumer receives the same redacted text."""
    _, answer, expected = answer_case
    step = ScriptedStep(chunks=[Chunk.text_delta(p) for p in _split(answer, data)])
    agent = Agent(id="a", model=ScriptedModel([step]), output_processors=_guards(shape))
    outcome = await call(agent, "stream", "hi")
    assert _text(outcome.chunks) == outcome.result.text == expected


@pytest.mark.parametrize("mode", MODES)
async def test_the_bundled_style_guard_on_both_sides_redacts_the_answer(mode: str) -> None:
    """One phase="all" normalizer listed as input and output processor normalizes both directions."""
    normalizer = UnicodeNormalizer(phase="all")
    guard = [normalizer, _redactor()]
    model = ScriptedModel(["Votre carte ４１１１ １１１１ １１１１ １１１１ est bloquée."])
    agent = Agent(id="a", model=model, input_processors=guard, output_processors=guard)
    outcome = await call(agent, mode, "ｍａ ｃａｒｔｅ ?")
    assert outcome.result.text == "Votre carte [CREDIT_CARD] est bloquée."
    assert model.prompts[0][-1].text == "ma carte ?"


def test_phase_is_checked() -> None:
    """An unknown phase is a ConfigurationError naming the valid ones."""
    with pytest.raises(ConfigurationError, match=r"phase must be one of \('input', 'output', 'all'\)"):
        UnicodeNormalizer(phase="both")  # type: ignore[arg-type]


def test_each_phase_has_the_hooks_of_its_side_only() -> None:
    """input: the input hooks; output: the output hooks; all: both."""
    hooks = ("process_input", "process_input_step", "process_output_result", "process_output_stream")
    have = {
        phase: [callable(getattr(UnicodeNormalizer(phase=phase), h)) for h in hooks]  # type: ignore[arg-type]
        for phase in ("input", "output", "all")
    }
    assert have == {
        "input": [True, True, False, False],
        "output": [False, False, True, True],
        "all": [True, True, True, True],
    }


@pytest.mark.parametrize(
    ("phase", "side", "other"),
    [("input", "output_processors", "input_processors"), ("output", "input_processors", "output_processors")],
)
def test_an_agent_refuses_it_on_a_side_its_phase_does_not_cover(phase: str, side: str, other: str) -> None:
    """Listed only where it would never run, the normalizer fails Agent() saying where to move it."""
    with pytest.raises(ConfigurationError, match=f"move it to {other}"):
        Agent(id="a", model=ScriptedModel(["x"]), **{side: [UnicodeNormalizer(phase=phase)]})  # type: ignore[arg-type]


def test_a_branch_case_refuses_the_output_normalizer() -> None:
    """It holds text back, so a .branch case (each chunk routed on its own) is refused at build time."""
    workflow = (
        create_workflow(id="w", input_schema=ProcessorStepSchema, output_schema=ProcessorStepSchema)
        .branch([(lambda ctx: True, UnicodeNormalizer(phase="output"))])
        .commit()
    )
    with pytest.raises(ConfigurationError, match=r"unicode-normalizer.*branch"):
        Agent(id="a", model=ScriptedModel(["x"]), output_processors=[workflow])


# --- the stream alone -------------------------------------------------------------------------------

_PIECES = [
    " ", "  ", "\n", "\t", "\r", "\r\n", "\u00a0", "\u3000", "\u2028",
    "a", "e", "q", "Z", "<", "1", ".", "Où", "¿Qué", "你好", "。", "ｆｕｌｌ", "＠", "４",
    "\u0301", "\u0323", "\u0334", "\u0345", "é", "ﬁ", "\u1100", "\u1161", "\u11a8", "가", "\u0b47", "\u0b3e",
    "\u200b", "\u200d", "\ufe0f", "😀", "🏴", "\U000e0067", "\U000e007f", "1\u20e3", "🇺", "🇸", "\x07",
]  # fmt: skip
_OPTIONS = st.fixed_dictionaries(
    {
        "form": st.sampled_from(["NFKC", "NFC", "NFD", "NFKD", None]),
        "strip_control_chars": st.booleans(),
        "preserve_emojis": st.booleans(),
        "collapse_whitespace": st.booleans(),
        "trim": st.booleans(),
    }
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=12).map("".join), _OPTIONS, st.data())
async def test_any_chunking_streams_the_whole_text_normalized(
    text: str, options: dict[str, Any], data: st.DataObject
) -> None:
    """Any split into deltas, any options: the deltas joined are the whole text normalized."""
    normalizer = UnicodeNormalizer(phase="output", **options)
    outcome = await run_output_stream(normalizer, _split(text, data))
    assert outcome.text == normalizer.normalize(text)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=6).map("".join), min_size=1, max_size=4),
    _OPTIONS,
    st.data(),
)
async def test_a_streamed_answer_in_text_blocks_equals_the_result_normalized(
    blocks: list[str], options: dict[str, Any], data: st.DataObject
) -> None:
    """Text blocks (text-start ... text-end) stream as process_output_result leaves their parts."""
    normalizer = UnicodeNormalizer(phase="output", **options)
    chunks: list[Chunk] = []
    for number, block in enumerate(blocks):
        chunks.append(Chunk("text-start", {"id": str(number)}))
        chunks += [Chunk.text_delta(p, id=str(number)) for p in _split(block, data)]
        chunks.append(Chunk("text-end", {"id": str(number)}))
    streamed = await run_output_stream(normalizer, chunks)
    message = Message(role="assistant", content=MessageContent(parts=[TextPart(text=b) for b in blocks]))
    whole = await run_output_result(normalizer, [message])
    assert streamed.text == whole.messages[0].text


@pytest.mark.parametrize(
    ("deltas", "released"),
    [
        (["Where is my order?"], "Where is my order?"),
        (["Bonjour"], "Bonjou"),  # an "r" may still take a mark
        (["¿Dónde está mi pedido? "], "¿Dónde está mi pedido?"),  # trailing whitespace
        (["我的订单在哪里"], "我的订单在哪里"),  # ideographs compose with nothing
        (["cafe"], "caf"),
        (["cafe", "\u0301 noir"], "café noi"),
        (["x\u0301"], "x"),  # the acute blocks what x takes; a mark may still sort before it
        (["q\u0334"], "q\u0334"),  # q takes no mark, and none sorts before one of class 1
        (["４１１１"], "4111"),
    ],
    ids=["en", "fr", "es", "zh", "letter", "composed", "mark", "overlay", "full-width"],
)
async def test_only_the_tail_a_later_character_may_change_is_held(deltas: list[str], released: str) -> None:
    """Before the stream ends, everything is released but what the next character could change."""
    outcome = await run_output_stream(UnicodeNormalizer(phase="output"), deltas, flush=False)
    assert outcome.text == released


async def test_text_block_ends_release_the_held_characters_in_their_block() -> None:
    """A held character comes out before the text-end of its block, as a delta of that block."""
    chunks = [
        Chunk("text-start", {"id": "b"}),
        Chunk.text_delta("ｏｕｉ", id="b"),
        Chunk("text-end", {"id": "b"}),
    ]
    outcome = await run_output_stream(UnicodeNormalizer(phase="output"), chunks, flush=False)
    assert [(c.type, c.payload) for c in outcome.chunks] == [
        ("text-start", {"id": "b"}),
        ("text-delta", {"id": "b", "text": "ou"}),
        ("text-delta", {"id": "b", "text": "i"}),
        ("text-end", {"id": "b"}),
    ]


async def test_reasoning_is_normalized_as_a_text_of_its_own() -> None:
    """Reasoning deltas come out normalized and trimmed; the answer after them starts a text."""
    step = ScriptedStep(reasoning="  Ｉｌ  faut  ", text="  ｏｕｉ ", chunk_size=3)
    agent = Agent(id="a", model=ScriptedModel([step]), output_processors=[UnicodeNormalizer(phase="output")])
    outcome = await call(agent, "stream", "hi")
    reasoning = "".join(c.text or "" for c in outcome.chunks if c.type == "reasoning-delta")
    assert (reasoning, outcome.result.text) == ("Il faut", "oui")
    assert outcome.result.steps[0].reasoning_text == "Il faut"


async def test_tool_calls_get_the_character_steps_and_data_chunks_are_left_alone() -> None:
    """A tool call's argument strings are made plain (layout kept); a data chunk passes as it was."""
    call_chunk = Chunk("tool-call", {"tool_call_id": "c1", "tool_name": "f", "args": {"q": ["ｍａｉｌ  ＠"]}})
    data = Chunk.data("data-note", {"q": "ｍａｉｌ"})
    outcome = await run_output_stream(UnicodeNormalizer(phase="output"), [call_chunk, data])
    assert outcome.chunks[0].payload["args"] == {"q": ["mail  @"]}
    assert outcome.chunks[1] is data


async def test_a_discarded_attempt_releases_none_of_what_it_held() -> None:
    """A model call retried mid-stream: its held last letter is dropped, the retry streams whole."""
    failing = ScriptedStep(text="Zoé y", error=APICallError("connection reset by peer"))
    agent = Agent(
        id="a",
        model=ScriptedModel([failing, "Ｚｏé ok"], chunk_size=2),
        output_processors=[UnicodeNormalizer(phase="output")],
        error_processors=[StreamErrorRetryProcessor(initial_delay=0)],
    )
    outcome = await call(agent, "stream", "hi")
    assert _text(outcome.chunks) == "Zoé" + "Zoé ok"  # " y", held, never comes out
    assert outcome.result.text == "Zoé ok"


# --- whole messages -------------------------------------------------------------------------------


async def test_the_result_normalizes_response_messages() -> None:
    """process_output_result: response text parts as one text; unchanged messages stay the same objects."""
    clean = Message.assistant("déjà propre")
    dirty = Message(
        role="assistant", content=MessageContent(parts=[TextPart(text=" ｏｕｉ  "), TextPart(text=" ！")])
    )
    outcome = await run_output_result(UnicodeNormalizer(phase="output"), [clean, dirty])
    assert outcome.messages[0] is clean
    assert [p.text for p in outcome.messages[1].content.parts] == ["oui ", "!"]  # type: ignore[union-attr]


# --- procflow run ---------------------------------------------------------------------------------


def _conversations(path: Path) -> Path:
    rows = [
        {"messages": [{"role": "user", "content": answer}, {"role": "assistant", "content": answer}]}
        for _, answer, _ in ANSWERS
    ]
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


_WORKFLOW_PIPELINE = """
from procflow.processors import RegexFilterProcessor, UnicodeNormalizer
from procflow.workflows import ProcessorStepSchema, create_workflow

guard = (
    create_workflow(id="guard", input_schema=ProcessorStepSchema, output_schema=ProcessorStepSchema)
    .then(UnicodeNormalizer(phase="all"))
    .then(RegexFilterProcessor(presets=["pii", "secrets"], strategy="redact"))
    .commit()
)
"""


@pytest.mark.parametrize("pipeline", ["bundled", "workflow"])
def test_procflow_run_redacts_assistant_turns_as_user_turns(tmp_path: Path, pipeline: str) -> None:
    """The bundled guard (and the same guard as a workflow) redacts the value in both turns alike."""
    args: list[str | Path] = ["run", _conversations(tmp_path / "in.jsonl"), "-q"]
    if pipeline == "workflow":
        (tmp_path / "guard.py").write_text(_WORKFLOW_PIPELINE, encoding="utf-8")
        args += ["-p", f"{tmp_path / 'guard.py'}:guard"]
    done = procflow(*args)
    assert done.returncode == 0, done.stderr
    turns = [[m["content"] for m in json.loads(line)["messages"]] for line in done.stdout.splitlines()]
    assert turns == [[expected, expected] for _, _, expected in ANSWERS]

"""UnicodeNormalizer: NFKC, control characters, whitespace and trimming on input text."""

from __future__ import annotations

import pytest
import regex
from _agent_support import MODES, call
from hypothesis import given
from hypothesis import strategies as st

from procflow import Agent, FilePart, Message, MessageContent, TextPart
from procflow.errors import ConfigurationError
from procflow.processors import UnicodeNormalizer
from procflow.testing import ScriptedModel, run_input

FAMILY = "👨\u200d👩\u200d👧"
SCOTLAND = "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"


async def test_nfkc_folds_compatibility_forms() -> None:
    """Full-width letters, ligatures and composed accents come out in their plain NFKC form."""
    outcome = await run_input(UnicodeNormalizer(), ["ＡＢＣ ﬁle cafe\u0301 ①"])
    assert outcome.messages[0].text == "ABC file café 1"


async def test_other_normal_forms_and_none() -> None:
    """form='NFC' composes without folding; form=None leaves code points alone."""
    nfc = await run_input(UnicodeNormalizer(form="NFC"), ["ﬁ cafe\u0301"])
    raw = await run_input(UnicodeNormalizer(form=None), ["ﬁ cafe\u0301"])
    assert nfc.messages[0].text == "ﬁ café"
    assert raw.messages[0].text == "ﬁ cafe\u0301"


async def test_control_characters_stay_unless_stripping_is_asked() -> None:
    """Invisible characters stay by default; strip_control_chars removes them but keeps tab and newline."""
    text = "a\u200bb\u202ec\x07d\u00ade\tf\ng"
    kept = await run_input(UnicodeNormalizer(collapse_whitespace=False), [text])
    stripped = await run_input(UnicodeNormalizer(strip_control_chars=True, collapse_whitespace=False), [text])
    assert kept.messages[0].text == text
    assert stripped.messages[0].text == "abcde\tf\ng"


async def test_stripping_keeps_emoji_sequences_whole_when_asked() -> None:
    """preserve_emojis keeps joiners and tag characters inside emoji; without it they are stripped."""
    text = f"family {FAMILY} flag {SCOTLAND} keycap 1\ufe0f\u20e3 zero\u200bwidth"
    keep = await run_input(UnicodeNormalizer(strip_control_chars=True), [text])
    lose = await run_input(UnicodeNormalizer(strip_control_chars=True, preserve_emojis=False), [text])
    assert keep.messages[0].text == f"family {FAMILY} flag {SCOTLAND} keycap 1\ufe0f\u20e3 zerowidth"
    assert lose.messages[0].text == "family 👨👩👧 flag 🏴 keycap 1\ufe0f\u20e3 zerowidth"


async def test_whitespace_is_collapsed_and_trimmed() -> None:
    """Space runs become one space, line-break runs one newline, and the ends are trimmed."""
    outcome = await run_input(UnicodeNormalizer(), ["  hello \t\u00a0 world \r\n\r\n  next\u2028line  "])
    assert outcome.messages[0].text == "hello world\nnext\nline"


async def test_collapse_and_trim_can_be_turned_off() -> None:
    """collapse_whitespace=False and trim=False keep the spacing as it was."""
    outcome = await run_input(UnicodeNormalizer(collapse_whitespace=False, trim=False), ["  a  b  "])
    assert outcome.messages[0].text == "  a  b  "


async def test_text_parts_and_flattened_text_are_both_normalized() -> None:
    """Every text a message carries is normalized: each text part and the content fallback."""
    message = Message(
        role="user",
        content=MessageContent(
            parts=[
                TextPart(text="ｏｎｅ  "),
                FilePart(media_type="text/plain", data="eA=="),
                TextPart(text=" two"),
            ],
            content="ｏｎｅ   two",
        ),
    )
    outcome = await run_input(UnicodeNormalizer(), [message])
    (result,) = outcome.messages
    assert [getattr(p, "text", None) for p in result.content.parts] == ["one", None, "two"]
    assert result.content.content == "one two"
    assert result.id == message.id


async def test_unchanged_messages_keep_their_identity() -> None:
    """Messages already normal are passed on as the very same objects."""
    clean = Message.user("already clean")
    dirty = Message.user("  needs  work ")
    outcome = await run_input(UnicodeNormalizer(), [clean, dirty])
    assert outcome.messages[0] is clean
    assert outcome.messages[1].text == "needs work"


async def test_signals_are_left_alone() -> None:
    """Framework signal messages are not rewritten."""
    signal = Message(role="signal", content=MessageContent(parts=[TextPart(text="  keep  as is ")]))
    outcome = await run_input(UnicodeNormalizer(), [signal])
    assert outcome.messages[0] is signal


@given(st.text())
def test_normalizing_is_idempotent(text: str) -> None:
    """Normalizing twice gives the same text as normalizing once."""
    normalizer = UnicodeNormalizer(strip_control_chars=True)
    once = normalizer.normalize(text)
    assert normalizer.normalize(once) == once


def test_bad_form_is_rejected() -> None:
    """An unknown normalization form raises ConfigurationError listing the valid ones."""
    with pytest.raises(ConfigurationError, match="NFKC"):
        UnicodeNormalizer(form="NFX")  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
async def test_agent_model_receives_normalized_input(mode: str) -> None:
    """In an agent, the model's prompt carries the normalized text of the user's message."""
    model = ScriptedModel(["Hi!"])
    agent = Agent(id="a", model=model, input_processors=[UnicodeNormalizer(strip_control_chars=True)])
    result = (await call(agent, mode, "  Ｈｅｌｌｏ\u200b \t there 👨\u200d👩\u200d👧  ")).result
    assert result.text == "Hi!"
    assert [m.text for m in model.prompts[0]] == ["Hello there 👨\u200d👩\u200d👧"]


def test_default_id_and_custom_id() -> None:
    """The seed's id by default; id= sets another so two can share a pipeline."""
    assert UnicodeNormalizer().id == "unicode-normalizer"
    assert UnicodeNormalizer(id="second").id == "second"


_SPACES = [
    " ",
    "  ",
    "\n",
    "\n\n",
    "\t",
    "\r",
    "\r\n",
    "\u00a0",
    "\u2028",
    "\u2029",
    "\x85",
    "\u3000",
    "\x0b",
]


@given(st.lists(st.sampled_from([*_SPACES, "a", "Ünï", "你好", "！", "x\u0301"]), max_size=30).map("".join))
def test_whitespace_collapse_skips_only_text_it_would_not_change(text: str) -> None:
    """Any text: collapsing gives what the three whitespace rewrites give, however often it is skipped."""
    expected = regex.sub(r"\r\n?|[\u2028\u2029\x85]", "\n", text)
    expected = regex.sub(r"[^\S\n]+", " ", regex.sub(r"[^\S\n]*\n\s*", "\n", expected))
    normalizer = UnicodeNormalizer(form=None, trim=False)
    assert normalizer.normalize(text) == expected

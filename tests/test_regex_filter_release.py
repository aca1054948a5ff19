"""Where a stream releases text: clean text at once up to its last word, text before a needle's word
at once, and needles found at their true offsets whatever characters come before them."""

from __future__ import annotations

import itertools
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from procflow import Chunk
from procflow.processors import RegexFilterProcessor
from procflow.testing import run_output_stream

ALL = {"presets": ["pii", "secrets", "urls"], "strategy": "redact"}
PROPERTY = settings(
    max_examples=int(os.environ.get("REGEX_FILTER_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
BREAKS = " \t\n\u00a0\u3000中文。，"
"""Blanks (the ``regex`` package's ``\\s``), CJK letters and CJK punctuation: a word ends at each."""
WORD_CHARS = "aouéüqtzİß\x1c"
"""Letters no needle is made of (with some whose case mappings change length), and a control
character ``str.isspace`` calls a blank but no word ends at."""
TOKEN_REACH = 65
"""The most characters of one word a stream holds back on clean text."""

clean_texts = st.text(alphabet=BREAKS + WORD_CHARS, max_size=300)


def _pieces(text: str, cuts: list[int]) -> list[str]:
    edges = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in itertools.pairwise(edges) if b > a]


def _settled(pushed: str, released: int) -> int:
    """Where clean text is released to: the end of its last blank within the last ``TOKEN_REACH``
    characters, else that many characters from the end (never before what was released already)."""
    low = max(released, len(pushed) - TOKEN_REACH)
    for index in range(len(pushed) - 1, low - 1, -1):
        if pushed[index] in BREAKS:
            return index + 1
    return low


@PROPERTY
@given(text=clean_texts, cuts=st.lists(st.integers(0, 10_000), max_size=20))
def test_clean_text_is_released_up_to_its_last_word_with_every_piece(text: str, cuts: list[int]) -> None:
    """Text with no needle is released with every piece up to its last word (blanks, CJK letters and
    punctuation end words; at most 65 characters are held), and the pieces joined are the text."""
    redactor = RegexFilterProcessor(**ALL).stream_redactor()  # type: ignore[arg-type]
    pushed, out = "", ""
    for piece in _pieces(text, cuts):
        pushed += piece
        out += redactor.feed(piece)
        assert out == pushed[: _settled(pushed, len(out))]
    assert out + redactor.close() == text


@PROPERTY
@given(
    before=clean_texts,
    needle=st.sampled_from(
        ["Bearer ", "bEaReR\t", "BASIC ", "eyJ", "AKIA", "sk-", "x@", "2024-07-1", "password：", "+3"]
    ),
    after=st.text(alphabet="abc123XYZ ", max_size=30),
    cuts=st.lists(st.integers(0, 10_000), max_size=12),
)
def test_text_before_a_needle_word_is_released_and_the_needle_word_is_held(
    before: str, needle: str, after: str, cuts: list[int]
) -> None:
    """Whatever precedes a needle (letters whose lower case is longer, CJK, blanks), the text before
    the needle's word comes out as soon as it is pushed, the needle's word is held until scanned, and
    the stream redacts like the whole text."""
    f = RegexFilterProcessor(**ALL)  # type: ignore[arg-type]
    text = before + " " + needle + after
    word_start = len(before) + 1
    redactor = f.stream_redactor()
    pushed, out = "", ""
    for piece in _pieces(text, cuts):
        pushed += piece
        out += redactor.feed(piece)
        if len(pushed) < word_start:
            assert out == pushed[: _settled(pushed, len(out))]
        elif len(pushed) - word_start < 40:
            assert out == pushed[:word_start] or len(pushed) - word_start < len(needle)
    assert out + redactor.close() == f.redact(text)


async def test_a_bearer_token_after_letters_whose_lower_case_is_longer_is_redacted() -> None:
    """``İ`` lower-cases to two characters: a bearer token after a run of them is still found where it
    is, held, and redacted in the stream as in the whole text."""
    f = RegexFilterProcessor(**ALL)  # type: ignore[arg-type]
    text = "İİİİİİİİİİİİ Bearer abcdefgh12345678 and more text here to end the scan window"
    pieces = [text[i : i + 4] for i in range(0, len(text), 4)]
    out = await run_output_stream(f, pieces)
    streamed = "".join(c.text or "" for c in out.chunks if c.type == "text-delta")
    assert streamed == f.redact(text) == text.replace("abcdefgh12345678", "[BEARER_TOKEN]")


async def test_clean_chunks_pass_one_for_one_and_markers_stay_in_place() -> None:
    """Clean chunks that end in a blank come out as the very chunk objects that went in, with
    text-start/text-end chunks in their places."""
    f = RegexFilterProcessor(**ALL)  # type: ignore[arg-type]
    chunks = [
        Chunk("text-start", {"id": "t"}),
        Chunk.text_delta("hello there "),
        Chunk.text_delta("how are you "),
        Chunk("text-end", {"id": "t"}),
    ]
    out = await run_output_stream(f, list(chunks))
    assert out.chunks == chunks
    assert all(a is b for a, b in zip(out.chunks, chunks, strict=True))

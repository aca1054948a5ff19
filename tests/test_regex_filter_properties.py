"""Streams redact exactly like whole texts, never leak a match, and block exactly when whole texts do."""

from __future__ import annotations

import itertools
import os

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from procflow import Chunk
from procflow.processors import ProcessorViolation, RegexFilterProcessor, RegexRule
from procflow.testing import run_input, run_output_stream

SECRETS = [
    "bob@example.com",
    "andré.dupont@exemple.fr",
    "+1 555 123 4567",
    "(555) 123-4567",
    "1-555-123-4567",
    "06 12 34 56 78",
    "07700 900123",
    "(01632) 960 000",
    "030/12345678",
    "0049 30 12345678",
    "(+44) 20 7946 0958",
    "98765 43210",
    "call me at 07700900123",
    "4111 1111 1111 1111",
    "378282246310005",
    "123-45-6789",
    "sk-proj-abc123DEF456ghi789JKL0",
    'api_key = "abcd1234efgh5678"',
    "--token abcd1234efgh5678",
    "Bearer eyJhbGciOiJIUzI1NiJ9.abc123",
    "AKIA2E0A8F3B244C9986",
    "aws_secret_access_key=q8Hn2Lr+Vt5Wx7Zb9Pd1Kf3Mg/Js4Qc6Ye0Ua2Io",
    "https://example.com/a_(b)?q=1",
    "ghp_a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc+/=\n-----END RSA PRIVATE KEY-----",
    "SECRET-abcdef;",
    "555-1234",
    "详情见https://docs.example.net/faq。",
    "有事请拨打13912345678。",
    "卡号是5555555555554444，",
    "客户li.wei@example.cn说无法登录",
    "密码：abc123456，",
    "password=hunter2!x",
    "postgres://app:Zq8wLm3x@db.example.com/app",
    "Basic dXNlcjpwYXNzd29yZA==",
    "Bearer     abc123xyz9",
]
ALPHABET = "ab0159 .-_()+@:=\"'\n\tAKsk/中文。，："

fragments = st.one_of(
    st.sampled_from(SECRETS),
    st.sampled_from(SECRETS).flatmap(
        lambda s: st.tuples(st.integers(0, len(s)), st.integers(0, len(s))).map(
            lambda ij: s[min(ij) : max(ij)]
        )
    ),
    st.text(alphabet=ALPHABET, max_size=6),
)
texts = st.lists(fragments, max_size=10).map("".join)

CUSTOM = [RegexRule("secret", r"SECRET-[a-z]+;"), RegexRule("digits", r"\d{3}-\d{4}", replacement="<$&>")]
FILTERS: dict[str, dict[str, object]] = {
    "presets": {"presets": ["pii", "secrets", "urls"]},
    "custom": {"rules": CUSTOM},
    "both": {"rules": CUSTOM, "presets": ["pii", "secrets", "urls"]},
}
PROPERTY = settings(
    max_examples=int(os.environ.get("REGEX_FILTER_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _split(text: str, cuts: list[int], one_by_one: bool) -> list[str]:
    if one_by_one:
        return list(text)
    points = sorted({c % (len(text) + 1) for c in cuts})
    edges = [0, *points, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(edges) if b > a]


def _chunks(pieces: list[str], markers: list[bool]) -> list[Chunk | str]:
    """Pieces as text deltas, some separated by text-end/text-start or by a reasoning delta (one text
    all the same)."""
    out: list[Chunk | str] = []
    for index, piece in enumerate(pieces):
        if index and markers[index % len(markers)]:
            out += [Chunk("text-end", {"id": "0"}), Chunk("text-start", {"id": "0"})]
        if index % 3 == 1:
            out.append(Chunk("reasoning-delta", {"id": "r", "text": "thinking about 555-0100"}))
        out.append(piece)
    return out


def _text(chunks: list[Chunk]) -> str:
    return "".join(c.text or "" for c in chunks if c.type == "text-delta")


async def _matched(options: dict[str, object], text: str) -> list[str]:
    """The texts whole-text redaction replaces, from its own report (``include_redacted_values``)."""
    f = RegexFilterProcessor(**options, strategy="redact", include_redacted_values=True)  # type: ignore[arg-type]
    seen: list[ProcessorViolation] = []
    f.on_violation = seen.append
    await run_input(f, [text])
    return [entry["value"] for v in seen for entry in v.detail["redactions"]]


@PROPERTY
@given(
    text=texts,
    cuts=st.lists(st.integers(0, 10_000), max_size=12),
    one_by_one=st.booleans(),
    markers=st.lists(st.booleans(), min_size=1, max_size=4),
    kind=st.sampled_from(sorted(FILTERS)),
    window=st.sampled_from([1, 8, 32, 128]),
)
async def test_stream_equals_whole_text(
    text: str, cuts: list[int], one_by_one: bool, markers: list[bool], kind: str, window: int
) -> None:
    """(a) For any text (CJK included) and chunking, with text-block markers and reasoning chunks
    interleaved, the redacted stream joined equals whole-text redaction whenever every custom match is
    shorter than the window."""
    f = RegexFilterProcessor(**FILTERS[kind], strategy="redact", stream_carryover_size=window)  # type: ignore[arg-type]
    if kind != "presets":
        assume(all(len(value) < window for value in await _matched({"rules": CUSTOM}, text)))
    out = await run_output_stream(f, _chunks(_split(text, cuts, one_by_one), markers))
    assert _text(out.chunks) == f.redact(text)


@PROPERTY
@given(
    text=texts,
    cuts=st.lists(st.integers(0, 10_000), max_size=12),
    one_by_one=st.booleans(),
    kind=st.sampled_from(sorted(FILTERS)),
    window=st.sampled_from([1, 4, 8, 16]),
)
async def test_no_match_ever_leaks(
    text: str, cuts: list[int], one_by_one: bool, kind: str, window: int
) -> None:
    """(b) With any window, no emitted chunk or run of chunks holds a matched secret that whole-text
    redaction removed, with reasoning chunks interleaved in the text."""
    f = RegexFilterProcessor(**FILTERS[kind], strategy="redact", stream_carryover_size=window)  # type: ignore[arg-type]
    whole = f.redact(text)
    out = await run_output_stream(f, _chunks(_split(text, cuts, one_by_one), [False]))
    streamed = _text(out.chunks)
    for value in await _matched(FILTERS[kind], text):
        if value not in whole:
            assert value not in streamed


@PROPERTY
@given(
    text=texts,
    cuts=st.lists(st.integers(0, 10_000), max_size=12),
    one_by_one=st.booleans(),
    kind=st.sampled_from(sorted(FILTERS)),
    window=st.sampled_from([1, 8, 128]),
)
async def test_block_trips_exactly_like_whole_text(
    text: str, cuts: list[int], one_by_one: bool, kind: str, window: int
) -> None:
    """(c) ``block`` in a stream trips exactly when ``block`` on the whole text would; when matches are
    shorter than the window, on the same first match, and what was let through ends before it."""
    f = RegexFilterProcessor(**FILTERS[kind], stream_carryover_size=window)  # type: ignore[arg-type]
    whole = await run_input(f, [text])
    streamed = await run_output_stream(f, _split(text, cuts, one_by_one))
    assert (streamed.tripwire is None) == (whole.tripwire is None)
    short = kind == "presets" or all(len(v) < window for v in await _matched({"rules": CUSTOM}, text))
    if short and streamed.tripwire is not None and whole.tripwire is not None:
        first = min(match["index"] for match in whole.tripwire.metadata["matches"])
        assert min(match["index"] for match in streamed.tripwire.metadata["matches"]) == first
        let_through = _text(streamed.chunks)
        assert text.startswith(let_through)
        assert len(let_through) <= first

"""Streams: interleaved non-text chunks, long matches held whole, a hold limit that fails closed, no
coarsening, and a cost linear in the length of a match in progress."""

from __future__ import annotations

import time

import pytest

from procflow import Chunk
from procflow.processors import RegexFilterProcessor, RegexRule
from procflow.testing import run_output_stream

ALL = {"presets": ["pii", "secrets", "urls"], "strategy": "redact"}
ARMORED = RegexRule("armored-key", r"-----BEGIN KEY-----[A-Z]+-----END KEY-----", replacement="[KEY]")


def _text(chunks: list[Chunk]) -> str:
    return "".join(c.text or "" for c in chunks if c.type == "text-delta")


async def test_reasoning_inside_a_text_block_does_not_split_the_text() -> None:
    """A reasoning delta between two halves of an e-mail passes ahead of the held text, and the e-mail
    is redacted as in the whole text."""
    f = RegexFilterProcessor(**ALL)  # type: ignore[arg-type]
    thought = Chunk("reasoning-delta", {"id": "r", "text": "hmm"})
    out = await run_output_stream(f, ["write to x.y@corp.", thought, "io today"])
    assert _text(out.chunks) == "write to [EMAIL] today"
    kinds = [c.type for c in out.chunks]
    assert kinds.index("reasoning-delta") < max(i for i, k in enumerate(kinds) if k == "text-delta")
    assert out.chunks[kinds.index("reasoning-delta")] is thought


@pytest.mark.parametrize(
    ("pieces", "expected"),
    [
        (
            ["Écrivez à marie.du", Chunk("source", {"url": "u"}), "pont@exemple.fr svp"],
            "Écrivez à [EMAIL] svp",
        ),
        (["Llame al +34 612", Chunk("reasoning-start", {"id": "r"}), " 345 678 hoy"], "Llame al [PHONE] hoy"),
        (
            ["请发邮件到li.wei@exa", Chunk("data-status", {"data": 1}), "mple.cn。谢谢"],
            "请发邮件到[EMAIL]。谢谢",
        ),
    ],
)
async def test_non_text_chunks_pass_ahead_in_every_language(pieces: list[Chunk | str], expected: str) -> None:
    """Source, reasoning and data chunks inside French, Spanish and Chinese text leave the text whole."""
    f = RegexFilterProcessor(**ALL)  # type: ignore[arg-type]
    out = await run_output_stream(f, pieces)
    assert _text(out.chunks) == expected


async def test_a_custom_match_longer_than_the_window_never_leaks_its_start() -> None:
    """A custom match of 2,000 characters (window 128) is held back whole while in progress, by partial
    matching, and redacted once complete."""
    f = RegexFilterProcessor(rules=[ARMORED], strategy="redact")
    text = "key: -----BEGIN KEY-----" + "Q" * 2000 + "-----END KEY----- done"
    pieces = [text[i : i + 7] for i in range(0, len(text), 7)]
    out = await run_output_stream(f, pieces)
    assert _text(out.chunks) == "key: [KEY] done"
    assert not any("QQ" in (c.text or "") for c in out.chunks)


async def test_the_hold_limit_fails_closed() -> None:
    """A match in progress longer than ``stream_hold_limit`` stops the stream with a tripwire; nothing of
    it was released."""
    f = RegexFilterProcessor(rules=[ARMORED], strategy="redact", stream_hold_limit=1000)
    text = "-----BEGIN KEY-----" + "Q" * 5000
    out = await run_output_stream(f, [text[i : i + 50] for i in range(0, len(text), 50)])
    assert out.tripwire is not None
    assert out.tripwire.metadata["error"] == "stream_hold_limit"
    assert "Q" not in _text(out.chunks)


def test_the_hold_limit_is_validated() -> None:
    """A hold limit smaller than the window is a configuration error."""
    from procflow.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="stream_hold_limit"):
        RegexFilterProcessor(presets=["pii"], stream_carryover_size=256, stream_hold_limit=100)


CLEAN = {
    "en": "Thanks for waiting, the deploy finished and the dashboard looks healthy again. ",
    "fr": "Merci de votre patience, le déploiement est terminé et le tableau de bord va bien. ",
    "es": "Gracias por esperar, el despliegue terminó y el panel vuelve a estar sano hoy. ",
    "zh": "感谢您的耐心等待，部署已经完成，仪表板现在看起来又恢复正常了。我们会继续关注。",
}


@pytest.mark.parametrize("language", sorted(CLEAN))
async def test_clean_text_is_not_coarsened(language: str) -> None:
    """Clean text comes out with every chunk: as many chunks out as in (give or take the last), and
    the first chunk's text (but its last word) is released at once."""
    f = RegexFilterProcessor(**ALL)  # type: ignore[arg-type]
    text = CLEAN[language] * 4
    pieces = [text[i : i + 20] for i in range(0, len(text), 20)]
    redactor = f.stream_redactor()
    first = redactor.feed(pieces[0])
    assert len(first) >= len(pieces[0].rsplit(" ", 1)[0]) or (language == "zh" and len(first) >= 18)
    out = await run_output_stream(f, pieces)
    assert _text(out.chunks) == text
    assert len(out.chunks) >= len(pieces) - 1


def _stream_cost(f: RegexFilterProcessor, text: str) -> float:
    started = time.process_time()
    redactor = f.stream_redactor()
    out = "".join(redactor.feed(ch) for ch in text) + redactor.close()
    assert out == f.redact(text)
    return time.process_time() - started


@pytest.mark.parametrize(
    "secret",
    [
        lambda n: "-----BEGIN PRIVATE KEY-----\n" + "QUJD" * (n // 4) + "\n-----END PRIVATE KEY-----",
        lambda n: "Authorization: Bearer " + "a1B2" * (n // 4),
        lambda n: "api_key=" + "a1B2" * (n // 4),
        lambda n: "https://example.com/" + "p" * n,
    ],
    ids=["pem", "bearer", "assigned", "url"],
)
def test_a_long_match_in_progress_costs_linear_time(secret: object) -> None:
    """A secret streamed one character at a time costs about 10x more at 20 kB than at 2 kB (the old
    rescans were quadratic): the held match is searched again only as it grows by half."""
    make = secret  # type: ignore[assignment]
    f = RegexFilterProcessor(**ALL)  # type: ignore[arg-type]
    small, large = make(2_000) + " end", make(20_000) + " end"  # type: ignore[operator]
    _stream_cost(f, small)
    ratio = _stream_cost(f, large) / max(_stream_cost(f, small), 1e-3)
    assert ratio < 30

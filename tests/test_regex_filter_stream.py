"""RegexFilterProcessor in streams: hold-back, flushing, text blocks, block and warn across chunks."""

from __future__ import annotations

from log_support import captured_logs as capture_logs

from procflow import Chunk, MessageList
from procflow._runner.context import RunContext
from procflow._runner.pipeline import ProcessorPipeline
from procflow._runner.stream import StreamRunner
from procflow.processors import ProcessorViolation, RegexFilterProcessor, RegexRule
from procflow.testing import run_output_stream

EMAIL = "bob@example.com"


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _text(chunks: list[Chunk]) -> str:
    return "".join(c.text or "" for c in chunks if c.type == "text-delta")


async def test_a_secret_split_across_chunks_never_leaks() -> None:
    """An email streamed one character at a time comes out redacted; no chunk carries any of it."""
    f = RegexFilterProcessor(presets=["pii"], strategy="redact")
    text = f"Contact {EMAIL} today, please."
    out = await run_output_stream(f, list(text))
    assert _text(out.chunks) == "Contact [EMAIL] today, please."
    assert not any("@" in (c.text or "") for c in out.chunks)


async def test_held_text_is_released_before_a_non_text_chunk() -> None:
    """Held text is flushed (redacted) before a tool call passes; the text after it is a new text."""
    f = RegexFilterProcessor(presets=["pii"], strategy="redact")
    call = Chunk("tool-call", {"tool_call_id": "c1", "tool_name": "send", "args": {}})
    out = await run_output_stream(f, ["mail bob@exa", "mple.com", call, "ok"])
    assert [c.type for c in out.chunks] == ["text-delta", "text-delta", "tool-call", "text-delta"]
    assert [c.text for c in out.chunks[:2]] == ["mail ", "[EMAIL]"]
    assert out.chunks[2] is call
    assert out.chunks[3].text == "ok"


async def test_text_split_across_text_blocks_is_one_text() -> None:
    """A match split by text-end/text-start is still found; the markers keep their places."""
    f = RegexFilterProcessor(presets=["pii"], strategy="redact")
    chunks: list[Chunk | str] = [
        Chunk("text-start", {"id": "a"}),
        Chunk.text_delta("call 555-12", id="a"),
        Chunk("text-end", {"id": "a"}),
        Chunk("text-start", {"id": "b"}),
        Chunk.text_delta("3-4567 now", id="b"),
        Chunk("text-end", {"id": "b"}),
        Chunk("finish", {"finish_reason": "stop"}),
    ]
    out = await run_output_stream(f, chunks)
    kinds = [c.type for c in out.chunks]
    assert [k for k in kinds if k != "text-delta"] == [
        "text-start",
        "text-end",
        "text-start",
        "text-end",
        "finish",
    ]
    first_end = kinds.index("text-end")
    assert "".join(c.text or "" for c in out.chunks[:first_end]) == "call [PHONE]"
    assert "".join(c.text or "" for c in out.chunks[first_end:]) == " now"
    assert {c.payload["id"] for c in out.chunks[:first_end] if c.type == "text-delta"} == {"a"}


async def test_other_chunks_pass_untouched() -> None:
    """Reasoning and other non-text chunks are not inspected."""
    f = RegexFilterProcessor(presets=["pii"], strategy="redact")
    thought = Chunk("reasoning-delta", {"text": f"maybe {EMAIL}"})
    out = await run_output_stream(f, [thought])
    assert out.chunks == [thought]


async def test_input_phase_leaves_the_stream_alone() -> None:
    """With ``phase="input"`` the stream passes unchanged, chunk by chunk."""
    f = RegexFilterProcessor(presets=["pii"], strategy="redact", phase="input")
    out = await run_output_stream(f, ["a ", EMAIL])
    assert [c.text for c in out.chunks] == ["a ", EMAIL]


async def test_block_sees_a_match_split_across_chunks() -> None:
    """``block`` trips on a match split across chunks, before any of it reaches the consumer."""
    f = RegexFilterProcessor(presets=["secrets"], stream_carryover_size=8)
    key = "sk-proj-abc123DEF456ghi789JKL0"
    out = await run_output_stream(f, _pieces(f"here is the key: {key} enjoy", 3))
    assert out.tripwire is not None
    assert out.tripwire.processor_id == "regex-filter"
    assert out.tripwire.metadata["matches"] == [{"rule": "api-key", "match": "[REDACTED_MATCH]", "index": 17}]
    assert "sk-" not in _text(out.chunks)
    assert _text(out.chunks).startswith("here is")


async def test_block_passes_clean_streams_whole() -> None:
    """A clean stream passes in full under ``block`` (released at the end at the latest)."""
    f = RegexFilterProcessor(presets=["pii", "secrets", "urls"])
    text = "Your order #4711 ships on 2024-05-01 at 10:30."
    out = await run_output_stream(f, _pieces(text, 4))
    assert out.tripwire is None
    assert _text(out.chunks) == text


async def test_warn_passes_chunks_at_once_and_logs_split_matches() -> None:
    """``warn`` returns every chunk unchanged right away and still logs a match split across chunks."""
    f = RegexFilterProcessor(presets=["pii"], strategy="warn", stream_carryover_size=4)
    pieces = _pieces(f"mail {EMAIL} bye", 3)
    with capture_logs() as logs:
        out = await run_output_stream(f, pieces)
    assert [c.text for c in out.chunks] == pieces
    assert [e["rules"] for e in logs if e["event"] == "regex_filter_match"] == [["email"]]


async def test_stream_reports_per_chunk_with_chunk_offsets() -> None:
    """Each released chunk with redactions is reported once; offsets are relative to that chunk."""
    seen: list[ProcessorViolation] = []
    f = RegexFilterProcessor(presets=["pii"], strategy="redact", stream_carryover_size=8)
    f.on_violation = seen.append
    out = await run_output_stream(f, [f"to {EMAIL} and", f" {EMAIL} ok"])
    assert _text(out.chunks) == "to [EMAIL] and [EMAIL] ok"
    details = [v.detail for v in seen]
    assert all(d["phase"] == "process_output_stream" and "message_id" not in d for d in details)
    entries = [entry for d in details for entry in d["redactions"]]
    assert [(e["rule"], e["length"]) for e in entries] == [("email", 15), ("email", 15)]
    for detail, chunk in zip(details, [c for c in out.chunks if "[EMAIL]" in (c.text or "")], strict=True):
        index = detail["redactions"][0]["index"]
        assert chunk.text is not None and chunk.text[index : index + 7] == "[EMAIL]"


async def test_seed_armored_key_needs_a_wider_window() -> None:
    """The seed's armored-key rule: with ``stream_carryover_size=256`` a 200-character key streamed in
    small chunks is redacted whole; with the default 128 the key never comes out whole either."""
    rule = RegexRule("armored-key", r"-----BEGIN KEY-----[A-Z]+-----END KEY-----", replacement="[KEY]")
    key = "-----BEGIN KEY-----" + "QWERTY" * 27 + "-----END KEY-----"
    text = f"key: {key} done"
    wide = RegexFilterProcessor(rules=[rule], strategy="redact", stream_carryover_size=256)
    assert _text((await run_output_stream(wide, _pieces(text, 7))).chunks) == "key: [KEY] done"
    narrow = RegexFilterProcessor(rules=[rule], strategy="redact")
    leaked = _text((await run_output_stream(narrow, _pieces(text, 7))).chunks)
    assert key not in leaked
    assert leaked.endswith("[KEY] done")


async def test_small_windows_release_text_early() -> None:
    """With a small window, text is released as soon as it cannot be part of a match."""
    f = RegexFilterProcessor(presets=["pii"], strategy="redact", stream_carryover_size=4)
    out = await run_output_stream(f, ["hello there ", "general ", "kenobi"], flush=False)
    assert _text(out.chunks).startswith("hello there general")


async def test_state_is_per_request() -> None:
    """One processor serves two interleaved streams without mixing their held text."""
    f = RegexFilterProcessor(presets=["pii"], strategy="redact")
    pipeline = ProcessorPipeline.build([f])
    first = StreamRunner(pipeline, RunContext(message_list=MessageList()))
    second = StreamRunner(pipeline, RunContext(message_list=MessageList()))
    outs: dict[str, list[Chunk]] = {"first": [], "second": []}
    for a, b in [("mail bob@", "call 555-"), ("example.com", "123-4567")]:
        outs["first"].extend(await first.push(Chunk.text_delta(a)))
        outs["second"].extend(await second.push(Chunk.text_delta(b)))
    outs["first"].extend(await first.flush())
    outs["second"].extend(await second.flush())
    assert _text(outs["first"]) == "mail [EMAIL]"
    assert _text(outs["second"]) == "call [PHONE]"


def test_stream_redactor_matches_whole_text() -> None:
    """``stream_redactor()`` feeds pieces and gives back exactly what ``redact()`` gives for the whole."""
    f = RegexFilterProcessor(presets=["pii", "secrets", "urls"], strategy="redact")
    text = "write bob@example.com, visit https://example.com/x). key=abcd1234efgh5678 " * 5
    redactor = f.stream_redactor()
    out = "".join(redactor.feed(piece) for piece in _pieces(text, 5)) + redactor.close()
    assert out == f.redact(text)


async def test_a_timed_out_rule_stops_the_stream() -> None:
    """A custom rule that times out in a stream stops it with a tripwire rather than pass text unchecked."""
    f = RegexFilterProcessor(rules=[RegexRule("evil", r"(a|aa)+$", timeout=0.05)], strategy="redact")
    out = await run_output_stream(f, ["a" * 40, "a" * 24 + "b"])
    assert out.tripwire is not None
    assert out.tripwire.metadata == {
        "processor_id": "regex-filter",
        "strategy": "redact",
        "error": "pattern_timeout",
        "rule": "evil",
    }
    assert _text(out.chunks) == ""

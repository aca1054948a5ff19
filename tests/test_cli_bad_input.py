"""``procflow run`` never crashes on bad input and never prints what a bad line holds (in-process)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import PIPELINES, chat, jsonl, procflow, write_jsonl

PIPELINE = f"{PIPELINES}:pipeline"
SECRET = "s3cret-Hunter2"

BAD_LINES = {
    "role given as a list": (
        json.dumps({"messages": [{"role": ["user", SECRET], "content": SECRET}]}),
        "messages[0].role: must be a string, not an array of 2 items",
    ),
    "role given as an object": (
        json.dumps({"messages": [{"role": {SECRET: "user"}, "content": SECRET}]}),
        "messages[0].role: must be a string, not an object with 1 key",
    ),
    "100k-deep nesting": (
        '{"messages": [], "meta": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "nested deeper than 100 levels",
    ),
    "150-deep nesting": (
        '{"messages": [], "meta": ' + "[" * 150 + "]" * 150 + "}",
        "meta[0][0][0]…(94 more)…[0][0]: nested deeper than 100 levels",
    ),
    "deep nesting under an odd key": (
        '{"messages": [], "meta": {"' + SECRET + '": ' + "[" * 120 + "]" * 120 + "}}",
        "meta.<key of 14 characters>[0][0]…(94 more)…[0][0]: nested deeper than 100 levels",
    ),
    "5,000-digit integer": (
        '{"messages": [{"role": "user", "content": "' + SECRET + '"}], "n": ' + "7" * 5000 + "}",
        "an integer has more digits than Python converts (4300)",
    ),
    "lone surrogate escape": (
        '{"messages": [{"role": "user", "content": "' + SECRET + ' \\ud800 end"}]}',
        "messages[0].content: a lone surrogate (\\ud800) at character 15 of 20; text must be valid Unicode",
    ),
    "lone surrogate in a key": (
        '{"messages": [], "meta": {"\\udc00": "' + SECRET + '"}}',
        "meta: a key holds a lone surrogate",
    ),
    "NaN": (
        '{"messages": [{"role": "user", "content": "' + SECRET + '"}], "score": NaN}',
        "NaN is not a JSON number; write null or a finite number",
    ),
    "-Infinity": ('{"messages": [], "score": -Infinity}', "-Infinity is not a JSON number"),
    "1e999": ('{"messages": [], "score": 1e999}', "a number of 5 characters is too large for a 64-bit float"),
    "surrogate in tool arguments": (
        json.dumps(
            {
                "messages": [
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "id": "c",
                                "function": {"name": "f", "arguments": '{"q": "\\udfff ' + SECRET + '"}'},
                            }
                        ],
                    }
                ]
            }
        ),
        "messages[0].tool_calls[0].function.arguments.q: a lone surrogate (\\udfff) at character 0 of 16",
    ),
    "not UTF-8": (b'{"messages": [{"role": "user", "content": "\xff\xfe"}]}', "not UTF-8 text (byte 43)"),
    "truncated JSON": (
        '{"messages": [{"role": "user", "content": "' + SECRET,
        "invalid JSON: Unterminated string starting at (column 43)",
    ),
}


def _write(path: Path, bad: str | bytes) -> Path:
    good = [json.dumps(chat(("user", f"first a{i}@example.com"))).encode() for i in (1, 2)]
    line = bad.encode("utf-8") if isinstance(bad, str) else bad
    path.write_bytes(b"\n".join([good[0], line, good[1]]) + b"\n")
    return path


@pytest.mark.parametrize("case", list(BAD_LINES))
def test_a_bad_line_is_skipped_and_reported_without_its_content(case: str, tmp_path: Path) -> None:
    """With --on-error skip: the line is reported by number and field, the others written, the report too."""
    bad, problem = BAD_LINES[case]
    source = _write(tmp_path / "in.jsonl", bad)
    report = tmp_path / "report.json"
    done = procflow("run", source, "-p", PIPELINE, "--on-error", "skip", "--report", report)
    assert done.returncode == 0, done.stderr
    assert f"in.jsonl:2: {problem}" in done.stderr
    assert [r["messages"][0]["content"] for r in jsonl(done.stdout)] == ["first [EMAIL]"] * 2
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["conversations"] == {"lines": 3, "processed": 2, "blocked": 0, "skipped": 1, "written": 2}
    [error] = data["errors"]
    assert error["line"] == 2 and error["error"].startswith(problem)
    assert SECRET not in done.stderr + json.dumps(data)


@pytest.mark.parametrize("case", list(BAD_LINES))
def test_a_bad_line_stops_the_run_with_its_file_and_line(case: str, tmp_path: Path) -> None:
    """By default: exit 1 naming FILE:LINE and the problem; earlier lines and the report are written."""
    bad, problem = BAD_LINES[case]
    source = _write(tmp_path / "in.jsonl", bad)
    report = tmp_path / "report.json"
    done = procflow("run", source, "-p", PIPELINE, "--report", report)
    assert done.returncode == 1
    assert f"{source}:2: {problem}" in done.stderr
    assert "(--on-error skip skips bad lines)" in done.stderr
    assert [r["messages"][0]["content"] for r in jsonl(done.stdout)] == ["first [EMAIL]"]
    assert json.loads(report.read_text(encoding="utf-8"))["errors"][0]["line"] == 2
    assert SECRET not in done.stderr


def test_a_line_over_the_size_limit_is_rejected_unparsed(tmp_path: Path) -> None:
    """A line longer than --max-line-size is a size error for that line; the next line is processed."""
    big = json.dumps(chat(("user", SECRET * 400)))
    source = _write(tmp_path / "in.jsonl", big)
    done = procflow("run", source, "-p", PIPELINE, "--max-line-size", "1KB", "--on-error", "skip")
    assert done.returncode == 0
    assert f"in.jsonl:2: the line is {len(big):,} bytes, over the limit of 1,000 bytes (--max-line-size)" in (
        done.stderr
    )
    assert len(jsonl(done.stdout)) == 2
    assert SECRET not in done.stderr


def test_the_default_size_limit_is_10_mb(tmp_path: Path) -> None:
    """Without --max-line-size a line over 10,000,000 bytes is rejected; one just under it is processed."""
    over = '{"messages": [], "pad": "' + "x" * 10_000_000 + '"}'
    under = '{"messages": [], "pad": "' + "x" * 9_999_900 + '"}'
    source = write_jsonl(tmp_path / "in.jsonl", over, under)
    done = procflow("run", source, "-p", PIPELINE, "--on-error", "skip", "-q")
    assert done.returncode == 0
    assert "in.jsonl:1: the line is 10,000,027 bytes, over the limit of 10,000,000 bytes" in done.stderr
    assert len(jsonl(done.stdout)) == 1


def test_a_size_limit_that_is_not_a_size_is_a_usage_error(tmp_path: Path) -> None:
    """--max-line-size lots exits 2 with argparse's usage message."""
    done = procflow("run", "-", "--max-line-size", "lots")
    assert done.returncode == 2
    assert "'lots' is not a size; write e.g. 10MB, 512KiB or 1000000" in done.stderr


@pytest.mark.parametrize(("text", "size"), [("1000", 1000), ("512KiB", 524_288), ("1.5mb", 1_500_000)])
def test_sizes_take_decimal_and_binary_units(text: str, size: int, tmp_path: Path) -> None:
    """Sizes are bytes, or KB/MB/GB (powers of 1000) and KiB/MiB/GiB (powers of 1024)."""
    line = '{"messages": [], "pad": "' + "x" * (size - 27) + '"}'
    over = '{"messages": [], "pad": "' + "x" * (size - 26) + '"}'
    source = write_jsonl(tmp_path / "in.jsonl", line, over)
    done = procflow("run", source, "-p", PIPELINE, "--max-line-size", text, "--on-error", "skip", "-q")
    assert len(jsonl(done.stdout)) == 1
    assert f"in.jsonl:2: the line is {size + 1:,} bytes" in done.stderr


def test_a_processor_error_is_named_without_its_message(tmp_path: Path) -> None:
    """A processor's exception is reported by type and place; its message may quote text: not shown."""
    source = write_jsonl(tmp_path / "in.jsonl", chat(("user", SECRET)))
    done = procflow("run", source, "-p", f"{PIPELINES}:leaky", "--on-error", "skip")
    assert done.returncode == 0
    assert "in.jsonl:1: processing failed: ValueError raised at cli_pipelines.py:" in done.stderr
    assert "its message is not shown" in done.stderr
    assert SECRET not in done.stderr


def test_a_conversation_processing_left_unwritable_is_a_line_error(tmp_path: Path) -> None:
    """NaN or a lone surrogate left by a processor fails that line only; nothing half-written."""
    source = write_jsonl(
        tmp_path / "in.jsonl", chat(("user", "nan")), chat(("user", "surrogate")), chat(("user", "fine"))
    )
    done = procflow("run", source, "-p", f"{PIPELINES}:unwritable", "--on-error", "skip")
    assert done.returncode == 0
    assert "in.jsonl:1: the processed conversation cannot be written as JSON (ValueError)" in done.stderr
    assert (
        "in.jsonl:2: the processed conversation cannot be written as JSON (a lone surrogate)" in done.stderr
    )
    assert jsonl(done.stdout) == [chat(("user", "fine"))]


def test_an_unwritable_report_fails_before_the_run(tmp_path: Path) -> None:
    """--report naming a directory, or a path under a file, exits 1 before any line is processed."""
    source = write_jsonl(tmp_path / "in.jsonl", chat(("user", "hi")))
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    for report, why in (
        (tmp_path, "it is a directory"),
        (tmp_path / "a-file" / "r.json", "cannot be created"),
    ):
        done = procflow("run", source, "-p", PIPELINE, "--report", report)
        assert done.returncode == 1
        assert f"cannot write the report to {str(report)!r}: " in done.stderr and why in done.stderr
        assert done.stdout == ""


def test_a_report_that_cannot_be_written_at_the_end_fails_the_run(tmp_path: Path) -> None:
    """When the report cannot be written after the run, the exit status is 1 and the output stays."""
    folder = tmp_path / "reports"
    folder.mkdir()
    source = write_jsonl(tmp_path / "in.jsonl", chat(("user", "hi")))
    done = procflow(
        "run",
        source,
        "-p",
        f"{PIPELINES}:sabotage_report",
        "--report",
        folder / "r.json",
        "-q",
        env={"SABOTAGE": str(folder)},
    )
    assert done.returncode == 1
    assert f"cannot write the report to {str(folder / 'r.json')!r}" in done.stderr
    assert jsonl(done.stdout) == [chat(("user", "hi"))]


def test_an_unwritable_output_fails_with_exit_1(tmp_path: Path) -> None:
    """-o under a regular file cannot be created: exit 1 naming the path."""
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    source = write_jsonl(tmp_path / "in.jsonl", chat(("user", "hi")))
    done = procflow("run", source, "-p", PIPELINE, "-o", tmp_path / "a-file" / "out.jsonl")
    assert done.returncode == 1
    assert "a-file" in done.stderr


def test_an_input_that_is_a_directory_is_a_usage_error(tmp_path: Path) -> None:
    """A directory as input exits 2, saying so."""
    done = procflow("run", tmp_path, "-p", PIPELINE)
    assert done.returncode == 2
    assert f"input file {str(tmp_path)!r} is a directory" in done.stderr


def test_bad_lines_on_stdin_are_named_stdin(tmp_path: Path) -> None:
    """Lines read from stdin are reported as <stdin>:LINE."""
    done = procflow("run", "-", "-p", PIPELINE, "--on-error", "skip", stdin='{"messages": [1]}\n')
    assert "<stdin>:1: messages[0]: expected a turn object, got a number; skipped" in done.stderr

"""``procflow run`` on JSONL conversations, driven in-process through ``main()``."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import ROOT, chat, jsonl, procflow, write_jsonl

from procflow._cli.jsonl import JsonlWriter

PIPELINES = ROOT / "tests" / "fixtures" / "cli_pipelines.py"
PIPELINE = f"{PIPELINES}:pipeline"


def test_run_redacts_every_phase_and_writes_jsonl(tmp_path: Path) -> None:
    """User and assistant turns are redacted; the other record fields are kept."""
    source = write_jsonl(
        tmp_path / "in.jsonl",
        chat(("user", "mail ann@example.com"), ("assistant", "Sent to ann@example.com"), id="c1", tag=7),
    )
    out = tmp_path / "out.jsonl"
    done = procflow("run", source, "-p", PIPELINE, "-o", out)
    assert done.returncode == 0, done.stderr
    [record] = jsonl(out.read_text(encoding="utf-8"))
    assert record == chat(("user", "mail [EMAIL]"), ("assistant", "Sent to [EMAIL]"), id="c1", tag=7)


def test_run_marks_blocked_conversations_with_reason_and_processor(tmp_path: Path) -> None:
    """A tripwire marks the conversation blocked, names the processor and withholds its messages."""
    source = write_jsonl(tmp_path / "in.jsonl", chat(("user", "say the forbidden thing"), id="c2"))
    done = procflow("run", source, "-p", PIPELINE)
    [record] = jsonl(done.stdout)
    assert record["messages"] == []
    assert record["blocked"] == {
        "reason": "forbidden word",
        "processor_id": "blocker",
        "phase": "input",
        "metadata": {"word": "forbidden"},
    }


def test_keep_blocked_writes_messages_as_processing_left_them(tmp_path: Path) -> None:
    """With --keep-blocked, the blocked conversation keeps its (already redacted) messages."""
    source = write_jsonl(tmp_path / "in.jsonl", chat(("user", "forbidden: bo@example.org")))
    done = procflow("run", source, "-p", PIPELINE, "--keep-blocked")
    [record] = jsonl(done.stdout)
    assert record["messages"] == [{"role": "user", "content": "forbidden: [EMAIL]"}]
    assert record["blocked"]["processor_id"] == "blocker"


def test_stdin_to_stdout_with_the_summary_on_stderr() -> None:
    """`-` reads stdin; JSONL goes to stdout and the summary to stderr."""
    lines = "\n".join(json.dumps(chat(("user", f"x{i}@example.com"))) for i in range(3))
    done = procflow("run", "-", "-p", PIPELINE, stdin=lines)
    assert done.returncode == 0
    assert [r["messages"][0]["content"] for r in jsonl(done.stdout)] == ["[EMAIL]"] * 3
    assert "conversations processed" in done.stderr
    assert "email" in done.stderr


def test_system_and_tool_turns_round_trip(tmp_path: Path) -> None:
    """System turns stay in place; tool calls and results are written back; results count as input text."""
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "lookup", "arguments": '{"email": "a@example.com"}'},
    }
    turns = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"ok": true}', "name": "lookup"},
        {"role": "system", "content": "Later instruction."},
        {"role": "assistant", "content": "Done."},
    ]
    source = write_jsonl(tmp_path / "in.jsonl", {"messages": turns})
    done = procflow("run", source, "-p", f"{PIPELINES}:shouting")
    [record] = jsonl(done.stdout)
    expected = [dict(t) for t in turns]
    expected[1]["content"] = [{"type": "text", "text": "HI"}]
    expected[3]["content"] = '{"OK": TRUE}'
    assert record["messages"] == expected


def test_phase_override_sends_every_turn_through_one_phase(tmp_path: Path) -> None:
    """--phase input runs process_input on assistant turns too; --phase output skips input hooks."""
    source = write_jsonl(tmp_path / "in.jsonl", chat(("user", "hi"), ("assistant", "hello")))
    auto = jsonl(procflow("run", source, "-p", f"{PIPELINES}:shouting").stdout)[0]
    everything = jsonl(procflow("run", source, "-p", f"{PIPELINES}:shouting", "--phase", "input").stdout)[0]
    output = procflow("run", source, "-p", f"{PIPELINES}:shouting", "--phase", "output")
    assert [m["content"] for m in auto["messages"]] == ["HI", "hello"]
    assert [m["content"] for m in everything["messages"]] == ["HI", "HELLO"]
    assert [m["content"] for m in jsonl(output.stdout)[0]["messages"]] == ["hi", "hello"]
    assert "--phase output skips it" in output.stderr


def test_malformed_lines_fail_with_their_line_number_keeping_earlier_output(tmp_path: Path) -> None:
    """By default the first bad line stops the run (exit 1); what was written before it stays."""
    source = write_jsonl(
        tmp_path / "in.jsonl",
        chat(("user", "ok")),
        "",
        '{"messages": [{"role": "user"',
        chat(("user", "late")),
    )
    out = tmp_path / "out.jsonl"
    done = procflow("run", source, "-p", PIPELINE, "-o", out)
    assert done.returncode == 1
    assert f"{source}:3: invalid JSON" in done.stderr
    assert "--on-error skip" in done.stderr
    assert [r["messages"][0]["content"] for r in jsonl(out.read_text(encoding="utf-8"))] == ["ok"]


def test_on_error_skip_reports_each_bad_line_and_goes_on(tmp_path: Path) -> None:
    """With --on-error skip, bad lines are reported by number and the rest is processed."""
    source = write_jsonl(
        tmp_path / "in.jsonl",
        '["not", "an", "object"]',
        {"messages": [{"role": "wizard", "content": "hi"}]},
        {"conversation": []},
        chat(("user", "fine")),
    )
    done = procflow("run", source, "-p", PIPELINE, "--on-error", "skip")
    assert done.returncode == 0
    assert "in.jsonl:1: expected a JSON object" in done.stderr
    assert "in.jsonl:2: messages[0].role: unknown role 'wizard'" in done.stderr
    assert "in.jsonl:3: the conversation has no 'messages' key" in done.stderr
    assert [r["messages"][0]["content"] for r in jsonl(done.stdout)] == ["fine"]


def test_report_writes_the_summary_as_json(tmp_path: Path) -> None:
    """--report FILE holds counts, redactions per rule, blocks per processor, errors and time."""
    source = write_jsonl(
        tmp_path / "in.jsonl",
        chat(("user", "a@example.com b@example.com"), ("assistant", "c@example.com")),
        chat(("user", "forbidden")),
        "{oops",
    )
    report = tmp_path / "reports" / "run.json"
    done = procflow("run", source, "-p", PIPELINE, "--on-error", "skip", "--report", report, "-q")
    assert done.returncode == 0
    assert done.stderr.count("conversations processed") == 0
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["conversations"] == {"lines": 3, "processed": 2, "blocked": 1, "skipped": 1, "written": 2}
    assert data["redactions"] == {"email": 3}
    assert data["blocked_by"] == {"blocker": 1}
    assert data["errors"][0]["line"] == 3
    assert data["seconds"] >= 0


def test_processor_errors_are_reported_per_line(tmp_path: Path) -> None:
    """A processor returning a bad value fails that conversation with the line number and the cause."""
    source = write_jsonl(tmp_path / "in.jsonl", chat(("user", "hi")))
    done = procflow("run", source, "-p", f"{PIPELINES}:broken")
    assert done.returncode == 1
    assert "in.jsonl:1: processing failed: ProcessorResultError" in done.stderr
    assert "'broken'" in done.stderr


def test_missing_input_file_is_a_usage_error(tmp_path: Path) -> None:
    """A missing input file exits with status 2 and names the file."""
    done = procflow("run", tmp_path / "nope.jsonl", "-p", PIPELINE)
    assert done.returncode == 2
    assert "nope.jsonl" in done.stderr
    assert "does not exist" in done.stderr


def test_refuses_to_overwrite_its_input(tmp_path: Path) -> None:
    """-o naming the input file is a usage error, and the input is left intact."""
    source = write_jsonl(tmp_path / "in.jsonl", chat(("user", "a@example.com")))
    done = procflow("run", source, "-p", PIPELINE, "-o", source)
    assert done.returncode == 2
    assert "overwrite the input" in done.stderr
    assert "a@example.com" in source.read_text(encoding="utf-8")


def test_blocked_metadata_names_the_turn_by_its_index(tmp_path: Path) -> None:
    """Message ids are `turn-<index>`, so metadata naming a message points back at the input turn."""
    source = write_jsonl(tmp_path / "in.jsonl", chat(("system", "Be brief."), ("user", "hi"), ("user", "x")))
    done = procflow("run", source, "-p", f"{PIPELINES}:naming")
    [record] = jsonl(done.stdout)
    assert record["blocked"]["metadata"] == {"message_ids": ["turn-1", "turn-2"]}


def test_tripwire_metadata_is_written_as_json_whatever_it_holds(tmp_path: Path) -> None:
    """Dataclasses, sets and other objects in tripwire metadata are written as plain JSON values."""
    source = write_jsonl(tmp_path / "in.jsonl", chat(("user", "hi")))
    done = procflow("run", source, "-p", f"{PIPELINES}:rich_metadata")
    assert done.returncode == 0, done.stderr
    metadata = jsonl(done.stdout)[0]["blocked"]["metadata"]
    assert metadata == {
        "finding": {"rule": "toxicity", "score": 0.9},
        "tags": ["a"],
        "at": "<class 'object'>",
        "score": {"value": 0.5},
    }


def test_ctrl_c_inside_a_processor_keeps_what_was_written(tmp_path: Path) -> None:
    """KeyboardInterrupt while a conversation is processed: exit 130, earlier lines and the report kept."""
    source = write_jsonl(tmp_path / "in.jsonl", *[chat(("user", f"turn {i}")) for i in range(3)])
    report = tmp_path / "report.json"
    done = procflow("run", source, "-p", f"{PIPELINES}:interrupted", "--report", report)
    assert done.returncode == 130
    assert [r["messages"][0]["content"] for r in jsonl(done.stdout)] == ["turn 0"]
    assert json.loads(report.read_text(encoding="utf-8"))["interrupted"] is True
    assert "procflow run (interrupted)" in done.stderr


def test_ctrl_c_while_the_pipeline_loads_exits_130_quietly(tmp_path: Path) -> None:
    """KeyboardInterrupt during start-up (the pipeline's factory) exits 130 with only a newline."""
    done = procflow("run", "-", "-p", f"{PIPELINES}:raise_interrupt", stdin="")
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "\n")


def test_a_closed_stdout_stops_the_run_quietly_and_keeps_the_report(tmp_path: Path) -> None:
    """When stdout's reader goes away, the run stops with 141, prints nothing more and writes the report."""
    source = write_jsonl(tmp_path / "in.jsonl", *[chat(("user", f"turn {i}")) for i in range(5)])
    report = tmp_path / "report.json"
    done = procflow("run", source, "-p", PIPELINE, "--report", report, closed_after=120)
    assert done.returncode == 141
    assert done.stderr == ""
    assert len(jsonl(done.stdout)) == 2
    data = json.loads(report.read_text(encoding="utf-8"))
    assert (data["interrupted"], data["conversations"]["written"]) == (True, 2)


def test_any_command_into_a_closed_pipe_exits_141_quietly() -> None:
    """`procflow graph … | head -c 5`: a closed stdout is exit 141 with no message, whatever the command."""
    done = procflow("graph", f"{PIPELINES}:pipeline", closed_after=5)
    assert (done.returncode, done.stderr) == (141, "")


def test_a_processor_that_cannot_report_is_warned_about(tmp_path: Path) -> None:
    """A processor whose on_violation cannot be set gets a warning: its redactions are not counted."""
    source = write_jsonl(tmp_path / "in.jsonl", chat(("user", "hi")))
    done = procflow("run", source, "-p", f"{PIPELINES}:sealed")
    assert done.returncode == 0
    assert "warning: processor 'sealed' does not accept on_violation" in done.stderr


def test_processors_with_nothing_to_do_are_warned_about(tmp_path: Path) -> None:
    """A stream-only processor does nothing to stored turns; an output-only one nothing with --phase input."""
    source = write_jsonl(tmp_path / "in.jsonl", chat(("user", "hi"), ("assistant", "hello")))
    done = procflow("run", source, "-p", f"{PIPELINES}:idle", "--phase", "input")
    assert "processor 'stream-only' has neither process_input nor process_output_result" in done.stderr
    assert "processor 'output-only' only has process_output_result; --phase input skips it" in done.stderr
    assert jsonl(done.stdout)[0] == chat(("user", "hi"), ("assistant", "hello"))


def test_messages_a_processor_adds_are_written_in_the_plain_format(tmp_path: Path) -> None:
    """A message added by a processor has no original format and is written as role and content."""
    source = write_jsonl(tmp_path / "in.jsonl", chat(("user", "hi")))
    done = procflow("run", source, "-p", f"{PIPELINES}:adds_messages")
    assert jsonl(done.stdout)[0]["messages"] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "(note added by a processor)"},
    ]


def test_tool_arguments_given_as_an_object_stay_an_object(tmp_path: Path) -> None:
    """The bundled guard redacts strings inside object-valued arguments (lists too) and keeps numbers."""
    arguments = {"emails": ["ann@example.com", {"cc": "bo@example.org"}], "limit": 3}
    call = {"id": "c1", "type": "function", "function": {"name": "mail", "arguments": arguments}}
    image = [
        {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}},
        {"type": "text", "text": "?"},
    ]
    source = write_jsonl(
        tmp_path / "in.jsonl",
        {"messages": [{"role": "user", "content": image}, {"role": "assistant", "tool_calls": [call]}]},
    )
    done = procflow("run", source, "-q")
    assert done.returncode == 0, done.stderr
    user, assistant = jsonl(done.stdout)[0]["messages"]
    assert user["content"] == image
    assert assistant["tool_calls"][0]["function"]["arguments"] == {
        "emails": ["[EMAIL]", {"cc": "[EMAIL]"}],
        "limit": 3,
    }


def test_an_over_long_last_line_without_a_newline_is_a_size_error(tmp_path: Path) -> None:
    """The size limit holds for a last line that has no newline."""
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(chat(("user", "hi"))) + "\n" + "x" * 3000, encoding="utf-8")
    done = procflow("run", source, "-p", PIPELINE, "--max-line-size", "1000", "--on-error", "skip")
    assert "in.jsonl:2: the line is 3,000 bytes, over the limit of 1,000 bytes" in done.stderr
    assert len(jsonl(done.stdout)) == 1


def test_python_dash_m_is_the_same_program() -> None:
    """Running procflow._cli as __main__ exits with main()'s code."""
    import runpy

    import pytest

    with pytest.raises(SystemExit) as exited:
        runpy.run_module("procflow._cli", run_name="__main__", alter_sys=False)
    assert exited.value.code == 2  # no command: a usage error


def test_verbose_logs_tripwires_on_stderr_without_message_text(tmp_path: Path) -> None:
    """`procflow -v run` logs the debug events on stderr; without -v only warnings; never the text."""
    source = write_jsonl(tmp_path / "in.jsonl", chat(("user", "forbidden secret-words-here")))
    verbose = procflow("-v", "run", source, "-p", PIPELINE, "-q")
    assert "procflow: DEBUG processor_tripwire processor_id='blocker' retry=False" in verbose.stderr
    assert "secret-words-here" not in verbose.stderr
    quiet = procflow("run", source, "-p", PIPELINE, "-q")
    assert quiet.stderr == ""
    assert jsonl(quiet.stdout)[0]["blocked"]["processor_id"] == "blocker"


def test_a_writer_that_flushes_now_and_then_writes_every_line_by_the_end(tmp_path: Path) -> None:
    """With ``flush_every`` the first line goes out at once, later ones within that time or at
    ``flush()``; every line is there in the end."""
    target = tmp_path / "out.jsonl"
    with target.open("w", encoding="utf-8") as stream:
        writer = JsonlWriter(stream, flush_every=3600)
        writer.write({"n": 1})
        writer.write({"n": 2})
        assert target.read_text(encoding="utf-8") == '{"n": 1}\n'
        writer.flush()
        assert jsonl(target.read_text(encoding="utf-8")) == [{"n": 1}, {"n": 2}]
        assert writer.written == 2

"""A quiet library: events go to the standard ``procflow`` logger and print nothing unconfigured."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SECRET = "my card is 4111 1111 1111 1111, keep it quiet"

SCRIPT = textwrap.dedent(
    f"""
    import anyio
    {{setup}}
    from procflow import Agent
    from procflow.processors import ProcessInputArgs, RegexFilterProcessor
    from procflow.testing import ScriptedModel


    class Blocker:
        id = "blocker"

        def __init__(self):
            self.on_violation = self.fail  # a failing callback is a warning event

        def fail(self, violation):
            raise RuntimeError("callback broke on: " + violation.message)

        def process_input(self, args: ProcessInputArgs):
            args.abort("blocked because of " + args.messages[-1].text)


    async def main():
        agent = Agent(
            id="quiet",
            model=ScriptedModel(["never said"]),
            input_processors=[RegexFilterProcessor(presets=["pii"], strategy="warn"), Blocker()],
        )
        result = await agent.generate({SECRET!r})
        assert result.tripwire is not None and result.tripwire.processor_id == "blocker"


    anyio.run(main)
    """
)


def _run(setup: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT.replace("{setup}", setup)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_tripwire_prints_nothing_when_logging_is_unconfigured() -> None:
    """A tripped tripwire, a warn-strategy match and a failing callback leave stdout and stderr empty."""
    done = _run("")
    assert done.returncode == 0, done.stderr
    assert (done.stdout, done.stderr) == ("", "")


def test_basic_config_at_debug_shows_the_events_without_message_text() -> None:
    """With logging.basicConfig(level=DEBUG) the events appear on stderr, with ids but no message text."""
    done = _run("import logging; logging.basicConfig(level=logging.DEBUG)")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert "DEBUG:procflow:processor_tripwire processor_id='blocker' retry=False" in lines
    assert "WARNING:procflow:on_violation_failed processor_id='blocker' error_type='RuntimeError'" in lines
    assert any(line.startswith("WARNING:procflow:regex_filter_match ") for line in lines)
    for fragment in ("4111", "my card", "keep it quiet", "blocked because", "callback broke"):
        assert fragment not in done.stderr

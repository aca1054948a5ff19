"""docs/cli.md is true: its transcripts are what the command prints, its files exist, its exit codes hold."""

from __future__ import annotations

import re
import shlex

import pytest
from cli_support import ROOT, procflow

from procflow._cli import console

PAGE = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
TRANSCRIPTS = re.findall(r"^```text\n\$ (procflow [^\n]*)\n(.*?)^```", PAGE, re.DOTALL | re.MULTILINE)
COMMANDS = [
    line.split("#")[0].strip()
    for block in re.findall(r"^```sh\n(.*?)^```", PAGE, re.DOTALL | re.MULTILINE)
    for line in block.splitlines()
]


def _words(text: str) -> list[str]:
    return text.replace("\\|", "|").split()


@pytest.mark.parametrize(("command", "shown"), TRANSCRIPTS, ids=[c for c, _ in TRANSCRIPTS])
def test_each_transcript_is_what_the_command_prints(command: str, shown: str) -> None:
    """The `$ procflow ...` line of a transcript prints the lines shown (rewrapped), nothing else."""
    done = procflow(*shlex.split(command)[1:])
    assert _words(done.stdout + done.stderr) == _words(shown)


def test_transcripts_cover_each_kind_of_example() -> None:
    """The page shows a load error, bad lines and a check error."""
    assert len(TRANSCRIPTS) == 3


@pytest.mark.parametrize("command", [c for c in COMMANDS if c], ids=lambda c: c[:60])
def test_every_file_an_example_names_exists(command: str) -> None:
    """Each examples/… path in a shell example is a file of the repository."""
    paths = [word.split(":")[0] for word in shlex.split(command) if word.startswith("examples/")]
    for path in paths:
        assert (ROOT / path).is_file(), path


def test_the_exit_status_table_lists_the_codes_the_command_uses() -> None:
    """Each status in the table is one of the command's exit codes, and each code is in the table."""
    table = PAGE.split("## Exit status")[1].split("##")[0]
    documented = {int(code) for code in re.findall(r"^\| (\d+) \|", table, re.MULTILINE)}
    codes = {value for name, value in vars(console).items() if name.startswith("EXIT_")}
    assert documented == codes == {0, 1, 2, 130, 141}

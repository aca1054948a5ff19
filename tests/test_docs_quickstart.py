"""docs/quickstart.md is true: the picture and the check it shows are what the commands print."""

from __future__ import annotations

import re
import shlex

from cli_support import ROOT, procflow

PAGE = (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")


def test_the_drawn_workflow_is_what_procflow_graph_prints() -> None:
    """The Mermaid block after `procflow graph ...` is that command's output, line for line."""
    found = re.search(r"^```sh\n(procflow graph [^\n]*)\n```\n\n```mermaid\n(.*?)^```", PAGE, re.S | re.M)
    assert found is not None, "the quickstart lost its procflow graph picture"
    done = procflow(*shlex.split(found.group(1))[1:])
    assert done.returncode == 0
    assert done.stdout.splitlines() == found.group(2).splitlines()


def test_the_check_transcript_is_what_procflow_check_prints() -> None:
    """The `$ procflow check ...` transcript is what the command prints, and it passes."""
    found = re.search(r"^```text\n\$ (procflow check [^\n]*)\n(.*?)^```", PAGE, re.S | re.M)
    assert found is not None, "the quickstart lost its procflow check transcript"
    done = procflow(*shlex.split(found.group(1))[1:])
    assert done.returncode == 0
    assert (done.stdout + done.stderr).split() == found.group(2).split()

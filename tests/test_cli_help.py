"""``procflow --help``, each subcommand's help, ``--version`` and usage errors (in-process)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from cli_support import procflow

from procflow import __version__


def test_top_level_help_lists_every_command() -> None:
    """`procflow --help` names run, graph, check and chat."""
    done = procflow("--help")
    assert done.returncode == 0
    for command in ("run", "graph", "check", "chat"):
        assert command in done.stdout


@pytest.mark.parametrize(
    ("command", "options"),
    [
        ("run", ["--pipeline", "--output", "--phase", "--on-error", "--report", "--keep-blocked"]),
        ("graph", ["--format", "mermaid,dot,json,svg,png", "--output"]),
        ("check", ["pipeline"]),
        ("chat", ["--pipeline", "--model", "scripted"]),
    ],
)
def test_each_command_documents_its_options(command: str, options: list[str]) -> None:
    """`procflow COMMAND --help` exits 0 and documents the command's options."""
    done = procflow(command, "--help")
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    for option in options:
        assert option in text


def test_version() -> None:
    """`procflow --version` prints the package version."""
    assert procflow("--version").stdout.strip() == f"procflow {__version__}"


def test_no_command_is_a_usage_error() -> None:
    """Without a command, usage goes to stderr with exit status 2."""
    done = procflow()
    assert done.returncode == 2
    assert "usage: procflow" in done.stderr


def test_python_dash_m_runs_the_same_command() -> None:
    """`python -m procflow` is the same program as the console script."""
    done = subprocess.run(
        [sys.executable, "-m", "procflow", "--version"], capture_output=True, text=True, check=False
    )
    assert done.stdout.strip() == f"procflow {__version__}"

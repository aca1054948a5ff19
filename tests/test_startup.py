"""What ``import procflow`` and ``procflow --help`` load: no terminal UI, server, graph or HTTP library."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from cli_support import procflow

OPTIONAL = ("rich", "uvicorn", "networkx", "httpx", "structlog", "starlette")


def _modules_after(code: str) -> set[str]:
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    return {name.partition(".")[0] for name in json.loads(done.stdout.splitlines()[-1])}


def test_import_procflow_loads_no_optional_or_heavy_library() -> None:
    """`import procflow` imports none of rich, uvicorn, networkx, httpx, structlog, nor pydantic."""
    loaded = _modules_after("import procflow")
    assert loaded.isdisjoint({*OPTIONAL, "pydantic", "anyio"})


def test_the_processors_need_no_cli_server_or_http_library() -> None:
    """Using the built-in processors and the scripted model loads neither rich nor uvicorn nor httpx."""
    loaded = _modules_after(
        "from procflow.processors import RegexFilterProcessor\n"
        "from procflow.testing import ScriptedModel, run_input\n"
        "RegexFilterProcessor(presets=['pii'])"
    )
    assert loaded.isdisjoint(OPTIONAL)


def test_procflow_help_loads_only_the_parser() -> None:
    """Building the command's parser (what --help needs) imports none of the library's machinery."""
    loaded = _modules_after("from procflow._cli import build_parser\nbuild_parser().format_help()")
    assert loaded.isdisjoint({*OPTIONAL, "pydantic", "anyio", "regex", "tiktoken"})


def test_lazy_names_resolve_to_the_real_objects() -> None:
    """`procflow.Agent` and the other lazy names are the classes of their packages."""
    import procflow
    from procflow import Agent, Message

    assert (procflow.Agent, procflow.Message) == (Agent, Message)
    assert "Agent" in dir(procflow)
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        procflow.Nope  # noqa: B018


def test_without_rich_the_command_says_which_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """With rich missing, a command exits 2 naming `procflow[cli]`; --help still works."""
    monkeypatch.setitem(sys.modules, "rich.console", None)
    done = procflow("check")
    assert done.returncode == 2
    assert "pip install 'procflow[cli]'" in done.stderr
    assert procflow("--help").returncode == 0

"""`procflow serve` as a command: it serves the openai client, stops on Ctrl-C; bad options exit 2."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import openai
import pytest
from services import free_port

from procflow._cli import main
from procflow.testing import FakeProviderServer, FakeReply


def test_serve_answers_and_stops_on_sigint(tmp_path: Path) -> None:
    """The real command serves the openai client through the default guard and exits 0 on Ctrl-C."""
    keys = tmp_path / "keys.txt"
    keys.write_text("# team keys\nteam-key-1\n", encoding="utf-8")
    port = free_port()
    with FakeProviderServer([FakeReply(text="Llame al +34 612 345 678, por favor.")]) as upstream:
        command = [sys.executable, "-m", "procflow._cli", "serve", "--upstream", upstream.base_url]
        command += ["--upstream-model", "m1", "--port", str(port), "--api-keys-file", str(keys)]
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            _wait_healthy(f"http://127.0.0.1:{port}/healthz", child)
            with openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="team-key-1") as client:
                answer = client.chat.completions.create(
                    model="m1", messages=[{"role": "user", "content": "hola"}]
                )
            assert answer.choices[0].message.content == "Llame al [PHONE], por favor."
        finally:
            child.send_signal(signal.SIGINT)
            _, err = child.communicate(timeout=20)
    assert child.returncode == 0, err.decode()
    assert b"Traceback" not in err


def _wait_healthy(url: str, child: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and child.poll() is None:
        try:
            if httpx.get(url).status_code == 200:
                return
        except httpx.TransportError:
            threading.Event().wait(0.05)
    raise AssertionError(f"procflow serve did not become healthy (exit code {child.poll()})")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--api-keys-file", "/nonexistent/keys.txt"], "cannot read the API key file"),
        (["--api-keys-env", "PROCFLOW_TEST_UNSET_VARIABLE"], "is not set"),
        (["--upstream-model", "x"], "only for a URL upstream"),
    ],
)
def test_bad_options_exit_2(capsys: pytest.CaptureFixture[str], extra: list[str], message: str) -> None:
    """Unreadable key files, unset variables and contradictory options exit 2 with the fix."""
    os.environ.pop("PROCFLOW_TEST_UNSET_VARIABLE", None)
    assert main(["serve", "--upstream", "ollama/llama3.2", *extra]) == 2
    assert message in capsys.readouterr().err


def test_serve_moves_startup_objects_out_of_the_collectors_reach(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before serving, the command freezes what startup made and collects the young generation rarely."""
    import gc

    import uvicorn

    from procflow._cli.serve_command import GC_THRESHOLD

    seen: list[tuple[int, int]] = []
    monkeypatch.setattr(
        uvicorn, "run", lambda *a, **k: seen.append((gc.get_freeze_count(), gc.get_threshold()[0]))
    )
    threshold = gc.get_threshold()
    try:
        with FakeProviderServer() as upstream:
            code = main(["serve", "--upstream", upstream.base_url, "--port", str(free_port())])
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
    assert code == 0
    assert len(seen) == 1
    frozen, young = seen[0]
    assert frozen > 1000
    assert young == GC_THRESHOLD

"""Two `procflow serve` processes over one Redis and one PostgreSQL behave as one gateway."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import openai
import pytest
from services import free_port

from procflow.testing import FakeProviderServer, FakeReply

PIPELINE = Path(__file__).resolve().parent / "fixtures" / "gateway_shared.py"


@contextmanager
def gateway(upstream: str, env: dict[str, str]) -> Iterator[str]:
    """One `procflow serve` process; yields its ``…/v1`` URL and stops it with Ctrl-C."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "procflow._cli",
        "serve",
        "-p",
        f"{PIPELINE}:agent",
        "--upstream",
        upstream,
    ]
    command += ["--upstream-model", "m1", "--port", str(port)]
    child = subprocess.Popen(
        command, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        while child.poll() is None and time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                threading.Event().wait(0.1)
        else:
            raise AssertionError(
                f"procflow serve did not start: {child.stderr.read().decode() if child.stderr else ''}"
            )
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        child.send_signal(signal.SIGINT)
        child.communicate(timeout=30)


def _ask(url: str, text: str, *, resource: str, thread: str) -> openai.types.chat.ChatCompletion:
    with openai.OpenAI(base_url=url, api_key="unused", max_retries=0) as client:
        return client.chat.completions.create(
            model="m1",
            messages=[{"role": "user", "content": text}],
            extra_headers={"X-Procflow-Resource": resource, "X-Procflow-Thread": thread},
        )


def test_two_instances_share_cache_cost_windows_and_memory(redis_url: str, postgres_dsn: str) -> None:
    """A hit written through A is a hit on B; spend on A blocks on B; B recalls what A stored."""
    env = {"PROCFLOW_TEST_REDIS_URL": redis_url, "PROCFLOW_TEST_POSTGRES_DSN": postgres_dsn}
    with (
        FakeProviderServer() as upstream,
        gateway(upstream.base_url, env) as a,
        gateway(upstream.base_url, env) as b,
    ):
        upstream.add(FakeReply(text="Nous ouvrons à 9 h.", input_tokens=10))
        first = _ask(a, "¿A qué hora abren?", resource="tenant-cache", thread="t-cache-a")
        upstream_calls = len(upstream.requests)
        again = _ask(b, "¿A qué hora abren?", resource="tenant-cache", thread="t-cache-b")
        assert again.choices[0].message.content == first.choices[0].message.content == "Nous ouvrons à 9 h."
        assert len(upstream.requests) == upstream_calls, "B answered from the cache A wrote"

        upstream.add(FakeReply(text="Je m'appelle Zeta.", input_tokens=10))
        _ask(
            a,
            "Je m'appelle Marie Dupont, mon e-mail est marie@example.fr.",
            resource="tenant-memory",
            thread="t-1",
        )
        upstream.add(FakeReply(text="Vous êtes Marie Dupont.", input_tokens=10))
        recalled = _ask(b, "Comment je m'appelle ?", resource="tenant-memory", thread="t-1")
        assert recalled.choices[0].message.content == "Vous êtes Marie Dupont."
        history = upstream.requests[-1].json["messages"]
        assert any("Je m'appelle Marie Dupont" in str(m.get("content")) for m in history), history

        upstream.add(FakeReply(text="Un.", input_tokens=10), FakeReply(text="Deux.", input_tokens=10))
        _ask(a, "Premier message", resource="tenant-cost", thread="t-cost")
        _ask(a, "Deuxième message", resource="tenant-cost", thread="t-cost")
        with pytest.raises(openai.BadRequestError) as blocked:
            _ask(b, "Troisième message", resource="tenant-cost", thread="t-cost")
        assert blocked.value.body["code"] == "procflow_tripwire"  # type: ignore[index]
        assert blocked.value.body["processor_id"] == "cost-guard"  # type: ignore[index]

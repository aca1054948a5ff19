"""``procflow chat``: talk to an agent whose processors are the pipeline, and see what each one did."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import TYPE_CHECKING, Any

from procflow._cli.console import EXIT_USAGE, fail
from procflow.errors import ConfigurationError, ProcflowError

if TYPE_CHECKING:
    from rich.console import Console

    from procflow._agent import Agent
    from procflow._chat.violations import ViolationCollector
    from procflow._cli.loading import LoadedPipeline
    from procflow._messages.message import Message
    from procflow._messages.tripwire import TripwireInfo
    from procflow.models._base import ModelRequest
    from procflow.processors._args import ProcessInputArgs, ProcessOutputResultArgs
    from procflow.processors._base import ProcessorViolation

__all__ = ["add_parser", "run"]

SCRIPTED = "scripted"
INSTRUCTIONS = "You are a helpful assistant."


def add_parser(subparsers: Any) -> None:
    """Register ``procflow chat``."""
    parser = subparsers.add_parser(
        "chat",
        help="chat in the terminal through a pipeline, seeing what each processor did",
        description=(
            "An interactive chat with an agent whose input and output processors are the pipeline. After "
            "each turn it shows the processors' redactions, warnings and tripwires. Type /reset to forget "
            "the conversation, /quit (or end of input) to leave. With --model scripted (the default for a "
            "pipeline that is not an agent) the model answers offline by repeating what reached it."
        ),
    )
    parser.add_argument("-p", "--pipeline", help="FILE.py:NAME or MODULE:NAME (default: the bundled guard)")
    parser.add_argument(
        "-m",
        "--model",
        help="a model id such as openai/gpt-5-mini or ollama/llama3.2, or 'scripted' (offline); "
        "default: the agent's model, else scripted",
    )
    parser.add_argument(
        "--instructions", default=None, help=f"system instructions (default: {INSTRUCTIONS!r})"
    )
    parser.add_argument(
        "--memory",
        metavar="PATH.sqlite",
        help="keep the conversation in this SQLite file, across runs (default: only for this run)",
    )
    parser.add_argument(
        "--thread", default="chat", help="the conversation thread in --memory to continue (default: chat)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    """Run the ``procflow chat`` command; return the exit code."""
    import anyio
    from rich.console import Console

    from procflow._chat.violations import ViolationCollector
    from procflow._cli.loading import load_pipeline
    from procflow._cli.processing import nested_processors

    try:
        pipeline = load_pipeline(args.pipeline)
        agent = _build_agent(pipeline, args)
    except ConfigurationError as exc:  # PipelineLoadError included
        return fail(console, str(exc), code=EXIT_USAGE)
    collector = ViolationCollector()
    collector.attach(pipeline.processors)
    for processor in pipeline.processors:
        collector.attach(nested_processors(processor))
    out = Console(highlight=False, soft_wrap=True, markup=False)
    model = getattr(agent.model, "model_id", agent.model)
    name = args.pipeline or "the bundled guard"
    out.print(f"procflow chat — pipeline {name}, model {model}. /reset forgets, /quit leaves.")
    return anyio.run(_loop, agent, collector, out, console, args.thread if args.memory else None)


def _build_agent(pipeline: LoadedPipeline, args: argparse.Namespace) -> Agent:
    from procflow._agent import Agent

    if args.memory:
        from procflow.memory import Memory, SQLiteStorage

        memory: Any = Memory(storage=SQLiteStorage(args.memory))
    else:
        memory = _ChatMemory()
    if pipeline.kind == "agent":
        base = pipeline.target
        model = _model(args.model or base.model)
        return Agent(
            id=base.id,
            model=model,
            instructions=base.instructions if args.instructions is None else args.instructions,
            tools=base.tools,
            input_processors=base.input_processors,
            output_processors=base.output_processors,
            error_processors=base.error_processors,
            max_processor_retries=base.max_processor_retries,
            memory=memory,
        )
    return Agent(
        id="procflow-chat",
        model=_model(args.model or SCRIPTED),
        instructions=INSTRUCTIONS if args.instructions is None else args.instructions,
        input_processors=list(pipeline.input_processors),
        output_processors=list(pipeline.output_processors),
        memory=memory,
    )


def _model(model_id: Any) -> Any:
    """The model for ``model_id``, resolved now so a bad id or a missing API key fails before the chat."""
    if model_id == SCRIPTED:
        from procflow.testing._scripted import ScriptedModel

        return ScriptedModel([_echo], repeat_last=True, chunk_size=4)
    from procflow.models import resolve_model

    return resolve_model(model_id)


def _echo(request: ModelRequest) -> str:
    users = [m.text for m in request.prompt if m.role == "user"]
    context = sum(1 for m in request.prompt if m.role != "system")
    return f"(scripted model, {context} messages in context) I received: {users[-1] if users else ''}"


class _LoadHistory:
    """Memory's input processor: the conversation so far, before the pipeline's processors see it."""

    id = "chat-history"

    def __init__(self, history: list[Message]) -> None:
        self.history = history

    def process_input(self, args: ProcessInputArgs) -> None:
        args.message_list.add(list(self.history), source="memory")


class _SaveHistory:
    """Memory's output processor: keeps the turn as the pipeline left it (not run when a turn is blocked)."""

    id = "chat-history-save"

    def __init__(self, history: list[Message]) -> None:
        self.history = history

    def process_output_result(self, args: ProcessOutputResultArgs) -> None:
        ml = args.message_list
        self.history.extend(m for m in (*ml.input, *ml.response) if m.role != "signal")


class _ChatMemory:
    """Keeps the conversation between turns (see ``MemoryProcessors``)."""

    def __init__(self) -> None:
        self.history: list[Message] = []
        self._load = _LoadHistory(self.history)
        self._save = _SaveHistory(self.history)

    def input_processors(self, request_context: Any) -> list[Any]:
        return [self._load]

    def output_processors(self, request_context: Any) -> list[Any]:
        return [self._save]


async def _loop(
    agent: Any, collector: ViolationCollector, out: Console, err: Console, thread: str | None
) -> int:
    try:
        return await _chat(agent, collector, out, err, thread)
    finally:
        if thread is not None:
            await agent.memory.storage.aclose()


async def _chat(
    agent: Any, collector: ViolationCollector, out: Console, err: Console, thread: str | None
) -> int:
    import anyio.to_thread
    from rich.markup import escape

    while True:
        line = await anyio.to_thread.run_sync(_read_line, abandon_on_cancel=True)
        if line is None or line.strip() in ("/quit", "/exit"):
            return 0
        text = line.strip()
        if not text:
            continue
        if text == "/reset":
            if thread is None:
                agent.memory.history.clear()
            else:
                await agent.memory.storage.delete_thread(thread)
            out.print("(conversation forgotten)")
            continue
        collector.take()
        if not sys.stdin.isatty():  # a terminal already shows what was typed
            out.print(f"you> {text}")
        try:
            result = await _turn(agent, text, out, thread)
        except ProcflowError as exc:
            err.print(f"[bold red]error:[/] {escape(str(exc))}")
            continue
        _show_reports(out, collector.take(), result.tripwire)


def _read_line() -> str | None:
    if sys.stdin.isatty():
        sys.stderr.write("you> ")
        sys.stderr.flush()
    line = sys.stdin.readline()
    return line if line else None


async def _turn(agent: Any, text: str, out: Console, thread: str | None) -> Any:
    stream = agent.stream(text, memory=None if thread is None else {"thread": thread})
    shown: list[str] = []
    async for chunk in stream.full_stream:
        if chunk.type == "text-delta" and chunk.text:
            if not shown:
                out.print("assistant> ", end="")
            shown.append(chunk.text)
            out.print(chunk.text, end="")
    if shown:
        out.print()
    result = stream.result
    if shown and not result.tripwire and result.text != "".join(shown):
        out.print(f"  (after output processors) {result.text}")
    return result


def _show_reports(out: Console, reports: list[ProcessorViolation], tripwire: TripwireInfo | None) -> None:
    from procflow._chat.violations import redaction_rules, warning_rules

    by_processor: dict[str, Counter[str]] = {}
    warned: dict[str, Counter[str]] = {}
    for report in reports:
        rules, warnings = redaction_rules(report), warning_rules(report)
        if rules:
            by_processor.setdefault(report.processor_id, Counter()).update(rules)
        elif warnings:
            warned.setdefault(report.processor_id, Counter()).update(warnings)
        elif tripwire is None or report.message != tripwire.reason:
            out.print(f"  [{report.processor_id}] reported: {report.message}")
    for pid, counts in by_processor.items():
        out.print(f"  [{pid}] redacted {_counts(counts)}")
    for pid, counts in warned.items():
        out.print(f"  [{pid}] warned about {_counts(counts)}")
    if tripwire is not None:
        out.print(f"  [{tripwire.processor_id or '?'}] blocked: {tripwire.reason}")


def _counts(counts: Counter[str]) -> str:
    return ", ".join(f"{rule} ×{n}" for rule, n in sorted(counts.items()))

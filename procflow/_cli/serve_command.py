"""``procflow serve``: run the OpenAI-compatible guard gateway in front of an upstream model."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from procflow._cli.console import EXIT_OK, EXIT_USAGE, fail
from procflow.errors import ConfigurationError, WorkflowDefinitionError

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["GC_THRESHOLD", "add_parser", "build_config", "run"]

GC_THRESHOLD = 10_000
"""Allocations between young-generation collections while serving (CPython's default is 700). Each
stream allocates thousands of short-lived objects, nearly all freed by reference counting, so the
default ran a collection every few events; the rare object in a cycle waits a little longer."""


def add_parser(subparsers: Any) -> None:
    """Register ``procflow serve``."""
    parser = subparsers.add_parser(
        "serve",
        help="serve an OpenAI-compatible gateway that runs every request through a pipeline",
        description=(
            "Serve POST /v1/chat/completions (streamed or not), GET /v1/models, GET /healthz and GET "
            "/metrics. Each request runs through the pipeline's input processors, is forwarded to the "
            "upstream model, and its answer runs through the output processors. See docs/gateway.md."
        ),
    )
    parser.add_argument("-p", "--pipeline", help="FILE.py:NAME or MODULE:NAME (default: the bundled guard)")
    parser.add_argument(
        "--upstream",
        required=True,
        help="a model id (openai/gpt-5-mini, ollama/llama3.2) or an OpenAI-compatible base URL",
    )
    parser.add_argument("--upstream-model", help="with a URL upstream: the model id to ask it for")
    parser.add_argument(
        "--upstream-key-env", metavar="VAR", help="with a URL upstream: the variable holding its API key"
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (default: 8000)")
    parser.add_argument("--api-keys-file", metavar="FILE", help="client API keys, one per line")
    parser.add_argument("--api-keys-env", metavar="VAR", help="client API keys, comma-separated, in VAR")
    parser.add_argument(
        "--max-body-bytes", type=int, default=4 * 1024 * 1024, help="largest request body (default: 4 MiB)"
    )
    parser.add_argument(
        "--max-concurrent", type=int, default=64, help="requests in flight per client (default: 64)"
    )
    parser.add_argument(
        "--tripwire-response",
        choices=("error", "refusal"),
        default="error",
        help="answer a stopped request with an error object (default) or an assistant refusal",
    )
    parser.add_argument("--model-name", action="append", help="a model name to serve (repeatable)")
    parser.add_argument(
        "--max-processor-retries",
        type=int,
        default=None,
        help="how often processors may ask the upstream to answer again (default: never)",
    )
    parser.set_defaults(handler=run)


def build_config(args: argparse.Namespace) -> Any:
    """The :class:`~procflow.server.GatewayConfig` the arguments describe.

    Raises:
        ConfigurationError: an argument is invalid (the message says which and how to fix it).
        PipelineLoadError: the pipeline cannot be loaded.
    """
    import os

    from procflow._cli.loading import load_pipeline
    from procflow.server import GatewayConfig, load_api_keys, resolve_upstream

    pipeline = load_pipeline(args.pipeline)
    upstream_key = os.environ.get(args.upstream_key_env) if args.upstream_key_env else None
    # An agent as the pipeline brings its memory and retry cap (its model is replaced by the upstream).
    agent = pipeline.target if pipeline.kind == "agent" else None
    retries = args.max_processor_retries
    if retries is None and agent is not None:
        retries = agent.max_processor_retries
    return GatewayConfig(
        upstream=resolve_upstream(args.upstream, model=args.upstream_model, api_key=upstream_key),
        input_processors=pipeline.input_processors,
        output_processors=pipeline.output_processors,
        api_keys=load_api_keys(file=args.api_keys_file, env=args.api_keys_env),
        max_body_bytes=args.max_body_bytes,
        max_concurrent_per_client=args.max_concurrent,
        tripwire_response=args.tripwire_response,
        model_names=tuple(args.model_name or ()),
        max_processor_retries=retries,
        memory=agent.memory if agent is not None else None,
    )


def run(args: argparse.Namespace, console: Console) -> int:
    """Run the ``procflow serve`` command until interrupted; return the exit code."""
    try:
        import uvicorn

        from procflow.server import create_app
        from procflow.server._config import KEEP_ALIVE_SECONDS
    except ImportError as exc:
        return fail(
            console, f"procflow serve needs the server extra: pip install 'procflow[server]' ({exc.name})"
        )
    from procflow._cli.loading import PipelineLoadError

    try:
        config = build_config(args)
    except (PipelineLoadError, WorkflowDefinitionError, ConfigurationError) as exc:
        return fail(console, str(exc), code=EXIT_USAGE)
    keys = (
        f"{len(config.api_keys)} API key(s)"
        if config.api_keys
        else "no API keys (open to anyone who can connect)"
    )
    _settle_memory()
    console.print(
        f"procflow gateway on http://{args.host}:{args.port}/v1 → {config.upstream.provider}/"
        f"{config.upstream.model_id}; {keys}"
    )
    uvicorn.run(
        create_app(config),
        host=args.host,
        port=args.port,
        log_config=None,
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=5,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
    )
    return EXIT_OK


def _settle_memory() -> None:
    """Collect once, then move everything alive (modules, the pipeline's compiled patterns, the token
    encoding) out of the collector's reach: it is never garbage, and the full collections a busy gateway
    runs (each one stops every stream for as long as it takes) no longer walk through it."""
    import gc

    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_THRESHOLD, middle, old)

"""What a gateway serves: the upstream model, the pipeline around it, keys and limits."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from procflow.errors import ConfigurationError
from procflow.models import LanguageModel, OpenAICompatibleModel, resolve_model
from procflow.server._upstream import upstream_transport

__all__ = ["GatewayConfig", "TripwireResponse", "load_api_keys", "resolve_upstream"]

TripwireResponse = Literal["error", "refusal"]
"""How a stopped request is answered: an OpenAI error object (HTTP 400), or a normal assistant message."""

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_CONCURRENT_PER_CLIENT = 64
KEEP_ALIVE_SECONDS = 75
"""How long the server keeps an idle client connection open. Longer than clients keep theirs (httpx and
the ``openai`` client drop an idle connection after 5 s; load balancers after about 60 s), so a client
always closes first: with equal times (uvicorn's default is 5 s) a client reusing a connection races the
server closing it and gets a connection reset."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GatewayConfig:
    """A gateway's configuration (see :func:`procflow.server.create_app`).

    Attributes:
        upstream: The model every request is forwarded to.
        input_processors: Run on each request before the upstream call.
        output_processors: Run on the upstream's answer (stream processors on the SSE stream).
        error_processors: Run when the upstream rejects a call.
        api_keys: Keys clients must send as ``Authorization: Bearer <key>``; empty means no keys.
        max_body_bytes: Larger request bodies are refused with HTTP 413.
        max_concurrent_per_client: More requests at once from one client (one key, or one address
            when there are no keys) are refused with HTTP 429.
        tripwire_response: ``"error"`` (HTTP 400, ``code: procflow_tripwire``) or ``"refusal"`` (HTTP 200,
            an assistant message with :attr:`refusal_text` and ``finish_reason: content_filter``).
        refusal_text: The assistant text of a refusal.
        model_names: The model names ``GET /v1/models`` lists and requests may ask for; by default the
            upstream's model id. A request naming another model gets HTTP 404.
        max_processor_retries: How many times processors may ask the upstream to answer again
            (``abort(..., retry=True)``); ``None`` allows none, as for an :class:`~procflow.Agent`.
        memory: A :class:`~procflow.memory.Memory` (on a storage every instance shares, e.g.
            PostgreSQL): requests that name a thread (``X-Procflow-Thread``) send only their new
            messages and memory supplies the history.
    """

    upstream: LanguageModel
    input_processors: Sequence[Any] = ()
    output_processors: Sequence[Any] = ()
    error_processors: Sequence[Any] = ()
    api_keys: frozenset[str] = frozenset()
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_concurrent_per_client: int = DEFAULT_MAX_CONCURRENT_PER_CLIENT
    tripwire_response: TripwireResponse = "error"
    refusal_text: str = "I can't help with that request."
    model_names: tuple[str, ...] = field(default=())
    max_processor_retries: int | None = None
    memory: Any = None

    def __post_init__(self) -> None:
        if self.max_body_bytes < 1024:
            raise ConfigurationError(f"max_body_bytes must be at least 1024, not {self.max_body_bytes}")
        if self.max_concurrent_per_client < 1:
            raise ConfigurationError(
                f"max_concurrent_per_client must be at least 1, not {self.max_concurrent_per_client}"
            )
        if self.tripwire_response not in ("error", "refusal"):
            raise ConfigurationError(
                f"tripwire_response must be 'error' or 'refusal', not {self.tripwire_response!r}"
            )
        if any(
            not key.isascii() or not key.isprintable() or key != key.strip() or not key
            for key in self.api_keys
        ):
            raise ConfigurationError(
                "API keys must be non-empty printable ASCII (they travel in an HTTP header) with no "
                "surrounding whitespace"
            )

    @property
    def served_models(self) -> tuple[str, ...]:
        """The model names this gateway answers for."""
        return self.model_names or (self.upstream.model_id,)


def resolve_upstream(upstream: str, *, model: str | None = None, api_key: str | None = None) -> LanguageModel:
    """The upstream model a ``--upstream`` value names.

    Args:
        upstream: A ``provider/model`` id (``openai/gpt-5-mini``, ``ollama/llama3.2``) or the base URL of
            an OpenAI-compatible server (``http://127.0.0.1:8080/v1``).
        model: With a URL, the model id to ask the server for (default: ``default``).
        api_key: With a URL, the key to send upstream.

    The model sends through many small connection pools rather than one large one (httpcore's pool does
    work per connection it holds on every request), so its cost per request stays flat up to hundreds of
    concurrent streams.
    """
    if upstream.startswith(("http://", "https://")):
        return OpenAICompatibleModel(
            model or "default",
            base_url=upstream,
            api_key=api_key,
            provider="openai-compatible",
            transport=upstream_transport(),
        )
    if model is not None:
        raise ConfigurationError("--upstream-model is only for a URL upstream; a model id already names it")
    return resolve_model(upstream, transport=upstream_transport())


def load_api_keys(*, file: str | os.PathLike[str] | None = None, env: str | None = None) -> frozenset[str]:
    """Client keys from a file (one per line; blank lines and ``#`` comments ignored) and/or a variable.

    The variable holds one key or several separated by commas. Keys are never logged.

    Raises:
        ConfigurationError: the file cannot be read, the variable is unset, or no key was found.
    """
    keys: list[str] = []
    if file is not None:
        try:
            text = Path(file).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigurationError(f"cannot read the API key file {file}: {exc.strerror}") from None
        keys += _keys(text.splitlines())
    if env is not None:
        value = os.environ.get(env)
        if value is None:
            raise ConfigurationError(f"the environment variable {env} (API keys) is not set")
        keys += _keys(value.split(","))
    if (file is not None or env is not None) and not keys:
        raise ConfigurationError("no API key found: give one key per line in the file, or comma-separated")
    return frozenset(keys)


def _keys(lines: Iterable[str]) -> list[str]:
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]

"""Resolving ``"provider/model"`` ids to :class:`LanguageModel` objects."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from procflow.errors import ConfigurationError, MissingAPIKeyError, UnknownModelError

if TYPE_CHECKING:
    from procflow.models._base import LanguageModel

# The provider classes (and httpx) are imported when a model id is resolved, not with the router:
# an agent on a model object never loads the HTTP stack.

__all__ = ["OLLAMA_BASE_URL", "PROVIDERS", "resolve_model"]

OLLAMA_BASE_URL = "http://localhost:11434/v1"


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def _require_key(options: dict[str, Any], env: str, provider: str, default_url: str) -> None:
    # A key is required only for the provider's own service; proxies and local servers may need none.
    if options.get("api_key") is None:
        options["api_key"] = _env(env)
    if options["api_key"] is None and options["base_url"].rstrip("/") == default_url:
        raise MissingAPIKeyError(
            f"{provider} needs an API key: set the {env} environment variable or pass api_key=..."
        )


def _openai(model_id: str, options: dict[str, Any]) -> LanguageModel:
    from procflow.models._openai_compatible import OPENAI_BASE_URL, OpenAICompatibleModel

    options["base_url"] = options.get("base_url") or _env("OPENAI_BASE_URL") or OPENAI_BASE_URL
    _require_key(options, "OPENAI_API_KEY", "openai", OPENAI_BASE_URL)
    return OpenAICompatibleModel(model_id, provider="openai", **options)


def _anthropic(model_id: str, options: dict[str, Any]) -> LanguageModel:
    from procflow.models._anthropic import ANTHROPIC_BASE_URL, AnthropicModel

    options["base_url"] = options.get("base_url") or ANTHROPIC_BASE_URL
    _require_key(options, "ANTHROPIC_API_KEY", "anthropic", ANTHROPIC_BASE_URL)
    return AnthropicModel(model_id, **options)


def _ollama_url(url: str) -> str:
    # OLLAMA_BASE_URL is often the server root (http://host:11434); the OpenAI API lives under /v1.
    url = url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


def _ollama(model_id: str, options: dict[str, Any]) -> LanguageModel:
    from procflow.models._openai_compatible import OpenAICompatibleModel

    base_url = options.get("base_url") or _env("OLLAMA_BASE_URL")
    options["base_url"] = _ollama_url(base_url) if base_url else OLLAMA_BASE_URL
    return OpenAICompatibleModel(model_id, provider="ollama", **options)


def _openai_compatible(model_id: str, options: dict[str, Any]) -> LanguageModel:
    from procflow.models._openai_compatible import OpenAICompatibleModel

    options["base_url"] = options.get("base_url") or _env("OPENAI_BASE_URL")
    if not options["base_url"]:
        raise ConfigurationError(
            f"'openai-compatible/{model_id}' needs the server's base URL: pass base_url=... "
            "(e.g. 'http://localhost:8000/v1' for vLLM) or set the OPENAI_BASE_URL environment variable"
        )
    if options.get("api_key") is None:
        options["api_key"] = _env("OPENAI_API_KEY")
    return OpenAICompatibleModel(model_id, provider="openai-compatible", **options)


PROVIDERS: dict[str, Callable[[str, dict[str, Any]], LanguageModel]] = {
    "anthropic": _anthropic,
    "ollama": _ollama,
    "openai": _openai,
    "openai-compatible": _openai_compatible,
}
"""The providers model ids may name, each with the function building its model from the options."""


def resolve_model(model: str | LanguageModel, **options: Any) -> LanguageModel:
    """Return ``model`` itself, or the provider model a ``"provider/model"`` id names.

    Ids: ``"openai/gpt-5-mini"`` (``OPENAI_API_KEY``, optional ``OPENAI_BASE_URL``),
    ``"anthropic/claude-sonnet-4-5"`` (``ANTHROPIC_API_KEY``), ``"ollama/llama3.2"`` (``OLLAMA_BASE_URL``,
    default ``http://localhost:11434``), and ``"openai-compatible/<model>"`` for any other server
    speaking the protocol (``base_url=`` or ``OPENAI_BASE_URL``; ``OPENAI_API_KEY`` if it needs one).
    Everything after the first ``/`` is the model name, so ``"openai-compatible/meta-llama/Llama-3.1-8B"``
    works. Arguments win over environment variables.

    Args:
        model: A model object (returned as is) or an id.
        **options: Passed to the provider's model class: ``api_key``, ``base_url``, ``headers``,
            ``timeout``, ``client``, ``transport``, …

    Raises:
        UnknownModelError: the id names no known provider.
        MissingAPIKeyError: the provider needs a key that is not set (the message names the variable).
        ConfigurationError: a generic OpenAI-compatible id without a base URL.
    """
    if not isinstance(model, str):
        return model
    provider, sep, model_id = model.partition("/")
    known = ", ".join(sorted(PROVIDERS))
    if not sep or not provider or not model_id:
        raise UnknownModelError(
            f"model id {model!r} must look like 'provider/model', e.g. 'openai/gpt-5-mini' or "
            f"'ollama/llama3.2' (known providers: {known})"
        )
    build = PROVIDERS.get(provider)
    if build is None:
        raise UnknownModelError(
            f"unknown model provider {provider!r} in {model!r}; known providers: {known}. For another "
            f"OpenAI-compatible server use 'openai-compatible/{model_id}' with base_url=..."
        )
    return build(model_id, dict(options))

"""Model ids: ``"provider/model"`` resolved with keys and base URLs from arguments or the environment."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from procflow.errors import ConfigurationError, MissingAPIKeyError, UnknownModelError
from procflow.models import (
    AnthropicModel,
    ModelRequest,
    OpenAICompatibleModel,
    PromptMessage,
    PromptText,
    resolve_model,
)
from procflow.testing import FakeProviderServer, FakeReply

ENV_VARS = ["OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "OLLAMA_BASE_URL"]
REQUEST = ModelRequest(prompt=[PromptMessage(role="user", content=[PromptText(text="Hi")])])


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def shared_server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as server:
        yield server


@pytest.fixture
def server(shared_server: FakeProviderServer) -> FakeProviderServer:
    shared_server.reset()
    return shared_server


def test_openai_id_reads_the_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """``openai/…`` builds an OpenAI model at api.openai.com with ``OPENAI_API_KEY``."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    model = resolve_model("openai/gpt-5-mini")
    assert isinstance(model, OpenAICompatibleModel)
    assert (model.provider, model.model_id, model.base_url) == (
        "openai",
        "gpt-5-mini",
        "https://api.openai.com/v1",
    )


@pytest.mark.parametrize(
    ("model_id", "variable"),
    [("openai/gpt-5-mini", "OPENAI_API_KEY"), ("anthropic/claude-x", "ANTHROPIC_API_KEY")],
)
def test_missing_key_names_the_variable_to_set(model_id: str, variable: str) -> None:
    """Without a key, the error says which environment variable to set (or to pass api_key=)."""
    with pytest.raises(MissingAPIKeyError, match=f"set the {variable} environment variable"):
        resolve_model(model_id)


def test_anthropic_id_with_a_key_argument() -> None:
    """``anthropic/…`` builds an Anthropic model; an ``api_key`` argument needs no environment."""
    model = resolve_model("anthropic/claude-sonnet-4-5", api_key="sk-ant")
    assert isinstance(model, AnthropicModel)
    assert (model.provider, model.model_id) == ("anthropic", "claude-sonnet-4-5")


def test_unknown_provider_lists_the_known_ones() -> None:
    """An unknown provider is an UnknownModelError listing providers and the generic entry."""
    with pytest.raises(
        UnknownModelError, match="known providers: anthropic, ollama, openai, openai-compatible"
    ):
        resolve_model("mistral/large")


def test_id_without_provider_shows_the_expected_shape() -> None:
    """An id with no ``provider/`` prefix says what ids look like."""
    with pytest.raises(UnknownModelError, match="must look like 'provider/model'"):
        resolve_model("gpt-5-mini")


def test_model_objects_are_returned_as_they_are() -> None:
    """A model object passes through unchanged."""
    model = OpenAICompatibleModel("m", base_url="http://localhost:1234/v1")
    assert resolve_model(model) is model


def test_ollama_defaults_to_the_local_server() -> None:
    """``ollama/…`` needs no key and defaults to localhost:11434/v1."""
    model = resolve_model("ollama/llama3.2")
    assert isinstance(model, OpenAICompatibleModel)
    assert (model.provider, model.base_url) == ("ollama", "http://localhost:11434/v1")


async def test_ollama_base_url_from_the_environment_reaches_the_server(
    server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``OLLAMA_BASE_URL`` given as the server root gets ``/v1`` and the model streams from it."""
    monkeypatch.setenv("OLLAMA_BASE_URL", server.url)
    server.add(FakeReply(text="local answer"))
    model = resolve_model("ollama/llama3.2")
    text = "".join([c.text or "" async for c in model.stream(REQUEST) if c.type == "text-delta"])
    assert text == "local answer"
    assert server.requests[0].path == "/v1/chat/completions"
    assert server.requests[0].json["model"] == "llama3.2"
    assert "authorization" not in server.requests[0].headers


async def test_openai_compatible_id_with_a_base_url_argument(server: FakeProviderServer) -> None:
    """``openai-compatible/…`` keeps slashes in the model name and talks to the given base URL."""
    server.add(FakeReply(text="from vLLM"))
    model = resolve_model("openai-compatible/meta-llama/Llama-3.1-8B-Instruct", base_url=server.base_url)
    assert (await model.generate(REQUEST)).text == "from vLLM"
    assert server.requests[0].json["model"] == "meta-llama/Llama-3.1-8B-Instruct"


def test_openai_compatible_without_base_url_names_the_variable() -> None:
    """The generic entry without a base URL says to pass base_url= or set OPENAI_BASE_URL."""
    with pytest.raises(ConfigurationError, match="OPENAI_BASE_URL"):
        resolve_model("openai-compatible/qwen")


async def test_openai_base_url_from_the_environment_needs_no_key(
    server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``OPENAI_BASE_URL`` points ``openai/…`` at another server, where a key is optional."""
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    server.add(FakeReply(text="proxied"))
    assert (await resolve_model("openai/gpt-5-mini").generate(REQUEST)).text == "proxied"


async def test_arguments_win_over_environment_variables(
    server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``api_key=`` and ``base_url=`` arguments override the environment."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://elsewhere.invalid/v1")
    server.add(FakeReply(text="ok"))
    model = resolve_model("openai/gpt-5-mini", api_key="sk-arg", base_url=server.base_url)
    await model.generate(REQUEST)
    assert server.requests[0].headers["authorization"] == "Bearer sk-arg"

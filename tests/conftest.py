"""Shared fixtures: the anyio backend, quiet structlog output and the Hypothesis profile."""

from __future__ import annotations

import logging
import os

import pytest
import structlog
from hypothesis import HealthCheck, settings

# No per-example deadline (a loaded CI machine is not a bug) and, in CI, a fixed seed so a run is
# reproducible; locally every run explores new examples.
settings.register_profile(
    "procflow",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=bool(os.environ.get("CI")),
)
settings.load_profile("procflow")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True, scope="session")
def _quiet_structlog() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))

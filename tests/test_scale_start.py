"""Deciding on worker processes for ``procflow run``, and warming the bundled guard in their fork server."""

from __future__ import annotations

import pytest

from procflow._scale._start import AUTO_WORKERS_MIN_BYTES, cpu_count, workers_for


@pytest.mark.parametrize(
    ("requested", "size", "expected"),
    [
        (3, None, 3),
        (1, 10 * AUTO_WORKERS_MIN_BYTES, 1),
        (None, None, 1),
        (None, AUTO_WORKERS_MIN_BYTES - 1, 1),
        (None, AUTO_WORKERS_MIN_BYTES, "cores"),
    ],
)
def test_workers_for_takes_the_option_else_the_cores_for_a_large_file(
    requested: int | None, size: float | None, expected: int | str
) -> None:
    """--workers wins; without it stdin and small files run in one process, a large file on every core."""
    assert workers_for(requested, size) == (cpu_count() if expected == "cores" else expected)


def test_the_fork_server_warm_up_runs_a_conversation_through_the_bundled_guard() -> None:
    """The warm-up builds the bundled guard and processes a conversation with it, without an error."""
    from procflow._scale._warm import warm_default_pipeline

    assert warm_default_pipeline() is True

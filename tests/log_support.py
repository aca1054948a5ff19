"""Capturing procflow's log events (the standard ``procflow`` logger) in tests."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from procflow import is_tracing, set_tracing


class _Collector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.entries: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        fields = getattr(record, "fields", {})
        self.entries.append(
            {"event": getattr(record, "event", record.msg), "log_level": record.levelname.lower(), **fields}
        )


@contextmanager
def captured_logs(*, tracing: bool = True) -> Iterator[list[dict[str, Any]]]:
    """Collect every procflow event as ``{"event", "log_level", **fields}``, tracing on; restore after."""
    logger = logging.getLogger("procflow")
    collector = _Collector()
    old_level, old_tracing = logger.level, is_tracing()
    logger.addHandler(collector)
    logger.setLevel(logging.DEBUG)
    set_tracing(tracing)
    try:
        yield collector.entries
    finally:
        set_tracing(old_tracing)
        logger.setLevel(old_level)
        logger.removeHandler(collector)

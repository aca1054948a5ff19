"""procflow's structlog logger and the switch for per-call timing events.

The library never configures structlog. Warnings and tripwires are always logged; the per-call
``processor_finished`` / ``step_finished`` events with durations are emitted only when tracing is on
(``procflow.set_tracing(True)`` or ``PROCFLOW_TRACE=1``), so the hot path pays nothing by default.
"""

from __future__ import annotations

import os

import structlog

__all__ = ["is_tracing", "log", "set_tracing"]

log = structlog.get_logger("procflow")

_state = {"tracing": os.environ.get("PROCFLOW_TRACE", "") not in ("", "0", "false")}


def set_tracing(enabled: bool) -> None:
    """Turn the per-processor and per-step timing events on or off."""
    _state["tracing"] = enabled


def is_tracing() -> bool:
    """Whether per-call timing events are emitted."""
    return _state["tracing"]

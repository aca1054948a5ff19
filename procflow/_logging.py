"""procflow's log: static event names on the standard ``logging`` logger ``procflow``, quiet by default.

The library never configures logging and never prints. The ``procflow`` logger has a
:class:`logging.NullHandler`, so until the application configures logging (``logging.basicConfig``,
a handler on ``procflow``, structlog's stdlib integration, …) no event reaches stdout or stderr, not
even warnings.

Levels:

- ``DEBUG``: control flow — tripwires, retries, and (with tracing on) the per-call
  ``processor_finished`` / ``step_finished`` / ``workflow_finished`` timings.
- ``WARNING``: something the application should know about — a failing ``on_violation`` callback,
  tool or stream processor, a failed workflow step, a ``warn``-strategy match.

Each record's message is the event name followed by its fields (``processor_tripwire
processor_id='blocker' retry=False``); fields are ids, counts, rule names and exception types, never
message text. The same values are on the record as ``record.event`` (the name) and
``record.fields`` (a dict) for structured handlers.

Timing events cost nothing unless tracing is on (``procflow.set_tracing(True)`` or
``PROCFLOW_TRACE=1``); every other event costs one ``isEnabledFor`` check when nobody listens.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

__all__ = ["LOGGER", "EventLog", "is_tracing", "log", "set_tracing"]

LOGGER = logging.getLogger("procflow")
"""The logger every procflow event goes to."""
LOGGER.addHandler(logging.NullHandler())


class _Fields:
    """The fields of one event, formatted only when a handler actually emits the record."""

    __slots__ = ("fields",)

    def __init__(self, fields: Mapping[str, object]) -> None:
        self.fields = fields

    def __str__(self) -> str:
        return " ".join(f"{key}={value!r}" for key, value in self.fields.items())


class EventLog:
    """Emits named events with keyword fields on a standard logger.

    Args:
        logger: The logger events go to.
    """

    __slots__ = ("_logger",)

    def __init__(self, logger: logging.Logger) -> None:
        self._logger = logger

    def debug(self, event: str, **fields: object) -> None:
        """Log ``event`` at DEBUG (control flow: tripwires, retries, timings)."""
        if self._logger.isEnabledFor(logging.DEBUG):
            self._emit(logging.DEBUG, event, fields)

    def info(self, event: str, **fields: object) -> None:
        """Log ``event`` at INFO."""
        if self._logger.isEnabledFor(logging.INFO):
            self._emit(logging.INFO, event, fields)

    def warning(self, event: str, **fields: object) -> None:
        """Log ``event`` at WARNING (something the application should look at)."""
        if self._logger.isEnabledFor(logging.WARNING):
            self._emit(logging.WARNING, event, fields)

    def _emit(self, level: int, event: str, fields: dict[str, object]) -> None:
        # The format string is static per event (log aggregators group by it); the fields are the
        # argument, so they are only turned into text when a handler emits the record.
        self._logger.log(
            level,
            f"{event} %s" if fields else event,
            *((_Fields(fields),) if fields else ()),
            extra={"event": event, "fields": fields},
            stacklevel=3,
        )


log = EventLog(LOGGER)
"""procflow's event log (the ``procflow`` logger)."""

_state = {"tracing": os.environ.get("PROCFLOW_TRACE", "") not in ("", "0", "false")}


def set_tracing(enabled: bool) -> None:
    """Turn the per-processor and per-step timing events on or off."""
    _state["tracing"] = enabled


def is_tracing() -> bool:
    """Whether per-call timing events are emitted."""
    return _state["tracing"]

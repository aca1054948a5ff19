"""Collecting what processors report through ``on_violation``: redactions, warnings and tripwires.

The collector chains itself in front of each processor's own ``on_violation`` (which still runs), and
files every report under the conversation being processed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from procflow.processors._base import ProcessorViolation

__all__ = ["ViolationCollector", "redaction_rules", "warning_rules"]


def _get(value: Any, key: str) -> Any:
    if isinstance(value, Mapping):
        return value.get(key)
    return getattr(value, key, None)


def _rules_of(entries: Any) -> list[str]:
    if not isinstance(entries, Iterable) or isinstance(entries, str | bytes | Mapping):
        return []
    return [str(_get(entry, "rule") or "unnamed") for entry in entries]


def redaction_rules(violation: ProcessorViolation) -> list[str]:
    """The rule name of every redaction a report describes (empty for other reports)."""
    detail = violation.detail
    if _get(detail, "strategy") not in (None, "redact"):
        return []
    return _rules_of(_get(detail, "redactions"))


def warning_rules(violation: ProcessorViolation) -> list[str]:
    """The rule name of every match a ``warn`` report describes (empty for other reports)."""
    if _get(violation.detail, "strategy") != "warn":
        return []
    return _rules_of(_get(violation.detail, "matches"))


class ViolationCollector:
    """Receives the ``on_violation`` reports of a set of processors.

    Attributes:
        unattached: Ids of processors whose ``on_violation`` could not be set (their reports are missed).
    """

    __slots__ = ("_current", "unattached")

    def __init__(self) -> None:
        self._current: list[ProcessorViolation] = []
        self.unattached: list[str] = []

    def attach(self, processors: Iterable[Any]) -> None:
        """Chain the collector in front of each processor's ``on_violation`` (once per processor)."""
        for processor in processors:
            existing = getattr(processor, "on_violation", None)
            if getattr(existing, "_procflow_collector", None) is self:
                continue
            try:
                processor.on_violation = self._chain(existing if callable(existing) else None)
            except (AttributeError, TypeError):
                self.unattached.append(str(getattr(processor, "id", repr(processor))))

    def _chain(self, original: Any) -> Any:
        reports = self

        def on_violation(violation: ProcessorViolation) -> Any:
            reports._current.append(violation)
            # Returning the original's result keeps it sync or async exactly as the processor expects.
            return original(violation) if original is not None else None

        on_violation._procflow_collector = self  # type: ignore[attr-defined]
        return on_violation

    def take(self) -> list[ProcessorViolation]:
        """Return the reports received since the last call, and start a new batch."""
        taken, self._current = self._current, []
        return taken


def count_rules(violations: Iterable[ProcessorViolation]) -> tuple[Counter[str], Counter[str]]:
    """Count redactions and warnings per rule over ``violations``."""
    redactions: Counter[str] = Counter()
    warnings: Counter[str] = Counter()
    for violation in violations:
        redactions.update(redaction_rules(violation))
        warnings.update(warning_rules(violation))
    return redactions, warnings

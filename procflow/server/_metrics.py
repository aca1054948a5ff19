"""Prometheus text metrics for the gateway: requests, latency, tripwires, redactions, upstream errors.

A tiny registry of labelled counters and one latency histogram, rendered in the Prometheus text
exposition format (version 0.0.4). Labels carry ids and status codes only, never message text. The
numbers are per instance; a Prometheus server sums them across instances.
"""

from __future__ import annotations

import bisect
import threading
from collections import Counter
from collections.abc import Sequence

__all__ = ["LATENCY_BUCKETS", "GatewayMetrics"]

LATENCY_BUCKETS: tuple[float, ...] = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
"""Upper bounds (seconds) of the request latency histogram's buckets."""

_Labels = tuple[tuple[str, str], ...]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: _Labels, extra: str = "") -> str:
    parts = [f'{name}="{_escape(value)}"' for name, value in labels]
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}" if parts else ""


_HELP: dict[str, str] = {
    "procflow_gateway_requests_total": "Chat completion requests by outcome and HTTP status.",
    "procflow_gateway_tripwires_total": "Requests stopped by a processor, by processor id.",
    "procflow_gateway_redactions_total": "Redactions reported by processors, by processor id and rule.",
    "procflow_gateway_upstream_errors_total": "Errors from the upstream model, by HTTP status.",
}


class GatewayMetrics:
    """The gateway's counters and latency histogram (thread-safe; one per app)."""

    def __init__(self, buckets: Sequence[float] = LATENCY_BUCKETS) -> None:
        self._lock = threading.Lock()
        self._counters: dict[str, Counter[_Labels]] = {name: Counter() for name in _HELP}
        self._buckets = tuple(sorted(buckets))
        self._histogram: dict[_Labels, list[int]] = {}
        self._sums: dict[_Labels, float] = {}

    def count(self, name: str, amount: int = 1, **labels: str) -> None:
        """Add ``amount`` to the counter ``name`` with ``labels``."""
        key = tuple(sorted(labels.items()))
        with self._lock:
            self._counters[name][key] += amount

    def observe(self, seconds: float, **labels: str) -> None:
        """Record one request's latency."""
        key = tuple(sorted(labels.items()))
        index = bisect.bisect_left(self._buckets, seconds)
        with self._lock:
            counts = self._histogram.setdefault(key, [0] * (len(self._buckets) + 1))
            counts[index] += 1
            self._sums[key] = self._sums.get(key, 0.0) + seconds

    def value(self, name: str, **labels: str) -> int:
        """The current value of a counter (for tests and health output)."""
        with self._lock:
            return self._counters[name][tuple(sorted(labels.items()))]

    def render(self) -> str:
        """Every metric in the Prometheus text format."""
        lines: list[str] = []
        with self._lock:
            for name, help_text in _HELP.items():
                lines += [f"# HELP {name} {help_text}", f"# TYPE {name} counter"]
                for labels, amount in sorted(self._counters[name].items()):
                    lines.append(f"{name}{_labels(labels)} {amount}")
            name = "procflow_gateway_request_duration_seconds"
            lines += [f"# HELP {name} Chat completion latency in seconds.", f"# TYPE {name} histogram"]
            for labels, counts in sorted(self._histogram.items()):
                running = 0
                for bound, amount in zip((*self._buckets, float("inf")), counts, strict=True):
                    running += amount
                    le = "+Inf" if bound == float("inf") else repr(bound)
                    bucket = _labels(labels, 'le="' + le + '"')
                    lines.append(f"{name}_bucket{bucket} {running}")
                lines.append(f"{name}_sum{_labels(labels)} {self._sums[labels]:.6f}")
                lines.append(f"{name}_count{_labels(labels)} {running}")
        return "\n".join(lines) + "\n"

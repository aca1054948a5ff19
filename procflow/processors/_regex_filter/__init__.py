"""RegexFilterProcessor, one module per concept (private: import from ``procflow.processors``).

- ``processor``: the processor itself (hooks, strategies, reports);
- ``presets`` and ``phones``: the built-in rule sets and the checks their candidates must pass;
- ``rules``: custom rules, compiled rules, replacement templates and the needle index;
- ``match``: the per-rule search loops and the merging of overlapping matches;
- ``stream`` and ``chunks``: incremental matching over a stream, and the chunks held back meanwhile;
- ``messages`` and ``report``: checking message texts, and what is reported.
"""

from procflow.processors._regex_filter.processor import (
    DEFAULT_TIMEOUT,
    RegexFilterProcessor,
    RegexPhase,
    RegexPreset,
    RegexRedaction,
    RegexRedactionDetail,
    RegexRule,
    RegexStrategy,
    RegexStreamRedactor,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "RegexFilterProcessor",
    "RegexPhase",
    "RegexPreset",
    "RegexRedaction",
    "RegexRedactionDetail",
    "RegexRule",
    "RegexStrategy",
    "RegexStreamRedactor",
]

"""Checking RegexFilterProcessor's options, turning rule mappings into rules, and the warn log line."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from procflow._logging import log
from procflow.errors import ConfigurationError
from procflow.processors._regex_filter.presets import PRESET_NAMES, PresetName
from procflow.processors._regex_filter.report import RegexTextPhase
from procflow.processors._regex_filter.rules import RegexRule

__all__ = ["as_rule", "check_options", "check_preset", "warn_matches"]

_STRATEGIES = ("block", "redact", "warn")
_PHASES = ("input", "output", "all")


def check_options(strategy: str, phase: str, size: object, limit: object) -> tuple[int, int]:
    """Validate the strategy, the phase, ``stream_carryover_size`` and ``stream_hold_limit``."""
    if strategy not in _STRATEGIES:
        raise ConfigurationError(f"strategy must be one of {_STRATEGIES}, got {strategy!r}")
    if phase not in _PHASES:
        raise ConfigurationError(f"phase must be one of {_PHASES}, got {phase!r}")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ConfigurationError(
            f"stream_carryover_size must be a positive integer (characters), got {size!r}"
        )
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < size:
        raise ConfigurationError(
            f"stream_hold_limit must be an integer of at least stream_carryover_size ({size}), got {limit!r}"
        )
    return size, limit


def warn_matches(processor_id: str, phase: RegexTextPhase, rules: list[str]) -> None:
    log.warning(
        "regex_filter_match",
        processor_id=processor_id,
        phase=phase,
        rules=sorted(set(rules)),
        matches=len(rules),
    )


def as_rule(rule: RegexRule | Mapping[str, Any]) -> RegexRule:
    if isinstance(rule, RegexRule):
        return rule
    if isinstance(rule, Mapping):
        unknown = set(rule) - {"name", "pattern", "replacement", "timeout", "validate"}
        if unknown or "name" not in rule or "pattern" not in rule:
            raise ConfigurationError(
                f"a rule mapping needs 'name' and 'pattern' (optional: 'replacement', 'timeout', "
                f"'validate'); got keys {sorted(rule)}"
            )
        return RegexRule(**rule)
    raise ConfigurationError(f"rules must be RegexRule objects or mappings, not {type(rule).__name__}")


def check_preset(name: str) -> PresetName:
    for known in PRESET_NAMES:
        if name == known:
            return known
    raise ConfigurationError(f"unknown preset {name!r}; choose from {list(PRESET_NAMES)}")

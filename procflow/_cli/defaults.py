"""The bundled guard ``procflow run`` (and ``procflow chat``) applies when no pipeline is given.

In order: Unicode normalisation of the input and of the answer (``phase="all"``: full-width and other
look-alike characters cannot hide anything from the checks after it, in user or assistant turns, in a
model's answer streamed or whole), PII and secrets redaction in every text, in tool-call arguments (the
filter's ``tool_arguments`` option) and in system messages (its ``system_messages`` option: a stored
conversation's system and developer turns are data to redact), a block on blatant prompt-injection
phrases in the input (not in system messages: those are the app's instructions, and "never reveal your
system prompt" is a line many of them hold), and a token limit.
"""

from __future__ import annotations

from typing import Any

from procflow.processors import RegexFilterProcessor
from procflow.processors._token_limiter import TokenLimiter
from procflow.processors._unicode_normalizer import UnicodeNormalizer

__all__ = ["INJECTION_RULES", "REDACT_PRESETS", "TOKEN_LIMIT", "default_pipeline"]

TOKEN_LIMIT = 16_000
"""Token budget: of the prompt sent to a model, and of a conversation's assistant text."""

REDACT_PRESETS = ("pii", "secrets")
"""The regex presets redacted: e-mails, phone numbers, SSNs, cards; API keys, tokens, private keys."""

INJECTION_RULES: tuple[tuple[str, str], ...] = (
    (
        "ignore-instructions",
        r"(?i)\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?(?:the\s+|your\s+)?"
        r"(?:previous|prior|above|earlier|system)\s+(?:instructions|prompts?|rules)\b",
    ),
    (
        "reveal-system-prompt",
        r"(?i)\b(?:reveal|print|show|repeat|output)\s+(?:me\s+)?(?:your|the)\s+"
        r"(?:full\s+|entire\s+|hidden\s+)?system\s+prompt\b",
    ),
    ("developer-mode", r"(?i)\b(?:enable|enter|activate)\s+(?:developer|dan|god)\s+mode\b"),
)
"""Phrases that mark an input as a prompt-injection attempt: ``(rule name, pattern)``."""


def default_pipeline() -> list[Any]:
    """Build the bundled guard: a fresh list of processors."""
    presets: list[Any] = list(REDACT_PRESETS)
    return [
        UnicodeNormalizer(phase="all", system_messages=True),
        RegexFilterProcessor(
            presets=presets, strategy="redact", system_messages=True, id="redact-pii-secrets"
        ),
        RegexFilterProcessor(
            rules=[{"name": name, "pattern": pattern} for name, pattern in INJECTION_RULES],
            strategy="block",
            phase="input",
            id="injection-guard",
        ),
        TokenLimiter(TOKEN_LIMIT),
    ]

"""LLM-backed guards: a judge model decides; the guard blocks, warns, filters, redacts or rewrites."""

from procflow.processors._guards._judge import DEFAULT_GUARD_MODEL, Judge, JudgeUsage
from procflow.processors._guards._language import LanguageDetector
from procflow.processors._guards._moderation import DEFAULT_MODERATION_CATEGORIES, ModerationProcessor
from procflow.processors._guards._pii import DEFAULT_PII_TYPES, PIIDetector
from procflow.processors._guards._prompt_injection import DEFAULT_INJECTION_TYPES, PromptInjectionDetector
from procflow.processors._guards._structured_output import StructuredOutputProcessor
from procflow.processors._guards._system_prompt import SystemPromptScrubber

__all__ = [
    "DEFAULT_GUARD_MODEL",
    "DEFAULT_INJECTION_TYPES",
    "DEFAULT_MODERATION_CATEGORIES",
    "DEFAULT_PII_TYPES",
    "Judge",
    "JudgeUsage",
    "LanguageDetector",
    "ModerationProcessor",
    "PIIDetector",
    "PromptInjectionDetector",
    "StructuredOutputProcessor",
    "SystemPromptScrubber",
]

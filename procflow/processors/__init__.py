"""Layer 1: the processor protocol, the typed hook arguments and results, and the built-in processors.

A processor is any object with an ``id`` and one or more hooks (``process_input``,
``process_output_stream``, …); the hook arguments (``ProcessInputArgs``, …) and results are typed here.
Built-ins: normalising (``UnicodeNormalizer``), limiting (``TokenLimiter``), redacting and blocking
(``RegexFilterProcessor``), tool traffic (``ToolCallFilter``, ``ToolSearchProcessor``), provider quirks
(``ProviderHistoryCompat``, ``PrefillErrorHandler``, ``BatchPartsProcessor``), retries
(``StreamErrorRetryProcessor``), the response cache and cost guard, and the LLM-backed guards.
"""

from procflow._messages.request_context import JUDGE_USAGE_KEY, STRUCTURED_OUTPUT_KEY
from procflow._public import publish as _publish
from procflow.processors._args import (
    ProcessAPIErrorArgs,
    ProcessAPIErrorResult,
    ProcessInputArgs,
    ProcessInputResult,
    ProcessInputStepArgs,
    ProcessInputStepResult,
    ProcessLLMRequestArgs,
    ProcessLLMRequestResult,
    ProcessLLMResponseArgs,
    ProcessOutputResultArgs,
    ProcessOutputStepArgs,
    ProcessOutputStreamArgs,
)
from procflow.processors._base import Processor, ProcessorBase, ProcessorViolation
from procflow.processors._batch_parts import BatchPartsProcessor
from procflow.processors._cache_key import ModelIdentity, ResponseCacheKeyInputs
from procflow.processors._compat_rules import CompatRule
from procflow.processors._cost_guard import CostGuardProcessor
from procflow.processors._guards import (
    DEFAULT_GUARD_MODEL,
    JudgeUsage,
    LanguageDetector,
    ModerationProcessor,
    PIIDetector,
    PromptInjectionDetector,
    StructuredOutputProcessor,
    SystemPromptScrubber,
)
from procflow.processors._prefill_error_handler import PrefillErrorHandler
from procflow.processors._prices import DEFAULT_MODEL_PRICES, ModelPrice
from procflow.processors._provider_history_compat import ProviderHistoryCompat
from procflow.processors._regex_filter import (
    RegexFilterProcessor,
    RegexRedactionDetail,
    RegexRule,
)
from procflow.processors._response_cache import (
    RESPONSE_CACHE_CONTEXT_KEY,
    ResponseCache,
    build_response_cache_key,
)
from procflow.processors._stream_error_retry import StreamErrorRetryProcessor
from procflow.processors._token_limiter import TokenLimiter
from procflow.processors._tokens import TiktokenCounter, TokenCounter
from procflow.processors._tool_call_filter import ToolCallFilter
from procflow.processors._tool_search import ToolSearchProcessor
from procflow.processors._unicode_normalizer import UnicodeNormalizer

__all__ = [
    "DEFAULT_GUARD_MODEL",
    "DEFAULT_MODEL_PRICES",
    "JUDGE_USAGE_KEY",
    "RESPONSE_CACHE_CONTEXT_KEY",
    "STRUCTURED_OUTPUT_KEY",
    "BatchPartsProcessor",
    "CompatRule",
    "CostGuardProcessor",
    "JudgeUsage",
    "LanguageDetector",
    "ModelIdentity",
    "ModelPrice",
    "ModerationProcessor",
    "PIIDetector",
    "PrefillErrorHandler",
    "ProcessAPIErrorArgs",
    "ProcessAPIErrorResult",
    "ProcessInputArgs",
    "ProcessInputResult",
    "ProcessInputStepArgs",
    "ProcessInputStepResult",
    "ProcessLLMRequestArgs",
    "ProcessLLMRequestResult",
    "ProcessLLMResponseArgs",
    "ProcessOutputResultArgs",
    "ProcessOutputStepArgs",
    "ProcessOutputStreamArgs",
    "Processor",
    "ProcessorBase",
    "ProcessorViolation",
    "PromptInjectionDetector",
    "ProviderHistoryCompat",
    "RegexFilterProcessor",
    "RegexRedactionDetail",
    "RegexRule",
    "ResponseCache",
    "ResponseCacheKeyInputs",
    "StreamErrorRetryProcessor",
    "StructuredOutputProcessor",
    "SystemPromptScrubber",
    "TiktokenCounter",
    "TokenCounter",
    "TokenLimiter",
    "ToolCallFilter",
    "ToolSearchProcessor",
    "UnicodeNormalizer",
    "build_response_cache_key",
]

_publish(__name__, globals(), __all__)

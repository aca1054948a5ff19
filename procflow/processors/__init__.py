"""Layer 1: the processor protocol, the typed hook arguments and results, and the built-in processors."""

from procflow.processors._token_stream import truncate_to_tokens
from procflow.processors._tokens import TiktokenCounter, TokenCounter
from procflow.processors.args import (
    MessagesResult,
    ProcessAPIErrorArgs,
    ProcessAPIErrorResult,
    ProcessInputArgs,
    ProcessInputResult,
    ProcessInputStepArgs,
    ProcessInputStepResult,
    ProcessLLMRequestArgs,
    ProcessLLMRequestResult,
    ProcessLLMResponseArgs,
    ProcessorArgs,
    ProcessOutputResultArgs,
    ProcessOutputStepArgs,
    ProcessOutputStreamArgs,
    StreamResult,
)
from procflow.processors.base import (
    HOOK_NAMES,
    AbortFn,
    HookName,
    Processor,
    ProcessorBase,
    ProcessorViolation,
    SignalSender,
    ViolationCallback,
    make_abort,
    notify_violation,
)
from procflow.processors.batch_parts import BatchPartsProcessor
from procflow.processors.compat_rules import DEFAULT_COMPAT_RULES, CompatRule, MessageMend, PromptRewrite
from procflow.processors.prefill_error_handler import PrefillErrorHandler
from procflow.processors.provider_history_compat import ProviderHistoryCompat
from procflow.processors.regex_filter import (
    RegexFilterProcessor,
    RegexPhase,
    RegexPreset,
    RegexRedaction,
    RegexRedactionDetail,
    RegexRule,
    RegexStrategy,
    RegexStreamRedactor,
)
from procflow.processors.stream_error_retry import (
    ErrorMatcher,
    StreamErrorRetryProcessor,
    TransientKind,
    is_auth_error,
    transient_kind,
)
from procflow.processors.token_limiter import TOKEN_LIMIT_REACHED_CHUNK, MemoryTrimCallback, TokenLimiter
from procflow.processors.tool_call_filter import ToolCallFilter
from procflow.processors.tool_search import (
    DEFAULT_TOOL_SEARCH_INSTRUCTIONS,
    LOAD_TOOL,
    SEARCH_TOOLS,
    ToolSearchProcessor,
)
from procflow.processors.unicode_normalizer import UnicodeNormalizer

__all__ = [
    "DEFAULT_COMPAT_RULES",
    "DEFAULT_TOOL_SEARCH_INSTRUCTIONS",
    "HOOK_NAMES",
    "LOAD_TOOL",
    "SEARCH_TOOLS",
    "TOKEN_LIMIT_REACHED_CHUNK",
    "AbortFn",
    "BatchPartsProcessor",
    "CompatRule",
    "ErrorMatcher",
    "HookName",
    "MemoryTrimCallback",
    "MessageMend",
    "MessagesResult",
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
    "ProcessorArgs",
    "ProcessorBase",
    "ProcessorViolation",
    "PromptRewrite",
    "ProviderHistoryCompat",
    "RegexFilterProcessor",
    "RegexPhase",
    "RegexPreset",
    "RegexRedaction",
    "RegexRedactionDetail",
    "RegexRule",
    "RegexStrategy",
    "RegexStreamRedactor",
    "SignalSender",
    "StreamErrorRetryProcessor",
    "StreamResult",
    "TiktokenCounter",
    "TokenCounter",
    "TokenLimiter",
    "ToolCallFilter",
    "ToolSearchProcessor",
    "TransientKind",
    "UnicodeNormalizer",
    "ViolationCallback",
    "is_auth_error",
    "make_abort",
    "notify_violation",
    "transient_kind",
    "truncate_to_tokens",
]

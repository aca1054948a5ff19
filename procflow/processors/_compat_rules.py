"""Compatibility rules for :class:`~procflow.processors.ProviderHistoryCompat`, and the built-in ones.

A rule knows one way a provider rejects a conversation another provider produced: tool-call ids in a
shape it does not accept, reasoning it cannot take, empty assistant turns. It can rewrite the outgoing
prompt (transient), recognise the provider's error message, and mend the stored messages after such an
error.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from procflow._messages.message import Message
from procflow._messages.parts import Part, ReasoningPart, TextPart, ToolInvocationPart
from procflow._messages.prompt import (
    Prompt,
    PromptMessage,
    PromptPart,
    PromptReasoning,
    PromptText,
    PromptToolCall,
    PromptToolResult,
)
from procflow.errors import ConfigurationError

__all__ = [
    "DEFAULT_COMPAT_RULES",
    "CompatRule",
    "MessageMend",
    "PromptRewrite",
    "provider_key",
]

PromptRewrite = Callable[[Prompt], Prompt | None]
"""Rewrites a provider prompt; returns the new prompt, or ``None`` when nothing needs to change."""

MessageMend = Callable[[list[Message]], list[Message] | None]
"""Mends the stored messages after a rejection; returns the full new list (authoritative: messages
left out are removed, messages with new ids are appended), or ``None`` when nothing needs to change."""


def provider_key(provider: str) -> str:
    """Normalise a provider name for rule matching: lower case, up to the first ``.``."""
    return provider.strip().lower().split(".", 1)[0]


@dataclass(frozen=True, slots=True, kw_only=True)
class CompatRule:
    """One compatibility rule.

    Args:
        name: Unique rule name (shown in logs and in the retry metadata).
        providers: Providers whose prompts the rule always rewrites (``"anthropic"``; compared with the
            model's provider up to its first ``.``, case-insensitively). ``None``: every provider. An
            empty tuple: only after one of ``error_patterns`` matched an error in this request.
        rewrite_prompt: Rewrites the outgoing prompt; transient, the stored messages do not change.
        error_patterns: Regexes searched (case-insensitively) in a provider error's message, body,
            type and code; a match makes the processor apply this rule and retry once.
        mend_messages: After a matching error, mends the stored messages (persisted).
        description: What the rule fixes, for people.
    """

    name: str
    providers: tuple[str, ...] | None = None
    rewrite_prompt: PromptRewrite | None = None
    error_patterns: tuple[str | re.Pattern[str], ...] = ()
    mend_messages: MessageMend | None = None
    description: str = ""
    _compiled: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _keys: frozenset[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.name:
            raise ConfigurationError("CompatRule needs a name")
        if self.rewrite_prompt is None and self.mend_messages is None:
            raise ConfigurationError(
                f"CompatRule {self.name!r} does nothing: give rewrite_prompt, mend_messages or both"
            )
        if isinstance(self.providers, str):
            raise ConfigurationError(
                f"CompatRule {self.name!r}: providers must be a tuple such as ('anthropic',), not a string"
            )
        compiled = tuple(
            p if isinstance(p, re.Pattern) else re.compile(p, re.IGNORECASE) for p in self.error_patterns
        )
        keys = None if self.providers is None else frozenset(provider_key(p) for p in self.providers)
        object.__setattr__(self, "_compiled", compiled)
        object.__setattr__(self, "_keys", keys)

    def applies_to(self, provider: str | None) -> bool:
        """Whether the rule rewrites every prompt sent to ``provider`` (``None``: provider unknown)."""
        if self._keys is None:
            return True
        return provider is not None and provider_key(provider) in self._keys

    def matches_error(self, text: str) -> bool:
        """Whether one of the error patterns occurs in ``text``."""
        return any(p.search(text) for p in self._compiled)


# -- tool-call ids --------------------------------------------------------------------------------------

_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_ANTHROPIC_ID = re.compile(r"[A-Za-z0-9_-]+\Z")
_ANTHROPIC_BAD = re.compile(r"[^A-Za-z0-9_-]")
_MISTRAL_ID = re.compile(r"[A-Za-z0-9]{9}\Z")
_OPENAI_MAX_ID = 40


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode("utf-8")).digest()


def _anthropic_id(value: str) -> str:
    # Stateless and collision-safe: a rewritten id carries a hash of the original, so the call and its
    # result map alike on every step and in the stored messages.
    if _ANTHROPIC_ID.match(value):
        return value
    return f"{_ANTHROPIC_BAD.sub('_', value)}_{_digest(value).hex()[:8]}"


def _mistral_id(value: str) -> str:
    if _MISTRAL_ID.match(value):
        return value
    number = int.from_bytes(_digest(value)[:8], "big")
    chars = []
    for _ in range(9):
        number, index = divmod(number, 62)
        chars.append(_ALPHABET[index])
    return "".join(chars)


def _openai_id(value: str) -> str:
    if len(value) <= _OPENAI_MAX_ID:
        return value
    return f"{value[:31]}_{_digest(value).hex()[:8]}"


def _prompt_ids(convert: Callable[[str], str]) -> PromptRewrite:
    def rewrite(prompt: Prompt) -> Prompt | None:
        changed = False
        out: Prompt = []
        for message in prompt:
            content: list[PromptPart] = []
            for part in message.content:
                if isinstance(part, PromptToolCall | PromptToolResult):
                    new_id = convert(part.tool_call_id)
                    if new_id != part.tool_call_id:
                        part = part.model_copy(update={"tool_call_id": new_id})
                        changed = True
                content.append(part)
            out.append(message.model_copy(update={"content": content}))
        return out if changed else None

    return rewrite


def _message_ids(convert: Callable[[str], str]) -> MessageMend:
    def mend(messages: list[Message]) -> list[Message] | None:
        changed = False
        out: list[Message] = []
        for message in messages:
            parts: list[Part] = []
            touched = False
            for part in message.content.parts:
                if isinstance(part, ToolInvocationPart) and convert(part.tool_call_id) != part.tool_call_id:
                    part = part.model_copy(update={"tool_call_id": convert(part.tool_call_id)})
                    touched = True
                parts.append(part)
            if touched:
                content = message.content.model_copy(update={"parts": parts})
                message = message.model_copy(update={"content": content})
                changed = True
            out.append(message)
        return out if changed else None

    return mend


# -- content --------------------------------------------------------------------------------------------


def _filter_parts(keep: Callable[[PromptMessage, PromptPart], bool]) -> PromptRewrite:
    """Drop the parts ``keep`` rejects; drop user/assistant messages left with no content."""

    def rewrite(prompt: Prompt) -> Prompt | None:
        changed = False
        out: Prompt = []
        for message in prompt:
            content = [p for p in message.content if keep(message, p)]
            if len(content) == len(message.content):
                out.append(message)
                continue
            changed = True
            if content or message.role in ("system", "tool"):
                out.append(message.model_copy(update={"content": content}))
        return out if changed else None

    return rewrite


def _not_reasoning(message: PromptMessage, part: PromptPart) -> bool:
    return not isinstance(part, PromptReasoning)


def _signed_or_not_reasoning(message: PromptMessage, part: PromptPart) -> bool:
    return not isinstance(part, PromptReasoning) or bool(part.signature)


def _not_blank_assistant_text(message: PromptMessage, part: PromptPart) -> bool:
    return not (message.role == "assistant" and isinstance(part, PromptText) and not part.text.strip())


def _drop_parts(drop: Callable[[Message, Part], bool]) -> MessageMend:
    """Drop the stored parts ``drop`` selects; drop assistant messages left with nothing to say."""

    def mend(messages: list[Message]) -> list[Message] | None:
        changed = False
        out: list[Message] = []
        for message in messages:
            parts = [p for p in message.content.parts if not drop(message, p)]
            if len(parts) == len(message.content.parts):
                out.append(message)
                continue
            changed = True
            if parts or message.role != "assistant" or (message.content.content or "").strip():
                content = message.content.model_copy(update={"parts": parts})
                out.append(message.model_copy(update={"content": content}))
        return out if changed else None

    return mend


def _stored_reasoning(message: Message, part: Part) -> bool:
    return isinstance(part, ReasoningPart)


def _stored_unsigned_reasoning(message: Message, part: Part) -> bool:
    return isinstance(part, ReasoningPart) and not part.signature


def _stored_blank_assistant_text(message: Message, part: Part) -> bool:
    return message.role == "assistant" and isinstance(part, TextPart) and not part.text.strip()


DEFAULT_COMPAT_RULES: tuple[CompatRule, ...] = (
    CompatRule(
        name="anthropic-tool-call-id",
        description="Anthropic accepts tool-call ids matching ^[a-zA-Z0-9_-]+$ only.",
        providers=("anthropic",),
        rewrite_prompt=_prompt_ids(_anthropic_id),
        error_patterns=(r"tool_use(_id|\.id)\b.*should match pattern",),
        mend_messages=_message_ids(_anthropic_id),
    ),
    CompatRule(
        name="mistral-tool-call-id",
        description="Mistral accepts tool-call ids of exactly 9 letters and digits.",
        providers=("mistral",),
        rewrite_prompt=_prompt_ids(_mistral_id),
        error_patterns=(r"tool call id .* must be a-z, A-Z, 0-9, with a length of 9",),
        mend_messages=_message_ids(_mistral_id),
    ),
    CompatRule(
        name="openai-tool-call-id-length",
        description="OpenAI accepts tool-call ids of at most 40 characters.",
        providers=("openai", "azure"),
        rewrite_prompt=_prompt_ids(_openai_id),
        error_patterns=(r"(tool_calls\[\d+\]\.id|tool_call_id)'?:? string too long",),
        mend_messages=_message_ids(_openai_id),
    ),
    CompatRule(
        name="anthropic-unsigned-reasoning",
        description="Anthropic rejects thinking blocks without a signature (e.g. from other providers).",
        providers=("anthropic",),
        rewrite_prompt=_filter_parts(_signed_or_not_reasoning),
        error_patterns=(r"thinking\.signature\b.*field required",),
        mend_messages=_drop_parts(_stored_unsigned_reasoning),
    ),
    CompatRule(
        name="strip-reasoning",
        description="Some providers reject earlier reasoning in the history (DeepSeek's reasoning_content).",
        providers=("deepseek",),
        rewrite_prompt=_filter_parts(_not_reasoning),
        error_patterns=(
            r"remove the reasoning_content",
            r"\b(reasoning|thinking)\b[^.]*\b(not (supported|allowed|permitted)|unsupported)\b",
        ),
        mend_messages=_drop_parts(_stored_reasoning),
    ),
    CompatRule(
        name="drop-empty-assistant-text",
        description="Blank assistant text blocks and empty assistant turns are rejected by most providers.",
        providers=None,
        rewrite_prompt=_filter_parts(_not_blank_assistant_text),
        error_patterns=(
            r"text content blocks must (be non-empty|contain non-whitespace text)",
            r"must have non-empty content",
        ),
        mend_messages=_drop_parts(_stored_blank_assistant_text),
    ),
)
"""The built-in rules, in the order they apply."""

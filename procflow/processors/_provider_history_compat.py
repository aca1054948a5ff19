"""ProviderHistoryCompat: make a conversation acceptable to the provider it is sent to.

Histories move between providers (a thread started on one model continues on another), and each
provider rejects some of what others produce. Before each call the processor rewrites the outgoing
prompt with the rules that apply to the model's provider (transient: stored messages keep their
shape). As an error processor it recognises a provider's rejection, turns the matching rule on for the
rest of the request, mends the stored messages when the rule knows how, and asks for one retry.
"""

from __future__ import annotations

from collections.abc import Sequence

from procflow._logging import log
from procflow._messages.message_list import MessageList
from procflow._messages.prompt import Prompt
from procflow.errors import APICallError, ConfigurationError
from procflow.processors._args import (
    ProcessAPIErrorArgs,
    ProcessAPIErrorResult,
    ProcessLLMRequestArgs,
    ProcessLLMRequestResult,
)
from procflow.processors._base import ProcessorBase
from procflow.processors._compat_rules import DEFAULT_COMPAT_RULES, CompatRule, MessageMend

__all__ = ["ProviderHistoryCompat", "error_text"]


def error_text(error: BaseException) -> str:
    """The text compatibility rules search: message, body, error type and code of a provider error."""
    if isinstance(error, APICallError):
        fields = (error.message, error.response_body, error.error_type, error.error_code)
        return "\n".join(f for f in fields if f)
    return str(error)


class ProviderHistoryCompat(ProcessorBase):
    """Rewrite prompts for provider quirks and recover from known rejections (id ``provider-history-compat``).

    Add it to ``input_processors`` (its ``process_llm_request`` rewrites each outgoing prompt) and, to
    recover from rejections, to ``error_processors`` too (its ``process_api_error``). Per-request
    bookkeeping lives in ``args.state``, so one instance serves any number of requests.

    Args:
        rules: The rules to use (default :data:`~procflow.processors.DEFAULT_COMPAT_RULES`).
        additional_rules: Your own rules, applied after ``rules``.
        provider: Treat every model as this provider, instead of reading ``model.provider``.
        retry_on_error: Recognise rejections and ask for a retry (``False``: only rewrite prompts).
        id: Processor id, to have two in one pipeline.

    Each rule triggers at most one retry per request; a rejection no rule recognises, or one a rule
    already retried, is left to the next error processor.
    """

    name = "Provider history compatibility"
    description = "Rewrites the outgoing prompt for provider quirks and retries known provider rejections."

    def __init__(
        self,
        *,
        rules: Sequence[CompatRule] | None = None,
        additional_rules: Sequence[CompatRule] = (),
        provider: str | None = None,
        retry_on_error: bool = True,
        id: str = "provider-history-compat",
    ) -> None:
        chosen = [*(DEFAULT_COMPAT_RULES if rules is None else rules), *additional_rules]
        seen: set[str] = set()
        for rule in chosen:
            if not isinstance(rule, CompatRule):
                raise ConfigurationError(
                    f"ProviderHistoryCompat: expected CompatRule objects, got {type(rule).__name__}"
                )
            if rule.name in seen:
                raise ConfigurationError(
                    f"ProviderHistoryCompat: two rules are named {rule.name!r}; rule names must be unique"
                )
            seen.add(rule.name)
        self.id = id
        self.rules: tuple[CompatRule, ...] = tuple(chosen)
        self.provider = provider
        self.retry_on_error = retry_on_error

    def rewrite(
        self, prompt: Prompt, *, provider: str | None, active: frozenset[str] = frozenset()
    ) -> Prompt:
        """Apply every rule for ``provider`` (plus the rules named in ``active``) to ``prompt``."""
        for rule in self.rules:
            if rule.rewrite_prompt is None:
                continue
            if rule.applies_to(provider) or rule.name in active:
                rewritten = rule.rewrite_prompt(prompt)
                if rewritten is not None:
                    prompt = rewritten
        return prompt

    def process_llm_request(self, args: ProcessLLMRequestArgs) -> ProcessLLMRequestResult | None:
        """Rewrite this call's prompt with the rules for the model's provider and the activated rules."""
        args.state["rewriting"] = True
        provider = self.provider or (args.model.provider if args.model is not None else None)
        if provider is not None:
            args.state["provider"] = provider
        active = frozenset(args.state.get("active", ()))
        prompt = self.rewrite(args.prompt, provider=provider, active=active)
        return None if prompt is args.prompt else ProcessLLMRequestResult(prompt=prompt)

    def process_api_error(self, args: ProcessAPIErrorArgs) -> ProcessAPIErrorResult | None:
        """On a rejection a rule recognises: activate the rule, mend the messages, retry once."""
        if not self.retry_on_error:
            return None
        text = error_text(args.error)
        retried: list[str] = args.state.setdefault("retried", [])
        matched = [r for r in self.rules if r.name not in retried and r.matches_error(text)]
        if not matched:
            return None
        active: list[str] = args.state.setdefault("active", [])
        rewriting = bool(args.state.get("rewriting"))
        mended: list[str] = []
        for rule in matched:
            retried.append(rule.name)
            if rule.name not in active:
                active.append(rule.name)
            # Prefer the transient prompt rewrite, which leaves the stored history as it was; mend the
            # stored messages only when this processor does not see the outgoing prompts.
            mend = rule.mend_messages
            needed = rule.rewrite_prompt is None or not rewriting
            if mend is not None and needed and _mend(args.message_list, mend):
                mended.append(rule.name)
        names = [r.name for r in matched]
        status = args.error.status_code if isinstance(args.error, APICallError) else None
        log.debug("provider_history_compat_retry", processor_id=self.id, rules=names, status=status)
        return ProcessAPIErrorResult(retry=True, metadata={"rules": names, "mended": mended})


def _mend(message_list: MessageList, mend: MessageMend) -> bool:
    """Apply ``mend`` to the stored messages: drop the ones it left out, replace changed, append new."""
    current = message_list.all
    fixed = mend(current)
    if fixed is None:
        return False
    keep = {m.id for m in fixed}
    message_list.remove_by_ids([m.id for m in current if m.id not in keep])
    for message in fixed:
        if not message_list.replace(message):
            message_list.add(message, source="input")
    return True

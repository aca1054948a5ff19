"""Recovering from providers that refuse a conversation ending with an assistant message (prefill)."""

from __future__ import annotations

import re

from procflow.errors import APICallError
from procflow.processors._args import ProcessAPIErrorArgs, ProcessAPIErrorResult
from procflow.processors._base import ProcessorBase

__all__ = ["PrefillErrorHandler"]

_PREFILL = re.compile(
    r"assistant message prefill|prefill(ing)? (is )?not supported|must end with a user message", re.IGNORECASE
)


class PrefillErrorHandler(ProcessorBase):
    """Retries once with a ``continue`` reminder when a provider rejects an assistant-message prefill.

    Some models refuse a prompt whose last message is the assistant's ("This model does not support
    assistant message prefill. The conversation must end with a user message."). This error processor
    recognises that rejection, adds a transient ``<system-reminder>continue</system-reminder>`` signal —
    which the prompt places last, as a user message — and asks the agent to re-issue the call, once per
    request. The agent adds it to every request's error processors automatically; list it yourself only
    to give it another ``id``.

    Args:
        id: The processor id (default ``"prefill-error-handler"``).
    """

    def __init__(self, *, id: str = "prefill-error-handler") -> None:
        self.id = id

    async def process_api_error(self, args: ProcessAPIErrorArgs) -> ProcessAPIErrorResult | None:
        """Ask for one retry, with a ``continue`` signal, when the error is a prefill rejection."""
        if args.state.get("retried") or not is_prefill_error(args.error):
            return None
        args.state["retried"] = True
        await args.send_signal("continue", transient=True)
        return ProcessAPIErrorResult(retry=True)


def is_prefill_error(error: BaseException) -> bool:
    """Whether ``error`` is a provider's refusal of an assistant-message prefill."""
    texts = [str(error)]
    if isinstance(error, APICallError):
        if error.status_code is not None and not 400 <= error.status_code < 500:
            return False
        texts.append(error.response_body or "")
    return any(_PREFILL.search(text) for text in texts)

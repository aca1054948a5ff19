"""``SystemPromptScrubber``: keeps the agent's own system prompt out of what it says.

Leaks are found without a model: any run of ``min_overlap_words`` consecutive words (CJK characters
count as words) of a system message that appears in the output — case, spacing, Unicode compatibility
forms (full-width letters) and invisible format characters inside words aside — is a leak, as is any
match of ``custom_patterns``. With a ``model``, a judge also names paraphrased leaks. In streams, text
is held a sentence at a time and checked before it is released; a sentence that ends inside a run of
prompt words is held with the next ones until the run ends (see :class:`LeakHold`), so a leak told
one short sentence at a time is still one leak, whatever the chunking.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from procflow.processors._guards._base import GuardBase, check_choice
from procflow.processors._guards._judge import Judge, JudgeCache, OnError
from procflow.processors._guards._prompt_words import LeakHold, PromptWords
from procflow.processors._guards._windows import SentenceHolding

if TYPE_CHECKING:
    from procflow.models import LanguageModel

__all__ = ["SystemPromptScrubber"]

ScrubStrategy = Literal["block", "warn", "filter", "redact"]
ScrubMethod = Literal["mask", "placeholder", "remove"]

LEAK_PROMPT = """You check an AI assistant's answer for leaks of its confidential system prompt, which \
is given below between <system_prompt> tags. The user message is the answer to check. List every \
passage of the answer that reveals the system prompt's content, verbatim or paraphrased; copy each \
passage exactly as it appears in the answer.

<system_prompt>
{system_prompt}
</system_prompt>

Answer with only a JSON object: {{"leaks": ["<exact passage>", ...]}} — an empty list when there is none."""
"""The judge's prompt (only with ``model``)."""


class _Leaks(BaseModel):
    leaks: list[str] = Field(default_factory=list)


class SystemPromptScrubber(SentenceHolding, GuardBase):
    """Finds the agent's system prompt (or parts of it) in the output; redacts, blocks or reports it.

    Args:
        strategy: ``"redact"`` (default) replaces leaked passages; ``"block"`` stops with a tripwire;
            ``"warn"`` reports and passes; ``"filter"`` withholds a leaking sentence.
        redaction_method: ``"placeholder"`` (``placeholder_text``; default), ``"mask"`` (``*``), ``"remove"``.
        placeholder_text: The replacement for ``placeholder`` (default ``[SYSTEM_PROMPT]``).
        custom_patterns: Regular expressions that also count as leaks (e.g. ``r"my instructions are"``).
        min_overlap_words: Consecutive system-prompt words that make a leak (default 8).
        model: An optional judge that also finds paraphrased leaks (see :class:`GuardBase`).
        on_error: When the judge fails (an error, a time-out, a refusal or garbage twice): ``"allow"``
            (default) passes the content (fail open), ``"block"`` stops the request with a tripwire.
        timeout: Seconds a judge call may take.
        cache: A ``ServerCache`` for judge answers (keyed by content hash and configuration).
        id: The processor id.
    """

    def __init__(
        self,
        *,
        strategy: ScrubStrategy = "redact",
        redaction_method: ScrubMethod = "placeholder",
        placeholder_text: str = "[SYSTEM_PROMPT]",
        custom_patterns: Sequence[str] = (),
        min_overlap_words: int = 8,
        model: LanguageModel | str | None = None,
        on_error: OnError = "allow",
        timeout: float = 30.0,
        cache: JudgeCache | None = None,
        id: str = "system-prompt-scrubber",
    ) -> None:
        super().__init__(model=model, on_error=on_error, timeout=timeout, cache=cache, id=id)
        self.strategy = check_choice("strategy", strategy, ("block", "warn", "filter", "redact"))
        self.redaction_method = check_choice(
            "redaction_method", redaction_method, ("mask", "placeholder", "remove")
        )
        self.placeholder_text = placeholder_text
        self.patterns = [re.compile(p) for p in custom_patterns]
        self.min_overlap_words = max(2, int(min_overlap_words))
        self.use_model = model is not None
        self.stream_window, self.stream_hold_limit = 4000, 65_536
        self._words: PromptWords | None = None

    def _secrets(self, args: Any) -> list[str]:
        return [m.text for m in args.message_list.system_messages if m.text]

    def _prompt_words(self, secrets: list[str]) -> PromptWords:
        # The automaton of the last system prompt seen: one agent's requests share it.
        words = self._words
        if words is None or words.secrets != tuple(secrets):
            words = self._words = PromptWords(secrets)
        return words

    def _hold_back(self, args: Any) -> LeakHold:
        return LeakHold(
            lambda: self._prompt_words(self._secrets(args)),
            min_words=self.min_overlap_words,
            limit=self.stream_hold_limit,
        )

    async def _spans(self, text: str, args: Any) -> list[tuple[int, int]]:
        secrets = self._secrets(args)
        spans = self._prompt_words(secrets).spans(text, self.min_overlap_words)
        spans += [
            (m.start(), m.end()) for p in self.patterns for m in p.finditer(text) if m.end() > m.start()
        ]
        if self.use_model and secrets:
            judge = Judge(
                processor_id=self.id,
                schema=_Leaks,
                instructions=LEAK_PROMPT.format(system_prompt="\n\n".join(secrets)),
                model=self.model,
                timeout=self.timeout,
                cache=self.cache,
            )
            verdict = await judge.verdict(text, args.request_context)
            if verdict is None:
                self.judge_failed(args, judge.last_failure)
            else:
                for leak in verdict.leaks:
                    start = text.find(leak) if leak else -1
                    while start != -1:
                        spans.append((start, start + len(leak)))
                        start = text.find(leak, start + 1)
        return sorted(spans)

    def _replace(self, value: str) -> str:
        if self.redaction_method == "mask":
            return "*" * len(value)
        return "" if self.redaction_method == "remove" else self.placeholder_text

    async def _apply(self, text: str, args: Any) -> str | None:
        spans = await self._spans(text, args)
        if not spans:
            return text
        detail = {"strategy": self.strategy, "leaks": len(spans), "spans": spans}
        reason = "The response reveals the system prompt"
        if self.strategy == "block":
            self.abort(args, reason, detail)
        await self.report(reason, detail)
        if self.strategy == "warn":
            return text
        if self.strategy == "filter":
            return None
        out, cursor = [], 0
        for start, end in spans:
            if start < cursor:
                start = cursor
            if end <= start:
                continue
            out += [text[cursor:start], self._replace(text[start:end])]
            cursor = end
        out.append(text[cursor:])
        return "".join(out)

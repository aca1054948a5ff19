"""TokenLimiter: keep the prompt within a token budget, and cap the tokens of the response.

Input side — why ``process_llm_request``: the limit is about what the provider receives, so the limiter
works on the final provider prompt, right before each model call. There it sees everything that is sent
and nothing that is not: system messages (instructions and memory's tagged ones), recalled history,
signals rendered as ``<system-reminder>`` messages, transient signals, the tool traffic of earlier steps of
this run, and the rewrites of processors placed before it (a :class:`ToolCallFilter` first means the
limiter budgets the filtered prompt). The tool definitions offered to the model are counted too. Running
before *every* call, it also catches a run that grows through tool results. And because prompt rewrites
are transient, trimming never deletes anything from the stored conversation: memory still saves the whole
exchange, and the next request is trimmed afresh. (``process_input`` would run once, before tool traffic
exists; ``process_input_step`` edits the live message list, so trimmed messages would be lost for good.)

Place TokenLimiter after the other processors that rewrite the request, so it measures what is sent.
"""

from __future__ import annotations

from typing import Any, Literal

import anyio.to_thread

from procflow.errors import ConfigurationError
from procflow.messages.chunk import Chunk
from procflow.messages.message import Message
from procflow.messages.message_list import MessageList
from procflow.messages.parts import Part, TextPart
from procflow.messages.prompt import Prompt
from procflow.processors._prompt_budget import PromptCosts, TrimMode, plan_trim
from procflow.processors._token_stream import PrefixBudget, truncate_to_tokens
from procflow.processors._tokens import TiktokenCounter, TokenCounter, count_checked
from procflow.processors._tool_traffic import current_run_tool_steps
from procflow.processors.args import (
    ProcessLLMRequestArgs,
    ProcessLLMRequestResult,
    ProcessOutputResultArgs,
    ProcessOutputStreamArgs,
    StreamResult,
)
from procflow.processors.base import ProcessorBase

__all__ = ["TOKEN_LIMIT_REACHED_CHUNK", "TokenLimiter"]

_THREAD_THRESHOLD = 256
"""A request's first prompt with more messages than this is counted in a worker thread."""

TOKEN_LIMIT_REACHED_CHUNK = "data-token-limit-reached"
"""The type of the transient chunk a truncating TokenLimiter emits once when it starts dropping text."""


def _non_negative_int(name: str, value: object, *, minimum: int = 0) -> int:
    if type(value) is not int or value < minimum:
        raise ConfigurationError(f"TokenLimiter {name} must be an int >= {minimum}, got {value!r}")
    return value


class TokenLimiter(ProcessorBase):
    """Keeps the prompt within ``limit`` tokens (input side) or caps the response (output side).

    Counts are exact integers from a :class:`TokenCounter` — by default tiktoken's ``o200k_base``,
    loaded offline.

    As an **input processor** it trims the provider prompt before every model call (see the module
    docstring for why it works there). Always kept: the system messages; the current turn — the newest
    user message of the request's input and everything after it, so the current run's tool calls with
    their results — and the newest message. Older messages are taken newest first while they fit. A
    tool call is never separated from its result. When the system messages (with the tool definitions)
    alone exceed the limit, or the messages that must be kept do not fit beside them, it raises a
    non-retryable tripwire saying so.

    As an **output processor** it caps the response text. ``count_mode="cumulative"`` (default) counts
    the whole response exactly: each text run (the text between two other chunks, which becomes one
    text part) is counted as one text, never as a sum of per-chunk counts, and the runs share the
    budget. The stream keeps the longest prefix of the response that fits, cut between grapheme
    clusters — the same text whatever the chunking, and the same text ``process_output_result`` keeps
    from the whole response. ``strategy="truncate"`` then drops the rest and emits one transient
    ``data-token-limit-reached`` chunk; ``strategy="abort"`` raises a tripwire when the response does
    not fit. To decide exactly, text near the limit is held back briefly: the last grapheme cluster of
    a chunk (it may still grow), and, once over the limit, the last word or two (BPE may still merge
    them into fewer tokens); it is released at the latest when the text run ends. Far from the limit
    chunks pass unchanged. ``count_mode="part"`` counts each chunk (and each final text part) alone.

    Args:
        limit: The token budget (a positive int).
        counter: Counts tokens; default: ``o200k_base`` (see :class:`TiktokenCounter`).
        strategy: Output side: ``"truncate"`` drops text past the limit, ``"abort"`` raises a tripwire.
        count_mode: Output side: ``"cumulative"`` (whole response) or ``"part"`` (each chunk or part).
        trim_mode: Input side: ``"best-fit"`` keeps any older message that still fits after a larger one
            was dropped; ``"contiguous"`` stops at the first message that does not fit, so the kept
            history has no gaps.
        count_tools: Input side: count the tool definitions offered to the model.
        message_overhead: Tokens of provider framing per message (role markers), added to its content.
        prompt_overhead: Tokens of framing per prompt (the reply primer).
        file_tokens: Tokens counted for each file or image part.
        id: The processor id (default ``"token-limiter"``).
    """

    name = "TokenLimiter"

    def __init__(
        self,
        limit: int,
        *,
        counter: TokenCounter | None = None,
        strategy: Literal["truncate", "abort"] = "truncate",
        count_mode: Literal["cumulative", "part"] = "cumulative",
        trim_mode: TrimMode = "best-fit",
        count_tools: bool = True,
        message_overhead: int = 3,
        prompt_overhead: int = 3,
        file_tokens: int = 85,
        id: str = "token-limiter",
    ) -> None:
        self.limit = _non_negative_int("limit", limit, minimum=1)
        if strategy not in ("truncate", "abort"):
            raise ConfigurationError(f"TokenLimiter strategy must be 'truncate' or 'abort', got {strategy!r}")
        if count_mode not in ("cumulative", "part"):
            raise ConfigurationError(
                f"TokenLimiter count_mode must be 'cumulative' or 'part', got {count_mode!r}"
            )
        if trim_mode not in ("best-fit", "contiguous"):
            raise ConfigurationError(
                f"TokenLimiter trim_mode must be 'best-fit' or 'contiguous', got {trim_mode!r}"
            )
        if counter is not None and not callable(getattr(counter, "count", None)):
            raise ConfigurationError(
                f"TokenLimiter counter {counter!r} has no count(text) method; pass an object with "
                "count(text) -> int, such as TiktokenCounter()"
            )
        self.id = id
        self.counter: TokenCounter = counter if counter is not None else TiktokenCounter()
        self.strategy = strategy
        self.count_mode = count_mode
        self.trim_mode: TrimMode = trim_mode
        self.count_tools = count_tools
        self.message_overhead = _non_negative_int("message_overhead", message_overhead)
        self.prompt_overhead = _non_negative_int("prompt_overhead", prompt_overhead)
        self.file_tokens = _non_negative_int("file_tokens", file_tokens)

    def __repr__(self) -> str:
        return f"TokenLimiter({self.limit}, id={self.id!r})"

    def count(self, text: str) -> int:
        """Return the tokens of ``text`` with this limiter's counter."""
        return count_checked(self.counter, text)

    # -- input side ----------------------------------------------------------------------------------

    def _costs(self, state: dict[str, Any]) -> PromptCosts:
        costs = state.get("costs")
        if not isinstance(costs, PromptCosts):
            costs = state["costs"] = PromptCosts(self.counter, self.message_overhead, self.file_tokens)
        return costs

    async def _ready(self) -> None:
        """Load the default encoding in a worker thread, so its one-off load never blocks the loop."""
        counter = self.counter
        if isinstance(counter, TiktokenCounter) and not counter.is_loaded:
            await anyio.to_thread.run_sync(lambda: counter.encoding)

    async def process_llm_request(self, args: ProcessLLMRequestArgs) -> ProcessLLMRequestResult | None:
        """Trim this call's prompt to the limit; abort when even the required messages do not fit.

        The first call of a request with a long prompt (over 256 messages) counts in a worker thread;
        later calls hit the per-request cache and run inline.
        """
        await self._ready()
        if "costs" not in args.state and len(args.prompt) > _THREAD_THRESHOLD:
            return await anyio.to_thread.run_sync(self._trim, args)
        return self._trim(args)

    def _trim(self, args: ProcessLLMRequestArgs) -> ProcessLLMRequestResult | None:
        costs = self._costs(args.state)
        fixed = self.prompt_overhead + (costs.tools(args.tools) if self.count_tools else 0)
        protected = {i for step in current_run_tool_steps(args.message_list, args.steps) for i in step}
        plan = plan_trim(
            args.prompt,
            costs,
            limit=self.limit,
            fixed=fixed,
            protected_ids=protected,
            turn_start=_turn_start(args.prompt, args.message_list),
            mode=self.trim_mode,
        )
        args.state["last_trim"] = {
            "tokens_before": plan.tokens_before,
            "tokens_after": plan.tokens_after,
            "dropped_messages": plan.dropped,
        }
        metadata = {"limit": self.limit, "tokens": plan.tokens_before, "fixed_tokens": plan.fixed_tokens}
        if plan.problem == "system":
            args.abort(
                f"The system messages and tool definitions need {plan.fixed_tokens} tokens, over the "
                f"TokenLimiter limit of {self.limit}, so no conversation can be sent. Raise the limit, "
                "shorten the instructions or offer fewer tools.",
                metadata={**metadata, "cause": "system-over-limit"},
            )
        if plan.problem == "required":
            args.abort(
                f"Even with all older history dropped, the newest message and this run's tool calls need "
                f"{plan.required_tokens} tokens with the system messages, over the TokenLimiter limit of "
                f"{self.limit}. Raise the limit or send a shorter message.",
                metadata={**metadata, "cause": "nothing-fits", "required_tokens": plan.required_tokens},
            )
        if not plan.dropped:
            return None
        return ProcessLLMRequestResult(
            prompt=[m for m, kept in zip(args.prompt, plan.keep, strict=True) if kept]
        )

    # -- output side ---------------------------------------------------------------------------------

    def _reached(self, args: ProcessOutputStreamArgs, head: Chunk | None, tokens: int) -> list[Chunk]:
        out = [head] if head is not None else []
        if not args.state.get("limit_reached"):
            args.state["limit_reached"] = True
            data = {
                "limit": self.limit,
                "tokens": tokens,
                "count_mode": self.count_mode,
                "processor_id": args.processor_id,
            }
            out.append(Chunk.data(TOKEN_LIMIT_REACHED_CHUNK, data, transient=True))
        return out

    async def process_output_stream(self, args: ProcessOutputStreamArgs) -> StreamResult:
        """Count streamed text; past the limit drop it (``truncate``) or raise a tripwire (``abort``)."""
        part = args.part
        if self.count_mode == "part":
            return await self._per_chunk(args) if part.type == "text-delta" else part
        if part.type != "text-delta":
            ended = self._end_text(args)
            return [*ended, part] if ended else part
        if args.state.get("limit_reached"):
            return None
        await self._ready()
        text = part.text or ""
        budget: PrefixBudget | None = args.state.get("budget")
        if budget is None:
            room = self.limit - args.state.get("output_tokens", 0)
            budget = args.state["budget"] = PrefixBudget(self.counter, room)
        released = budget.push(text)
        args.state["payload"] = part.payload
        head: Chunk | None = None
        if released == text:
            head = part
        elif released:
            head = Chunk(part.type, {**part.payload, "text": released}, part.transient)
        if budget.cut:
            return self._over(args, budget, head)
        return head

    async def flush_output_stream(self, args: ProcessOutputStreamArgs) -> list[Chunk] | None:
        """End of stream: release the text held back while its count was undecided."""
        return self._end_text(args) or None

    def _end_text(self, args: ProcessOutputStreamArgs) -> list[Chunk]:
        """A text run ended (a non-text chunk, or the stream's end): settle its held-back text."""
        budget: PrefixBudget | None = args.state.pop("budget", None)
        if budget is None:
            return []
        released = budget.finish()
        payload = args.state.get("payload") or {}
        head = Chunk("text-delta", {**payload, "text": released}) if released else None
        if budget.cut:
            return self._over(args, budget, head)
        args.state["output_tokens"] = args.state.get("output_tokens", 0) + budget.tokens
        return [head] if head is not None else []

    def _over(self, args: ProcessOutputStreamArgs, budget: PrefixBudget, head: Chunk | None) -> list[Chunk]:
        args.state.pop("budget", None)
        tokens = args.state.get("output_tokens", 0) + budget.tokens
        if self.strategy == "abort":
            args.abort(
                f"The response reached {tokens} tokens, over the TokenLimiter limit of {self.limit}.",
                metadata={"limit": self.limit, "tokens": tokens, "count_mode": self.count_mode},
            )
        return self._reached(args, head, tokens)

    async def _per_chunk(self, args: ProcessOutputStreamArgs) -> StreamResult:
        """``count_mode="part"``: each chunk on its own."""
        part = args.part
        await self._ready()
        text = part.text or ""
        tokens = self.count(text)
        if tokens <= self.limit:
            return part
        if self.strategy == "abort":
            args.abort(
                f"The response reached {tokens} tokens, over the TokenLimiter limit of {self.limit}.",
                metadata={"limit": self.limit, "tokens": tokens, "count_mode": self.count_mode},
            )
        head_text = truncate_to_tokens(self.counter, text, self.limit)
        head = Chunk(part.type, {**part.payload, "text": head_text}, part.transient) if head_text else None
        return self._reached(args, head, tokens)

    async def process_output_result(self, args: ProcessOutputResultArgs) -> list[Message] | None:
        """Cut the response text to the limit between characters (``truncate``) or abort (``abort``)."""
        await self._ready()
        budget = [self.limit]
        changed = False
        out: list[Message] = []
        for message in args.messages:
            limited = self._limit_message(message, budget)
            changed = changed or limited is not message
            out.append(limited)
        if not changed:
            return None
        if self.strategy == "abort":
            total = sum(self.count(t) for m in args.messages for t in _texts(m))
            args.abort(
                f"The response has {total} tokens, over the TokenLimiter limit of {self.limit}.",
                metadata={"limit": self.limit, "tokens": total, "count_mode": self.count_mode},
            )
        return out

    def _cut(self, text: str, budget: list[int]) -> str:
        room = budget[0] if self.count_mode == "cumulative" else self.limit
        head = truncate_to_tokens(self.counter, text, room)
        if self.count_mode == "cumulative":
            # Once a text is cut the response ends there: later text is dropped, as in the stream.
            budget[0] = room - self.count(head) if head == text else 0
        return head

    def _limit_message(self, message: Message, budget: list[int]) -> Message:
        if message.role != "assistant":
            return message
        parts: list[Part] = []
        changed = False
        start = budget[0]
        for part in message.content.parts:
            if isinstance(part, TextPart):
                head = self._cut(part.text, budget)
                if head != part.text:
                    changed = True
                    if not head:
                        continue
                    part = part.model_copy(update={"text": head})
            parts.append(part)
        fallback = message.content.content
        if fallback:
            has_text = any(isinstance(p, TextPart) for p in message.content.parts)
            head = self._cut(fallback, [start] if has_text else budget)
            if head != fallback:
                changed, fallback = True, head
        if not changed:
            return message
        content = message.content.model_copy(update={"parts": parts, "content": fallback})
        return message.model_copy(update={"content": content})


def _turn_start(prompt: Prompt, message_list: MessageList) -> int | None:
    """The prompt index of the newest user message of this request's input (found by its text)."""
    inputs = [m for m in message_list.input if m.role == "user"]
    if not inputs:
        return None
    anchor = inputs[-1].text
    for index in range(len(prompt) - 1, -1, -1):
        if prompt[index].role == "user" and prompt[index].text == anchor:
            return index
    return None


def _texts(message: Message) -> list[str]:
    texts = [p.text for p in message.content.parts if isinstance(p, TextPart)]
    return texts or ([message.content.content] if message.content.content else [])

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

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeAlias

import anyio.to_thread

from procflow._messages.message_list import MessageList
from procflow._messages.prompt import Prompt
from procflow._messages.request_context import RequestContext
from procflow.errors import ConfigurationError
from procflow.processors._args import ProcessLLMRequestArgs, ProcessLLMRequestResult
from procflow.processors._base import ProcessorBase
from procflow.processors._prompt_budget import PromptCosts, TrimMode, memory_ids, plan_trim
from procflow.processors._token_output import TOKEN_LIMIT_REACHED_CHUNK, OutputLimiting
from procflow.processors._tokens import TiktokenCounter, TokenCounter
from procflow.processors._tool_traffic import current_run_tool_steps

__all__ = ["TOKEN_LIMIT_REACHED_CHUNK", "MemoryTrimCallback", "TokenLimiter"]

MemoryTrimCallback: TypeAlias = Callable[[list[str], RequestContext], Awaitable[None] | None]
"""``on_memory_trim(removed_ids, request_context)``: sync or async, called with the ids of the recalled
messages a ``memory-only`` trim left out, oldest first (each id once per request)."""

_THREAD_THRESHOLD = 256
"""A request's first prompt with more messages than this is counted in a worker thread."""


def _non_negative_int(name: str, value: object, *, minimum: int = 0) -> int:
    if type(value) is not int or value < minimum:
        raise ConfigurationError(f"TokenLimiter {name} must be an int >= {minimum}, got {value!r}")
    return value


class TokenLimiter(OutputLimiting, ProcessorBase):
    """Keeps the prompt within ``limit`` tokens (input side) or caps the response (output side).

    Counts are exact integers from a :class:`TokenCounter` — by default tiktoken's ``o200k_base``,
    loaded offline.

    As an **input processor** it trims the provider prompt before every model call (see the module
    docstring for why it works there). Always kept: the system messages; the current turn — the newest
    user message of the request's input and everything after it, so the current run's tool calls with
    their results — and the newest message. Older messages are taken newest first while they fit. A
    tool call is never separated from its result. With ``trim_mode="memory-only"`` only messages
    recalled from memory are candidates, oldest first, and ``on_memory_trim`` hears which were left
    out; ``trim_headroom`` makes a trim go below the limit so the next calls need not trim at once.
    When the system messages (with the tool definitions) alone exceed the limit, or the messages that
    must be kept do not fit beside them, it raises a non-retryable tripwire saying so.

    As an **output processor** it caps the response text. ``count_mode="cumulative"`` (default) counts
    the whole response exactly: each text run is counted as one text, never as a sum of per-chunk
    counts, and the runs share the budget. A run ends at a chunk that ends a text (a tool call, a text
    block's end, a step's end); reasoning, sources, files, response metadata and ``data-*`` chunks pass
    ahead of held text without ending it, as in :class:`~procflow.processors.RegexFilterProcessor`. In
    the message a run is one text part, or several around the parts those chunks leave (a stored data
    chunk, a reasoning block), and the result counts them as one text too. The stream keeps the longest
    prefix of the response that fits, cut between grapheme clusters — the same text whatever the
    chunking and wherever those chunks fall, and the same text ``process_output_result`` keeps from the
    whole response. ``strategy="truncate"`` then drops the rest and emits one transient
    ``data-token-limit-reached`` chunk; ``strategy="abort"`` raises a tripwire when the response does
    not fit. To decide exactly, text near the limit is held back briefly: the last grapheme cluster of
    a chunk (it may still grow), and, once over the limit, the last word or two (BPE may still merge
    them into fewer tokens); it is released at the latest when the text run ends. Far from the limit
    chunks pass unchanged. ``count_mode="part"`` counts each chunk (and each final text part) alone.
    On the output, list it after the guards that redact or block: a cut inside a match leaves a part
    they no longer recognise (``ana.lopez@example``).

    Args:
        limit: The token budget (a positive int).
        counter: Counts tokens; default: ``o200k_base`` (see :class:`TiktokenCounter`).
        strategy: Output side: ``"truncate"`` drops text past the limit, ``"abort"`` raises a tripwire.
        count_mode: Output side: ``"cumulative"`` (whole response) or ``"part"`` (each chunk or part).
        trim_mode: Input side: ``"best-fit"`` keeps any older message that still fits after a larger one
            was dropped; ``"contiguous"`` stops at the first message that does not fit, so the kept
            history has no gaps; ``"memory-only"`` trims only messages recalled from memory (source
            ``memory`` in the message list), oldest first, and never anything else — the current input,
            this run's tool traffic, messages processors added.
        trim_headroom: Input side, hysteresis: once the prompt is over the limit, trim it down to
            ``limit - trim_headroom`` tokens rather than to the limit, so the next calls (and, with
            ``on_memory_trim`` telling memory what was left out, the next turns) can grow by that much
            before they must trim again. ``0`` (default) trims to the limit.
        on_memory_trim: With ``trim_mode="memory-only"``: ``on_memory_trim(removed_ids,
            request_context)``, sync or async, called after a trim with the ids of the recalled
            messages left out (each id once per request), for example to move a recall watermark.
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
        trim_headroom: int = 0,
        on_memory_trim: MemoryTrimCallback | None = None,
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
        if trim_mode not in ("best-fit", "contiguous", "memory-only"):
            raise ConfigurationError(
                f"TokenLimiter trim_mode must be 'best-fit', 'contiguous' or 'memory-only', got {trim_mode!r}"
            )
        self.trim_headroom = _non_negative_int("trim_headroom", trim_headroom)
        if self.trim_headroom >= self.limit:
            raise ConfigurationError(
                f"TokenLimiter trim_headroom ({trim_headroom}) must be below the limit ({limit}): a trim "
                "goes down to limit - trim_headroom tokens"
            )
        if on_memory_trim is not None and (trim_mode != "memory-only" or not callable(on_memory_trim)):
            raise ConfigurationError(
                "TokenLimiter on_memory_trim must be a callable, and needs trim_mode='memory-only' "
                "(only recalled messages are trimmed by id)"
            )
        self.on_memory_trim = on_memory_trim
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

    # -- input side ----------------------------------------------------------------------------------

    def _costs(self, state: dict[str, Any]) -> PromptCosts:
        costs = state.get("costs")
        if not isinstance(costs, PromptCosts):
            costs = state["costs"] = PromptCosts(self.counter, self.message_overhead, self.file_tokens)
        return costs

    async def process_llm_request(self, args: ProcessLLMRequestArgs) -> ProcessLLMRequestResult | None:
        """Trim this call's prompt to the limit; abort when even the required messages do not fit.

        The first call of a request with a long prompt (over 256 messages) counts in a worker thread;
        later calls hit the per-request cache and run inline.
        """
        await self._ready()
        if "costs" not in args.state and len(args.prompt) > _THREAD_THRESHOLD:
            result = await anyio.to_thread.run_sync(self._trim, args)
        else:
            result = self._trim(args)
        await self._report_memory_trim(args)
        return result

    async def _report_memory_trim(self, args: ProcessLLMRequestArgs) -> None:
        """Tell ``on_memory_trim`` which recalled messages were left out (each id once per request)."""
        removed: list[str] = args.state.pop("memory_removed", [])
        if self.on_memory_trim is None or not removed:
            return
        reported: set[str] = args.state.setdefault("memory_reported", set())
        new = [i for i in removed if i not in reported]
        if not new:
            return
        reported.update(new)
        outcome = self.on_memory_trim(new, args.request_context)
        if inspect.isawaitable(outcome):
            await outcome

    def _trim(self, args: ProcessLLMRequestArgs) -> ProcessLLMRequestResult | None:
        costs = self._costs(args.state)
        fixed = self.prompt_overhead + (costs.tools(args.tools) if self.count_tools else 0)
        protected = {i for step in current_run_tool_steps(args.message_list, args.steps) for i in step}
        memory = None
        if self.trim_mode == "memory-only":
            cache = args.state.setdefault("conversions", {})
            memory = lambda: memory_ids(args.prompt, args.message_list, cache)  # noqa: E731
        plan = plan_trim(
            args.prompt,
            costs,
            limit=self.limit,
            fixed=fixed,
            protected_ids=protected,
            turn_start=_turn_start(args.prompt, args.message_list),
            mode=self.trim_mode,
            headroom=self.trim_headroom,
            memory=memory,
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
            what = (
                "recalled history dropped, the messages that were not recalled (the current input, "
                "this run's tool calls)"
                if plan.recalled is not None
                else "older history dropped, the newest message and this run's tool calls"
            )
            args.abort(
                f"Even with all {what} need {plan.required_tokens} tokens with the system messages, over "
                f"the TokenLimiter limit of {self.limit}. Raise the limit or send a shorter message.",
                metadata={**metadata, "cause": "nothing-fits", "required_tokens": plan.required_tokens},
            )
        if not plan.dropped:
            return None
        if plan.recalled is not None:
            pairs = zip(plan.recalled, plan.keep, strict=True)
            removed = {i for i, kept in pairs if i is not None and not kept}
            args.state["memory_removed"] = [m.id for m in args.message_list.memory if m.id in removed]
        return ProcessLLMRequestResult(
            prompt=[m for m, kept in zip(args.prompt, plan.keep, strict=True) if kept]
        )


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

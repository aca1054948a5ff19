"""TokenLimiter's output side: the response text capped exactly, in the stream and on the final result.

See :class:`procflow.processors.TokenLimiter` for the behaviour and ``_token_stream`` for the counting.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import anyio.to_thread

from procflow._messages.chunk import INSIDE_TEXT_TYPES, Chunk
from procflow._messages.message import Message
from procflow._messages.parts import DataPart, FilePart, Part, ReasoningPart, SourcePart, TextPart
from procflow.processors._args import ProcessOutputResultArgs, ProcessOutputStreamArgs, StreamResult
from procflow.processors._token_stream import PrefixBudget, truncate_to_tokens
from procflow.processors._tokens import TiktokenCounter, TokenCounter, count_checked

__all__ = ["TOKEN_LIMIT_REACHED_CHUNK", "OutputLimiting"]

TOKEN_LIMIT_REACHED_CHUNK = "data-token-limit-reached"
"""The type of the transient chunk a truncating TokenLimiter emits once when it starts dropping text."""


_INSIDE_TEXT = INSIDE_TEXT_TYPES
"""Chunks that interrupt a text run without ending it, as in RegexFilterProcessor: a later processor
holding text back lets them pass ahead of it, so where they end up in the text depends on that
processor; counting the text around them as one text keeps the stream and the result in step."""

_INSIDE_TEXT_PARTS = (DataPart, FilePart, ReasoningPart, SourcePart)
"""The parts those chunks (and stored ``data-*`` chunks) leave between the text parts of one run."""


class OutputLimiting:
    """The output hooks of :class:`~procflow.processors.TokenLimiter` (a mixin; it sets the attributes)."""

    LIMIT_REACHED_CHUNK: ClassVar[str] = TOKEN_LIMIT_REACHED_CHUNK
    """The type of the transient chunk (``data-token-limit-reached``) a truncating limiter emits once."""

    limit: int
    counter: TokenCounter
    strategy: Literal["truncate", "abort"]
    count_mode: Literal["cumulative", "part"]

    def count(self, text: str) -> int:
        """Return the tokens of ``text`` with this limiter's counter."""
        return count_checked(self.counter, text)

    def truncate(self, text: str, max_tokens: int) -> str:
        """Return the longest prefix of ``text`` with at most ``max_tokens`` tokens by this limiter's
        counter, cut between grapheme clusters (never half an emoji or a combining sequence)."""
        return truncate_to_tokens(self.counter, text, max_tokens)

    async def _ready(self) -> None:
        """Load the default encoding in a worker thread, so its one-off load never blocks the loop."""
        counter = self.counter
        if isinstance(counter, TiktokenCounter) and not counter.is_loaded:
            await anyio.to_thread.run_sync(lambda: counter.encoding)

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
            return self._other_chunk(args, part)
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

    def _other_chunk(self, args: ProcessOutputStreamArgs, part: Chunk) -> StreamResult:
        """A non-text chunk ends the text run; a step's start and discarded end bound a retried attempt.

        Reasoning, sources, files, response metadata and ``data-*`` chunks (seen with
        ``process_data_parts``) pass at once, ahead of held text, without ending the run.
        """
        if part.type in _INSIDE_TEXT or part.is_data:
            return part
        state = args.state
        if part.type == "step-finish" and "discarded" in part.payload:
            # The attempt's output is thrown away (a retried stream or step): so is its share of the
            # budget, and its held-back text is never released.
            state.pop("budget", None)
            state["output_tokens"], state["limit_reached"] = state.get("at_step_start", (0, False))
            return part
        ended = self._end_text(args)
        if part.type == "step-start":
            state["at_step_start"] = (state.get("output_tokens", 0), bool(state.get("limit_reached")))
        return [*ended, part] if ended else part

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
        """Cut the response text to the limit between characters (``truncate``) or abort (``abort``).

        A text whose UTF-8 length fits in what is surely left of the budget is kept without being
        tokenised (a token is at least one byte); texts are counted only once the budget gets close.
        """
        await self._ready()
        room = _Room(self.counter, self.limit)
        if room.bytes_bound and _all_bytes(args.messages) <= self.limit:
            return None  # every text fits even if each of its bytes were a token
        changed = False
        out: list[Message] = []
        for message in args.messages:
            limited = self._limit_message(message, room)
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

    def _cut(self, text: str, room: _Room) -> str:
        if self.count_mode == "part":
            if room.bytes_bound and _utf8_len(text) <= self.limit:
                return text
            return truncate_to_tokens(self.counter, text, self.limit)
        return room.take(text)

    def _cut_runs(self, parts: list[Part], room: _Room) -> list[str]:
        """What is kept of each text part, in order; the parts of one text run are cut as one text."""
        return [head for run in _text_runs(parts) for head in self._cut_run(run, room)]

    def _cut_run(self, run: list[str], room: _Room) -> list[str]:
        if len(run) == 1 or self.count_mode == "part":
            return [self._cut(text, room) for text in run]
        head = self._cut("".join(run), room)
        out: list[str] = []
        for text in run:
            out.append(head[: len(text)])
            head = head[len(text) :]
        return out

    def _limit_message(self, message: Message, room: _Room) -> Message:
        if message.role != "assistant":
            return message
        fallback = message.content.content
        has_text = any(isinstance(p, TextPart) for p in message.content.parts)
        # The fallback mirrors the text parts: it is measured against the budget as the message found it.
        start = room.copy() if fallback and has_text else None
        kept = iter(self._cut_runs(message.content.parts, room))
        parts: list[Part] = []
        changed = False
        for part in message.content.parts:
            if isinstance(part, TextPart):
                head = next(kept)
                if head != part.text:
                    changed = True
                    if not head:
                        continue
                    part = part.model_copy(update={"text": head})
            parts.append(part)
        if fallback:
            head = self._cut(fallback, start if start is not None else room)
            if head != fallback:
                changed, fallback = True, head
        if not changed:
            return message
        content = message.content.model_copy(update={"parts": parts, "content": fallback})
        return message.model_copy(update={"content": content})


class _Room:
    """What is left of a cumulative output budget, counted lazily.

    A text whose UTF-8 length fits beside what is already spent (counted) and the bytes of the texts
    kept uncounted is kept without tokenising it: a text never has more tokens than UTF-8 bytes. Once a
    text may not fit, the uncounted texts are counted and the text is cut exactly, so every decision is
    the one an exact count would make.
    """

    __slots__ = ("bytes_bound", "closed", "counter", "limit", "pending", "pending_bytes", "spent")

    def __init__(self, counter: TokenCounter, limit: int) -> None:
        self.counter = counter
        self.limit = limit
        # tiktoken's tokens are byte sequences, at least one byte each; another counter (a subclass that
        # overrides count too) promises nothing.
        self.bytes_bound = type(counter) is TiktokenCounter
        self.spent = 0
        self.pending: list[str] = []
        self.pending_bytes = 0
        self.closed = False

    def copy(self) -> _Room:
        clone = _Room(self.counter, self.limit)
        clone.spent, clone.pending_bytes, clone.closed = self.spent, self.pending_bytes, self.closed
        clone.pending = list(self.pending)
        return clone

    def take(self, text: str) -> str:
        """The longest prefix of ``text`` that fits what is left; once a text is cut, nothing more fits."""
        if self.closed or not text:
            return "" if self.closed else text
        if self.bytes_bound:
            size = _utf8_len(text)
            if self.spent + self.pending_bytes + size <= self.limit:
                self.pending.append(text)
                self.pending_bytes += size
                return text
        left = self.limit - self.spent - sum(count_checked(self.counter, t) for t in self.pending)
        self.spent, self.pending, self.pending_bytes = self.limit - left, [], 0
        tokens = count_checked(self.counter, text)
        if left > 0 and tokens <= left:
            self.spent += tokens
            return text
        # Once a text is cut the response ends there: later text is dropped, as in the stream.
        self.closed = True
        return truncate_to_tokens(self.counter, text, left)


def _all_bytes(messages: list[Message]) -> int:
    """The UTF-8 bytes of every text of the assistant messages: parts and fallbacks."""
    total = 0
    for message in messages:
        if message.role != "assistant":
            continue
        content = message.content
        for part in content.parts:
            if isinstance(part, TextPart):
                total += _utf8_len(part.text)
        if content.content:
            total += _utf8_len(content.content)
    return total


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _text_runs(parts: list[Part]) -> list[list[str]]:
    """The texts of the text parts, by text run, as the stream counted them.

    Text parts with only reasoning, source, file or data parts between them are one run: the chunks
    behind those parts do not end a text run (see ``_INSIDE_TEXT``). Two text parts side by side
    are two runs: only a chunk that ends the run (a text block's end…) splits a text part and leaves
    no part of its own.
    """
    runs: list[list[str]] = []
    run: list[str] | None = None
    joins = False  # whether the next text part continues ``run``
    for part in parts:
        if isinstance(part, TextPart):
            if run is not None and joins:
                run.append(part.text)
            else:
                run = [part.text]
                runs.append(run)
            joins = False
        elif isinstance(part, _INSIDE_TEXT_PARTS):
            joins = run is not None
        else:
            run = None
    return runs


def _texts(message: Message) -> list[str]:
    texts = ["".join(run) for run in _text_runs(message.content.parts)]
    return texts or ([message.content.content] if message.content.content else [])

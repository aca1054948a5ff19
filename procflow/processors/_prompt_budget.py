"""Counting a provider prompt and choosing which of its messages fit a token budget.

A prompt is cut into *units* that are kept or dropped whole: every ``system`` message stands alone and
is always kept; every ``tool`` message joins the message before it, so an assistant message and the
results of its tool calls travel together and a call is never separated from its result.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from procflow._messages._to_prompt import answered_calls, message_to_prompt
from procflow._messages._tool_json import tool_args_text, tool_result_text
from procflow._messages.message import Message
from procflow._messages.message_list import MessageList
from procflow._messages.prompt import (
    Prompt,
    PromptFile,
    PromptMessage,
    PromptPart,
    PromptReasoning,
    PromptText,
    PromptToolCall,
    PromptToolResult,
)
from procflow.processors._tokens import TiktokenCounter, TokenCounter, count_checked

if TYPE_CHECKING:
    from procflow._tools._tool import Tool

__all__ = ["PromptCosts", "TrimPlan", "memory_ids", "plan_trim"]

TrimMode = Literal["best-fit", "contiguous", "memory-only"]


@dataclass(slots=True)
class PromptCosts:
    """Token costs of prompt pieces, cached by content for the whole request.

    A message costs ``message_overhead`` (the provider's framing) plus its role's tokens plus its parts'.
    A text or reasoning part costs its text's tokens; a tool call its name and JSON arguments; a tool
    result its text or JSON — serialised by the functions the provider wires send them with
    (``procflow._messages._tool_json``), so the count is of the text sent; a file or image
    ``file_tokens``. Costs are cached by the text counted, so a message repeated on every step of a run
    is counted once.
    """

    counter: TokenCounter
    message_overhead: int
    file_tokens: int
    texts: dict[str, int] = field(default_factory=dict)
    _count: Callable[[str], int] | None = field(default=None, init=False, repr=False)

    def text(self, text: str) -> int:
        """The tokens of ``text`` (cached)."""
        cached = self.texts.get(text)
        if cached is None:
            count = self._count
            if count is None:
                count = self._count = _counting(self.counter)
            cached = self.texts[text] = count(text)
        return cached

    def part(self, part: PromptPart) -> int:
        """The tokens of one prompt part."""
        if isinstance(part, PromptText | PromptReasoning):
            return self.text(part.text)
        if isinstance(part, PromptToolCall):
            return self.text(part.tool_name) + self.text(tool_args_text(part.args))
        if isinstance(part, PromptToolResult):
            return self.text(tool_result_text(part.result))
        if isinstance(part, PromptFile):
            return self.file_tokens
        return 0  # pragma: no cover - PromptPart is a closed union

    def message(self, message: PromptMessage) -> int:
        """The tokens of one prompt message, framing included."""
        texts = self.texts
        total = texts.get(message.role)
        if total is None:
            total = self.text(message.role)
        total += self.message_overhead
        for part in message.content:
            # Text is most of a prompt: its count is one dict lookup (the text's hash is cached on the
            # string, and a rebuilt prompt shares the stored message's strings).
            kind = type(part)
            if kind is PromptText or kind is PromptReasoning:
                cost = texts.get(part.text)  # type: ignore[union-attr]
                total += self.text(part.text) if cost is None else cost  # type: ignore[union-attr]
            else:
                total += self.part(part)
        return total

    def prompt(self, prompt: Prompt) -> list[int]:
        """The tokens of each prompt message, framing included."""
        message = self.message
        return [message(m) for m in prompt]

    def tools(self, tools: Mapping[str, Tool]) -> int:
        """The tokens of the tool definitions offered to the model: names, descriptions, JSON schemas."""
        total = 0
        for tool in tools.values():
            spec = tool.spec()
            schema = json.dumps(spec.parameters, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
            total += self.text(spec.name) + self.text(spec.description) + self.text(schema)
        return total


def _counting(counter: TokenCounter) -> Callable[[str], int]:
    """``counter``'s count; for tiktoken the encoder itself (its counts need no checking)."""
    if type(counter) is TiktokenCounter:
        encode = counter.encoding.encode_ordinary
        return lambda text: len(encode(text)) if text else 0
    return lambda text: count_checked(counter, text)


@dataclass(frozen=True, slots=True)
class TrimPlan:
    """The outcome of fitting a prompt into a budget.

    Attributes:
        keep: One flag per prompt message: whether it is sent.
        tokens_before: The whole prompt's tokens (with the fixed costs).
        tokens_after: The kept prompt's tokens (with the fixed costs).
        fixed_tokens: What is always sent: the fixed costs plus the system messages.
        required_tokens: ``fixed_tokens`` plus the units that may not be dropped.
        problem: ``"system"`` when the fixed part alone is over the limit, ``"required"`` when the
            units that may not be dropped do not fit beside it, else ``None``.
        recalled: ``memory-only`` trims: the recalled message id of each prompt message (or ``None``).
    """

    keep: list[bool]
    tokens_before: int
    tokens_after: int
    fixed_tokens: int
    required_tokens: int
    problem: Literal["system", "required"] | None = None
    recalled: list[str | None] | None = None

    @property
    def dropped(self) -> int:
        """How many prompt messages are left out."""
        return self.keep.count(False)


@dataclass(slots=True)
class _Units:
    """A prompt cut into units, as flat lists (no list per unit: a long prompt makes no garbage).

    ``unit_of[i]`` is the unit of prompt message ``i`` (``-1`` for a system message), ``starts[u]`` the
    first message of unit ``u``; ``costs[u]`` its tokens; ``system`` the system messages' tokens.
    """

    unit_of: list[int]
    starts: list[int]
    costs: list[int]
    system: int

    def members(self) -> list[list[int]]:
        """The prompt indexes of each unit."""
        out: list[list[int]] = [[] for _ in self.starts]
        for index, unit in enumerate(self.unit_of):
            if unit >= 0:
                out[unit].append(index)
        return out


def _units(prompt: Prompt, per_message: list[int]) -> _Units:
    unit_of = [-1] * len(prompt)
    starts: list[int] = []
    costs: list[int] = []
    system = 0
    for index, message in enumerate(prompt):
        role = message.role
        if role == "system":
            system += per_message[index]
            continue
        if role == "tool" and starts:
            costs[-1] += per_message[index]
        else:
            starts.append(index)
            costs.append(per_message[index])
        unit_of[index] = len(starts) - 1
    return _Units(unit_of, starts, costs, system)


def _touches(message: PromptMessage, ids: set[str]) -> bool:
    return any(
        isinstance(p, PromptToolCall | PromptToolResult) and p.tool_call_id in ids for p in message.content
    )


def memory_ids(
    prompt: Prompt,
    message_list: MessageList,
    cache: dict[str, tuple[Message, frozenset[str], list[PromptMessage]]] | None = None,
) -> list[str | None]:
    """For each prompt message, the id of the recalled (``memory``) message it was built from, else None.

    The prompt is matched, in order, against the conversion of the live message list; a prompt message
    that a processor rewrote or added matches nothing and counts as not recalled (never trimmed).
    ``cache`` keeps each stored message's conversion for the request (reused while the message object
    and the answered tool calls are the same).
    """
    cache = {} if cache is None else cache
    expected: list[tuple[PromptMessage, str | None]] = []
    answered = answered_calls(message_list.all)
    for stored in message_list.all:
        recalled = stored.id if message_list.source_of(stored.id) == "memory" else None
        hit = cache.get(stored.id)
        if hit is None or hit[0] is not stored or hit[1] != answered:
            hit = cache[stored.id] = (stored, answered, message_to_prompt(stored, answered))
        expected.extend((converted, recalled) for converted in hit[2])
    out: list[str | None] = []
    position = 0
    for message in prompt:
        if message.role == "system":
            out.append(None)
            continue
        found = next((k for k in range(position, len(expected)) if _same(expected[k][0], message)), None)
        if found is None:
            out.append(None)
            continue
        out.append(expected[found][1])
        position = found + 1
    return out


def _same(a: PromptMessage, b: PromptMessage) -> bool:
    """Equal prompt messages (field by field: faster than pydantic's ``==`` for this shape)."""
    return (
        a.role == b.role
        and len(a.content) == len(b.content)
        and all(
            type(x) is type(y) and x.__dict__ == y.__dict__ for x, y in zip(a.content, b.content, strict=True)
        )
    )


def _required(
    prompt: Prompt,
    units: _Units,
    *,
    protected_ids: set[str],
    turn_start: int | None,
    memory: list[str | None] | None,
) -> list[bool]:
    count = len(units.starts)
    required = [False] * count
    if count:
        required[-1] = True
    if memory is not None:  # memory-only: everything that was not recalled stays
        for index, unit in enumerate(units.unit_of):
            if unit >= 0 and memory[index] is None:
                required[unit] = True
        return required
    start = len(prompt) if turn_start is None else turn_start
    for unit in range(bisect_left(units.starts, start), count):
        required[unit] = True
    if protected_ids:
        for index, unit in enumerate(units.unit_of):
            if unit >= 0 and not required[unit] and _touches(prompt[index], protected_ids):
                required[unit] = True
    return required


def _blocks(units: list[list[int]], memory: list[str | None]) -> list[list[int]]:
    """Unit positions grouped so that the prompt messages of one recalled message go together."""
    blocks: list[list[int]] = []
    previous: set[str] = set()
    for position, unit in enumerate(units):
        ids = {i for i in (memory[k] for k in unit) if i is not None}
        if blocks and ids & previous:
            blocks[-1].append(position)
        else:
            blocks.append([position])
        previous = ids
    return blocks


def _take(
    blocks: Iterable[Sequence[int]], unit_costs: list[int], required: list[bool], room: int, *, skip: bool
) -> list[bool]:
    """Which optional units to keep: blocks newest first while they fit (``skip``: past one that does not)."""
    kept = [False] * len(unit_costs)
    for block in blocks:
        if len(block) == 1:
            position = block[0]
            if required[position]:
                continue
            cost = unit_costs[position]
        else:
            cost = sum(unit_costs[p] for p in block if not required[p])
        if cost <= room:
            for p in block:
                kept[p] = not required[p]
            room -= cost
        elif not skip:
            break
    return kept


def plan_trim(
    prompt: Prompt,
    costs: PromptCosts,
    *,
    limit: int,
    fixed: int,
    protected_ids: set[str],
    turn_start: int | None = None,
    mode: TrimMode,
    headroom: int = 0,
    memory: Callable[[], list[str | None]] | None = None,
) -> TrimPlan:
    """Choose the prompt messages to send so the total stays within ``limit`` tokens.

    System messages and ``fixed`` (prompt framing, tool definitions) are always counted. Required: the
    newest unit, every unit from ``turn_start`` on (the current turn) and every unit carrying a
    protected tool call (the current run's); with ``memory`` (``memory-only``: it returns the
    :func:`memory_ids` of the prompt, and is called only when a trim is needed), every unit that was not
    recalled. The other units are taken newest first while they fit: ``best-fit`` skips a unit that
    does not fit and keeps looking at older ones; ``contiguous`` and ``memory-only`` stop at the first
    that does not fit, so the kept history has no gaps (``memory-only`` keeps the prompt messages of one
    recalled message together). Once over ``limit``, the prompt is trimmed down to
    ``limit - headroom``, so the next calls have room to grow before they must trim again.
    """
    per_message = costs.prompt(prompt)
    tokens_before = fixed + sum(per_message)
    keep = [True] * len(prompt)
    if tokens_before <= limit:
        fixed_tokens = fixed + sum(c for m, c in zip(prompt, per_message, strict=True) if m.role == "system")
        return TrimPlan(keep, tokens_before, tokens_before, fixed_tokens, tokens_before)
    units = _units(prompt, per_message)
    fixed_tokens = fixed + units.system
    unit_costs = units.costs
    recalled = memory() if memory is not None else None
    required = _required(prompt, units, protected_ids=protected_ids, turn_start=turn_start, memory=recalled)
    required_tokens = fixed_tokens + sum(c for c, r in zip(unit_costs, required, strict=True) if r)
    if fixed_tokens > limit or required_tokens > limit:
        problem: Literal["system", "required"] = "system" if fixed_tokens > limit else "required"
        return TrimPlan(keep, tokens_before, tokens_before, fixed_tokens, required_tokens, problem, recalled)
    room = max(0, limit - headroom - required_tokens)
    blocks: Iterable[Sequence[int]] = (
        reversed(_blocks(units.members(), recalled))
        if mode == "memory-only" and recalled is not None
        else ((position,) for position in range(len(unit_costs) - 1, -1, -1))
    )
    kept = _take(blocks, unit_costs, required, room, skip=mode == "best-fit")
    for index, unit in enumerate(units.unit_of):
        if unit >= 0 and not kept[unit] and not required[unit]:
            keep[index] = False
    taken = sum(c for c, k in zip(unit_costs, kept, strict=True) if k)
    tokens_after = required_tokens + taken
    return TrimPlan(keep, tokens_before, tokens_after, fixed_tokens, required_tokens, recalled=recalled)

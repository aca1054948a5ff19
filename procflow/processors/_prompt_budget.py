"""Counting a provider prompt and choosing which of its messages fit a token budget.

A prompt is cut into *units* that are kept or dropped whole: every ``system`` message stands alone and
is always kept; every ``tool`` message joins the message before it, so an assistant message and the
results of its tool calls travel together and a call is never separated from its result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from procflow.messages._tool_json import tool_args_text, tool_result_text
from procflow.messages.prompt import (
    Prompt,
    PromptFile,
    PromptMessage,
    PromptPart,
    PromptReasoning,
    PromptText,
    PromptToolCall,
    PromptToolResult,
)
from procflow.processors._tokens import TokenCounter, count_checked

if TYPE_CHECKING:
    from procflow.tools.tool import Tool

__all__ = ["PromptCosts", "TrimPlan", "plan_trim"]

TrimMode = Literal["best-fit", "contiguous"]


@dataclass(slots=True)
class PromptCosts:
    """Token costs of prompt pieces, cached by content for the whole request.

    A message costs ``message_overhead`` (the provider's framing) plus its role's tokens plus its parts'.
    A text or reasoning part costs its text's tokens; a tool call its name and JSON arguments; a tool
    result its text or JSON — serialised by the functions the provider wires send them with
    (``procflow.messages._tool_json``), so the count is of the text sent; a file or image
    ``file_tokens``. Costs are cached by the text counted, so a message repeated on every step of a run
    is counted once.
    """

    counter: TokenCounter
    message_overhead: int
    file_tokens: int
    texts: dict[str, int] = field(default_factory=dict)

    def text(self, text: str) -> int:
        """The tokens of ``text`` (cached)."""
        cached = self.texts.get(text)
        if cached is None:
            cached = self.texts[text] = count_checked(self.counter, text)
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
        return self.message_overhead + self.text(message.role) + sum(self.part(p) for p in message.content)

    def tools(self, tools: Mapping[str, Tool]) -> int:
        """The tokens of the tool definitions offered to the model: names, descriptions, JSON schemas."""
        total = 0
        for tool in tools.values():
            spec = tool.spec()
            schema = json.dumps(spec.parameters, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
            total += self.text(spec.name) + self.text(spec.description) + self.text(schema)
        return total


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
    """

    keep: list[bool]
    tokens_before: int
    tokens_after: int
    fixed_tokens: int
    required_tokens: int
    problem: Literal["system", "required"] | None = None

    @property
    def dropped(self) -> int:
        """How many prompt messages are left out."""
        return self.keep.count(False)


def _units(prompt: Prompt) -> tuple[list[int], list[list[int]]]:
    system: list[int] = []
    units: list[list[int]] = []
    for index, message in enumerate(prompt):
        if message.role == "system":
            system.append(index)
        elif message.role == "tool" and units:
            units[-1].append(index)
        else:
            units.append([index])
    return system, units


def _touches(message: PromptMessage, ids: set[str]) -> bool:
    return any(
        isinstance(p, PromptToolCall | PromptToolResult) and p.tool_call_id in ids for p in message.content
    )


def plan_trim(
    prompt: Prompt,
    costs: PromptCosts,
    *,
    limit: int,
    fixed: int,
    protected_ids: set[str],
    turn_start: int | None = None,
    mode: TrimMode,
) -> TrimPlan:
    """Choose the prompt messages to send so the total stays within ``limit`` tokens.

    System messages and ``fixed`` (prompt framing, tool definitions) are always counted. Required: the
    newest unit, every unit from ``turn_start`` on (the current turn) and every unit carrying a
    protected tool call (the current run's). The other units are
    taken newest first while they fit: ``best-fit`` skips a unit that does not fit and keeps looking at
    older ones; ``contiguous`` stops at the first that does not fit, so the kept history has no gaps.
    """
    per_message = [costs.message(m) for m in prompt]
    system, units = _units(prompt)
    fixed_tokens = fixed + sum(per_message[i] for i in system)
    tokens_before = fixed + sum(per_message)
    keep = [True] * len(prompt)
    if tokens_before <= limit:
        return TrimPlan(keep, tokens_before, tokens_before, fixed_tokens, tokens_before)
    unit_costs = [sum(per_message[i] for i in unit) for unit in units]
    last = len(units) - 1
    start = len(prompt) if turn_start is None else turn_start
    required = [
        position == last
        or unit[0] >= start
        or (bool(protected_ids) and any(_touches(prompt[i], protected_ids) for i in unit))
        for position, unit in enumerate(units)
    ]
    required_tokens = fixed_tokens + sum(c for c, r in zip(unit_costs, required, strict=True) if r)
    if fixed_tokens > limit or required_tokens > limit:
        problem: Literal["system", "required"] = "system" if fixed_tokens > limit else "required"
        return TrimPlan(keep, tokens_before, tokens_before, fixed_tokens, required_tokens, problem)
    room = limit - required_tokens
    kept = [False] * len(units)
    for position in range(len(units) - 1, -1, -1):
        if required[position]:
            continue
        if unit_costs[position] <= room:
            kept[position] = True
            room -= unit_costs[position]
        elif mode == "contiguous":
            break
    for position, unit in enumerate(units):
        if not (kept[position] or required[position]):
            for index in unit:
                keep[index] = False
    tokens_after = limit - room
    return TrimPlan(keep, tokens_before, tokens_after, fixed_tokens, required_tokens)

"""Conversation length: the input phase's cost per message, from 50 to 1,600 messages.

A processor that returns every message rewritten (as a redactor does) makes the runner apply the
returned list to the live ``MessageList``; that must cost O(1) per message, so the per-message cost
at 1,600 messages is reported as a ratio of the per-message cost at 50 (budget: flat, ≤ 1.5×).
"""

from __future__ import annotations

from bench._harness import Row, time_async
from procflow import Message
from procflow.processors import ProcessInputArgs
from procflow.testing import run_input

SIZES = {"full": ((50, 200, 1600), 5), "tiny": ((5, 20), 2)}
BUDGET = 1.5


class RewriteAll:
    """Returns a changed copy of every message, the worst case for applying a hook's result."""

    id = "rewrite-all"

    def process_input(self, args: ProcessInputArgs) -> list[Message]:
        return [m.with_text(m.text + "!") for m in args.messages]


async def run(size: str = "full") -> list[Row]:
    """Per-message input-phase cost at each conversation length, against the shortest."""
    lengths, repeat = SIZES[size]
    processor = RewriteAll()
    per_message: dict[int, float] = {}
    for n in lengths:
        messages = [Message.user(f"message {i} with a little text") for i in range(n)]

        async def once(messages: list[Message] = messages) -> None:
            await run_input(processor, messages)

        timing = await time_async(once, number=max(1, 4000 // n), repeat=repeat)
        per_message[n] = timing.median / n
    shortest = lengths[0]
    rows = []
    for n in lengths[1:]:
        ratio = per_message[n] / per_message[shortest]
        rows.append(
            Row(
                group="message_list",
                name=f"input phase, every message rewritten: cost per message at {n} messages",
                value=per_message[n] * 1e6,
                unit="µs/message",
                baseline=per_message[shortest] * 1e6,
                baseline_name=f"at {shortest} messages",
                ratio=ratio,
                budget=f"≤ {BUDGET}×" if n == lengths[-1] else "",
                passed=ratio <= BUDGET if n == lengths[-1] else None,
            )
        )
    return rows

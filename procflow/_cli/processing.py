"""Applying a pipeline to one stored conversation, offline.

User, system and tool turns go through the input phase (``process_input``), assistant turns through the
output phase (``process_output_result``), as they would around a live model call. ``phase="input"`` or
``"output"`` sends every turn through that one phase instead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from procflow._chat.format import Conversation
from procflow._chat.turns import TurnView
from procflow._chat.violations import ViolationCollector, count_rules
from procflow._cli._direct import DirectPass
from procflow._cli.loading import LoadedPipeline
from procflow._messages.message import Message
from procflow._messages.message_list import MessageList
from procflow._messages.results import OutputResult
from procflow._messages.tripwire import TripWire, TripwireInfo
from procflow._runner.context import RunContext, report_tripwire
from procflow._runner.pipeline import ProcessorPipeline
from procflow._runner.runner import PhaseRunner
from procflow.processors._base import ProcessorViolation

__all__ = ["RUN_HOOKS", "ConversationProcessor", "Outcome", "PhaseMode", "nested_processors"]

PhaseMode = Literal["auto", "input", "output"]
"""Which phase each turn goes through: by role (``auto``), or every turn through one phase."""

RUN_HOOKS = ("process_input", "process_output_result")
"""The hooks ``procflow run`` calls; processors with neither do nothing on stored conversations."""


@dataclass(slots=True)
class Outcome:
    """What processing one conversation produced.

    Attributes:
        messages: The turns afterwards, in conversation order (as far as processing went, when blocked).
        tripwire: The tripwire that blocked the conversation, if one did.
        blocked_phase: ``"input"`` or ``"output"``: the phase the tripwire was raised in.
        violations: Every ``on_violation`` report received while processing it.
        redactions: Redactions per rule.
        warnings: ``warn``-strategy matches per rule.
    """

    messages: Sequence[Message]
    tripwire: TripwireInfo | None = None
    blocked_phase: str | None = None
    violations: list[ProcessorViolation] = field(default_factory=list)
    redactions: Counter[str] = field(default_factory=Counter)
    warnings: Counter[str] = field(default_factory=Counter)


class ConversationProcessor:
    """Runs a loaded pipeline over conversations, one at a time, with fresh state per conversation."""

    __slots__ = ("_collector", "_direct", "_input", "_output", "phase")

    def __init__(self, pipeline: LoadedPipeline, *, phase: PhaseMode = "auto") -> None:
        self.phase: PhaseMode = phase
        self._input = ProcessorPipeline.build(pipeline.input_processors)
        self._output = ProcessorPipeline.build(pipeline.output_processors)
        self._collector = ViolationCollector()
        self._collector.attach(pipeline.processors)
        for processor in pipeline.processors:
            self._collector.attach(nested_processors(processor))
        self._direct = DirectPass.build(pipeline.input_processors, pipeline.output_processors)

    @property
    def unattached(self) -> list[str]:
        """Ids of processors whose reports cannot be collected (their redactions are not counted)."""
        return list(self._collector.unattached)

    async def process(self, conversation: Conversation) -> Outcome:
        """Apply the pipeline to ``conversation``; a tripwire marks it blocked instead of raising."""
        if self._direct is not None:
            outcome = await self._process_direct(self._direct, conversation)
            if outcome is not None:
                return outcome
        ml = MessageList()
        original_order = {m.id: i for i, m in enumerate(conversation.messages)}
        for message in conversation.messages:
            if message.role == "system":
                ml.add_system(message)
            else:
                ml.add(message, source=self._source_of(message.role))
        ctx = RunContext(message_list=ml)
        self._collector.take()
        tripwire_info: TripwireInfo | None = None
        blocked_phase: str | None = None
        phase = "input"
        try:
            if self.phase != "output":
                await PhaseRunner(self._input, ctx).run_input()
            phase = "output"
            if self.phase != "input":
                text = "\n".join(m.text for m in ml.response if m.role == "assistant")
                await PhaseRunner(self._output, ctx).run_output_result(
                    OutputResult(text=text, finish_reason="stop")
                )
        except TripWire as tripwire:
            tripwire_info, blocked_phase = tripwire.info(), phase
        violations = self._collector.take()
        outcome = Outcome(_in_order(ml, original_order), tripwire_info, blocked_phase, violations)
        if violations:
            outcome.redactions, outcome.warnings = count_rules(violations)
        return outcome

    async def _process_direct(self, direct: DirectPass, conversation: Conversation) -> Outcome | None:
        """The bundled processors' pass without the phase runner (see :mod:`procflow._cli._direct`);
        ``None`` when the phase runner must process the conversation instead."""
        messages = conversation.items
        if len({m.id for m in messages}) != len(messages):
            return None  # the message list would merge turns that share an id
        sources = [m.role if m.role == "system" else self._source_of(m.role) for m in messages]
        result = direct.run(messages, sources, inputs=self.phase != "output", outputs=self.phase != "input")
        if result is None:
            return None
        self._collector.take()
        for processor, detail in result.reports:
            await processor._report(detail)
        tripwire, info = result.tripwire, None
        if tripwire is not None:
            await report_tripwire(result.blocked_by, result.blocked_by.id, tripwire)
            info = tripwire.info()
        violations = self._collector.take()
        outcome = Outcome(TurnView(result.items), info, result.blocked_phase, violations)
        if violations:
            outcome.redactions, outcome.warnings = count_rules(violations)
        return outcome

    def _source_of(self, role: str) -> Literal["input", "response"]:
        if self.phase == "input":
            return "input"
        if self.phase == "output" or role == "assistant":
            return "response"
        return "input"


def _in_order(ml: MessageList, original_order: dict[str, int]) -> list[Message]:
    """The conversation's turns with system turns back at their original places.

    System messages a processor added (unknown ids) go first, where instructions belong.
    """
    system = ml.system_messages
    pending = sorted(
        (original_order[m.id], m) for m in system if m.id in original_order
    )  # (index, message) pairs
    out: list[Message] = [m for m in system if m.id not in original_order]
    for message in ml.all:
        index = original_order.get(message.id)
        while index is not None and pending and pending[0][0] < index:
            out.append(pending.pop(0)[1])
        out.append(message)
    out.extend(m for _, m in pending)
    return out


def nested_processors(processor: object) -> list[object]:
    """The processors inside a workflow (at any depth); none for a plain processor."""
    plan = getattr(processor, "plan", None)
    found: list[object] = []
    stack = [plan] if plan is not None else []
    while stack:
        current = stack.pop()
        for node in getattr(current, "nodes", {}).values():
            if node.processor is not None:
                found.append(node.processor)
            if node.subplan is not None:
                stack.append(node.subplan)
    return found

"""A stored conversation through the bundled processors without the phase runner.

``procflow run`` spends most of its time, per conversation, around the processors rather than in them:
a message list, a run context, hook arguments, result checks, for hooks that (in the bundled guard) are
plain functions of the messages' texts. When every processor of the pipeline is one of the built-ins
this module knows — :class:`UnicodeNormalizer`, :class:`RegexFilterProcessor` and :class:`TokenLimiter`,
of exactly those types, their hooks not replaced — a conversation is passed through their own per-message
code directly, in the phase runner's order and with its scopes.

The pass is exact or it is not taken: a ``block`` filter's match raises its tripwire as in the runner
(the conversation is blocked with the messages as far as processing went); anything whose effect it
does not reproduce itself — a ``warn`` filter (a logged warning), a response that may be over a token
limit, an error, tracing — makes :meth:`DirectPass.run` return ``None`` before anything was reported, and the
caller runs the phase runner over the conversation instead, from the start. Nothing is edited in place
(the processors return new messages), so a conversation abandoned halfway is as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from procflow._chat.turns import Item, TextTurn
from procflow._logging import is_tracing
from procflow._messages.tripwire import TripWire
from procflow.processors._base import AbortFn, make_abort
from procflow.processors._regex_filter.match import merge_hits
from procflow.processors._regex_filter.messages import KnownText, MessageCheck
from procflow.processors._regex_filter.processor import RegexFilterProcessor
from procflow.processors._regex_filter.report import (
    REDACTED_MATCH,
    RegexRedactionDetail,
    RegexTextPhase,
    apply_regions,
)
from procflow.processors._token_limiter import TokenLimiter
from procflow.processors._token_output import _all_bytes, _utf8_len
from procflow.processors._tokens import TiktokenCounter
from procflow.processors._unicode_normalizer import UnicodeNormalizer

__all__ = ["DirectPass", "DirectResult"]

_HOOKS = {
    UnicodeNormalizer: ("process_input", "process_output_result"),
    RegexFilterProcessor: ("process_input", "process_output_result"),
    TokenLimiter: ("process_output_result",),
}
"""The built-ins the pass knows, with the hooks of theirs ``procflow run`` calls."""

Reports = list[tuple[RegexFilterProcessor, RegexRedactionDetail]]


class _FallbackError(Exception):
    """The pass cannot reproduce what the phase runner would do here."""


@dataclass(slots=True)
class DirectResult:
    """What the pass produced: the turns in conversation order, and the redaction reports to send."""

    items: list[Item]
    reports: Reports
    tripwire: TripWire | None = None
    """The tripwire a ``block`` filter raised (then ``items`` are as far as processing went)."""
    blocked_phase: str | None = None
    blocked_by: Any = None


def _known(processor: object) -> bool:
    hooks = _HOOKS.get(type(processor))
    if hooks is None:
        return False
    overridden = getattr(processor, "__dict__", {})
    return not any(name in overridden for name in hooks)


@dataclass(frozen=True, slots=True)
class DirectPass:
    """The input and output processors of a pipeline, when the pass can run them (see :meth:`build`)."""

    inputs: tuple[Any, ...]
    outputs: tuple[Any, ...]

    @classmethod
    def build(cls, inputs: Sequence[Any], outputs: Sequence[Any]) -> DirectPass | None:
        """The pass for these processor lists, or ``None`` when one of them is not a known built-in."""
        if not all(_known(p) for p in (*inputs, *outputs)):
            return None
        return cls(
            tuple(p for p in inputs if "process_input" in _HOOKS[type(p)]),
            tuple(p for p in outputs if "process_output_result" in _HOOKS[type(p)]),
        )

    def run(
        self, messages: list[Item], sources: Sequence[str], *, inputs: bool, outputs: bool
    ) -> DirectResult | None:
        """Pass ``messages`` (``sources[i]``: ``system``, ``input`` or ``response``) through the input
        hooks (when ``inputs``: system messages only through processors with ``system_messages``), then the
        output hooks (when ``outputs``). Text turns stay text turns while no processor changes them; a
        changed one becomes the message a processor would return.

        Returns ``None`` when the phase runner must do it instead (nothing has been reported then).
        """
        if is_tracing():
            return None
        new_sys = [m for m, s in zip(messages, sources, strict=True) if s == "system"]
        new_in = [m for m, s in zip(messages, sources, strict=True) if s == "input"]
        new_out = [m for m, s in zip(messages, sources, strict=True) if s == "response"]
        reports: Reports = []
        result = DirectResult([], reports)
        phase, processor = "input", None
        try:
            for processor in self.inputs if inputs else ():
                new_sys, new_in = _input_step(processor, new_sys, new_in, reports)
            phase = "output"
            if outputs:
                holder = ["\n".join(m.text for m in new_out if m.role == "assistant")]
                for processor in self.outputs:
                    new_out = _output_step(processor, new_out, holder, reports)
        except TripWire as tripwire:
            result.tripwire, result.blocked_phase, result.blocked_by = tripwire, phase, processor
        except Exception:  # a _FallbackError, or an error the phase runner reports in its own way
            return None
        turns = {"system": iter(new_sys), "input": iter(new_in), "response": iter(new_out)}
        result.items = [next(turns[s]) for s in sources]
        return result


def _input_step(
    processor: Any, system: list[Item], messages: list[Item], reports: Reports
) -> tuple[list[Item], list[Item]]:
    """One input processor over the system and the input messages: both, as they come out of it."""
    if processor.phase == "output":
        return system, messages
    if type(processor) is UnicodeNormalizer:  # system messages first, as its process_input does
        normalized = _normalized_all(processor, system) if processor.system_messages else system
        return normalized, _normalized_all(processor, messages)
    if not processor.system_messages or not system:
        return system, _filter(processor, messages, "process_input", processor._find, None, reports)
    # One pass over both, system messages first, as RegexFilterProcessor.process_input does.
    out = _filter(processor, [*system, *messages], "process_input", processor._find, None, reports)
    return out[: len(system)], out[len(system) :]


def _normalized_all(normalizer: UnicodeNormalizer, messages: list[Item]) -> list[Item]:
    """``UnicodeNormalizer._message`` of each turn; a text turn stays a text turn while unchanged."""
    return [
        _normalized(normalizer, m) if type(m) is TextTurn else normalizer._message(m)  # type: ignore[arg-type]
        for m in messages
    ]


def _normalized(normalizer: UnicodeNormalizer, turn: TextTurn) -> Item:
    """``UnicodeNormalizer._message`` of a text turn."""
    text = normalizer.normalize(turn.text)
    return turn if text == turn.text else turn.with_text(text)


def _output_step(processor: Any, messages: list[Item], holder: list[str], reports: Reports) -> list[Item]:
    if type(processor) is TokenLimiter:
        counter = processor.counter
        # Proven to fit without tokenising (a token is at least one byte): the hook would return None.
        if type(counter) is TiktokenCounter and counter.is_loaded and _bytes(messages) <= processor.limit:
            return messages
        raise _FallbackError
    if processor.phase == "input":
        return messages
    if type(processor) is UnicodeNormalizer:
        if holder[0]:  # the result text: the character steps (``process_output_result``)
            holder[0] = processor._characters(holder[0])
        return _normalized_all(processor, messages)
    filt: RegexFilterProcessor = processor
    extra = holder[0]
    if not extra:
        return _filter(filt, messages, "process_output_result", filt._find, None, reports)
    rules = filt._rules_for(extra)
    hits = filt._scan(rules, extra)
    known = KnownText(filt._find, extra, hits, needle_free=not rules)
    if hits and filt.strategy == "redact":
        holder[0] = apply_regions(extra, merge_hits(hits), report=False, include_values=False)[0]
    return _filter(filt, messages, "process_output_result", known, hits, reports)


def _bytes(messages: list[Item]) -> int:
    """``_all_bytes`` (the UTF-8 bytes of the assistant messages' texts) of text turns and messages."""
    total = 0
    for m in messages:
        if type(m) is TextTurn:
            total += _utf8_len(m.text) if m.role == "assistant" else 0
        else:
            total += _all_bytes([m])  # type: ignore[list-item]
    return total


def _filter(
    filt: RegexFilterProcessor,
    messages: list[Item],
    phase: RegexTextPhase,
    find: Callable[[str], Any],
    extra_hits: list[Any] | None,
    reports: Reports,
) -> list[Item]:
    """What ``RegexFilterProcessor._check_messages`` does, for a filter that redacts or finds nothing."""
    if filt.strategy == "warn":
        raise _FallbackError
    redact = filt.strategy == "redact"
    check = MessageCheck(
        find=find,
        phase=phase,
        redact=redact,
        report=filt.on_violation is not None and redact,
        include_values=filt.include_redacted_values,
        tool_arguments=filt.tool_arguments,
    )
    out = [_checked(check, m) if type(m) is TextTurn else check.message(m) for m in messages]  # type: ignore[arg-type]
    found = check.found
    if not found and extra_hits and not redact:
        found = [{"rule": hit.rule.name, "match": REDACTED_MATCH, "index": hit.start} for hit in extra_hits]
    if found:  # a block (a warn filter never gets here): raises the filter's tripwire
        filt._block(_Aborting(make_abort(filt.id)), found)  # type: ignore[arg-type]
    reports.extend((filt, detail) for detail in check.details)
    return out


@dataclass(frozen=True, slots=True)
class _Aborting:
    """The one hook argument ``RegexFilterProcessor._block`` uses."""

    abort: AbortFn


def _checked(check: MessageCheck, turn: TextTurn) -> Item:
    """``MessageCheck.message`` of a text turn (its one text part is part 0)."""
    if not turn.text:
        return turn
    text = check.text(turn.text, turn.id, 0)
    if text is None:
        return turn
    check.changed = True
    return turn.with_text(text)

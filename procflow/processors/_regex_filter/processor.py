"""RegexFilterProcessor: block, redact or flag text by regular expressions, with no model call.

Every text a message carries is checked — its text parts, joined as the model reads them (a match
split over two parts is seen whole), and its flattened ``content.content`` — and in streams a match
split across chunks (or across text blocks) is seen whole: redaction holds back only the text where a
match may still be in progress. See ``docs/concepts/streaming-redaction.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, Literal, NoReturn

from procflow._logging import log
from procflow._messages.chunk import INSIDE_TEXT_TYPES, Chunk
from procflow._messages.message import Message
from procflow._messages.parts import ToolInvocationPart
from procflow.errors import ConfigurationError, PatternTimeoutError, StreamHoldLimitError
from procflow.processors._args import (
    ProcessInputArgs,
    ProcessInputResult,
    ProcessInputStepArgs,
    ProcessInputStepResult,
    ProcessorArgs,
    ProcessOutputResultArgs,
    ProcessOutputStreamArgs,
    StreamResult,
)
from procflow.processors._base import ProcessorViolation, ViolationCallback, notify_violation
from procflow.processors._regex_filter.chunks import Replacement
from procflow.processors._regex_filter.match import Hit, merge_hits, scan_final
from procflow.processors._regex_filter.messages import KnownText, MessageCheck
from procflow.processors._regex_filter.options import as_rule, check_options, check_preset, warn_matches
from procflow.processors._regex_filter.presets import PresetName, preset_patterns
from procflow.processors._regex_filter.report import (
    REDACTED_MATCH,
    RegexPhase,
    RegexRedaction,
    RegexRedactionDetail,
    RegexStrategy,
    RegexTextPhase,
    apply_regions,
    redaction_entry,
)
from procflow.processors._regex_filter.rules import (
    DEFAULT_TIMEOUT,
    CompiledRule,
    NeedleIndex,
    RegexRule,
    compile_preset,
    compile_rule,
)
from procflow.processors._regex_filter.session import STATE_KEY as _STATE_KEY
from procflow.processors._regex_filter.session import Hooks, Session, Stream
from procflow.processors._regex_filter.stream import (
    DEFAULT_HOLD_LIMIT,
    RegexStreamRedactor,
    Release,
    StreamScanner,
)
from procflow.processors._tool_results import RESULT_FIELDS, judge_tool_results, on_tool_results_only

__all__ = [
    "DEFAULT_TIMEOUT",
    "RegexFilterProcessor",
    "RegexPhase",
    "RegexPreset",
    "RegexRedaction",
    "RegexRedactionDetail",
    "RegexRule",
    "RegexStrategy",
    "RegexStreamRedactor",
]

RegexPreset = PresetName
"""A built-in rule set: ``"pii"``, ``"secrets"`` or ``"urls"``."""

_PASS_AHEAD = INSIDE_TEXT_TYPES
"""Chunks that pass ahead of held text without ending it (the text they interrupt stays one text)."""


class RegexFilterProcessor:
    """Filters message text with regular expressions: ``block`` (tripwire), ``redact`` or ``warn``.

    Args:
        rules: Custom rules: :class:`RegexRule` objects or mappings ``{"name", "pattern", "replacement"}``.
        presets: Built-in rule sets: ``"pii"`` (emails, phone numbers, SSNs, credit cards), ``"secrets"``
            (API keys, bearer tokens, AWS keys, private keys), ``"urls"`` (HTTP/HTTPS URLs).
        strategy: ``"block"`` (default) stops with a tripwire (``retry=False``); ``"redact"`` replaces
            matches; ``"warn"`` logs a warning and passes content unchanged.
        phase: ``"input"`` (input messages), ``"output"`` (the output stream and result) or ``"all"``.
        include_redacted_values: Put the redacted text in each redaction report entry (off by default:
            those values are exactly the data being removed).
        stream_carryover_size: The context window of streamed text, in characters (default 128): how
            long a custom rule's *complete* match that more text could still extend is held before it
            is accepted as it is. Matches in progress are held back whole whatever this is (partial
            matching says where they start), up to ``stream_hold_limit``.
        tool_arguments: Also check every string inside tool-call arguments, with the same strategy:
            in the messages (``process_input``, ``process_output_result``; reports name the part,
            ``part_index``, and the ``arg_path``) and, on output, in each streamed ``tool-call`` chunk
            before the tool runs (``redact`` changes what the tool receives, ``block`` stops the run
            before the tool is called; reports name the ``tool_call_id``, ``tool_name`` and
            ``arg_path``). Default: on when ``phase`` is ``"input"`` or ``"all"``, off for
            ``"output"``.
        stream_hold_limit: The most characters a stream holds back for one possible match (default
            65,536). Past it the stream fails closed: a tripwire (``error="stream_hold_limit"``)
            rather than releasing the start of a secret.
        system_messages: Also check the system messages in ``process_input`` (the untagged ones, before
            the input messages), with the same strategy; redacted ones replace them. Off by default:
            in an agent they are the app's instructions, not input to judge. On where system text is
            data, as in a stored conversation (the bundled guard of ``procflow run`` checks system and
            developer turns this way).
        id: Processor id (default ``"regex-filter"``); give another to use two filters in one pipeline.

    Raises:
        ConfigurationError: No rule and no preset, an unknown preset/strategy/phase, an invalid rule or
            pattern, or a ``stream_carryover_size`` that is not a positive integer.
    """

    name = "Regex Filter"
    description = "Blocks, redacts or flags text matching regular expressions (no model call)."
    process_data_parts = True

    def __init__(
        self,
        *,
        rules: Sequence[RegexRule | Mapping[str, Any]] | None = None,
        presets: Sequence[RegexPreset] | None = None,
        strategy: RegexStrategy = "block",
        phase: RegexPhase = "all",
        include_redacted_values: bool = False,
        stream_carryover_size: int = 128,
        stream_hold_limit: int = DEFAULT_HOLD_LIMIT,
        tool_arguments: bool | None = None,
        system_messages: bool = False,
        id: str = "regex-filter",
    ) -> None:
        size, limit = check_options(strategy, phase, stream_carryover_size, stream_hold_limit)
        self.stream_hold_limit = limit
        self.tool_arguments = phase != "output" if tool_arguments is None else bool(tool_arguments)
        self.system_messages = bool(system_messages)
        self.id = id
        self.strategy: RegexStrategy = strategy
        self.phase: RegexPhase = phase
        self.include_redacted_values = include_redacted_values
        self.stream_carryover_size = size
        self.rules = tuple(as_rule(rule) for rule in rules or ())
        self.presets = tuple(check_preset(name) for name in presets or ())
        if not self.rules and not self.presets:
            raise ConfigurationError(
                "RegexFilterProcessor needs at least one rule or preset, e.g. presets=['pii'] or "
                "rules=[RegexRule('internal-id', r'INTERNAL-\\d{6}')]"
            )
        self.on_violation: ViolationCallback | None = None
        compiled: list[CompiledRule] = []  # presets first: on an equal-length tie a preset wins
        for name in dict.fromkeys(self.presets):
            compiled.extend(compile_preset(p, len(compiled)) for p in preset_patterns(name))
        compiled.extend(compile_rule(rule, len(compiled)) for rule in self.rules)
        self._rules: tuple[CompiledRule, ...] = tuple(compiled)
        self._needles = NeedleIndex(self._rules)
        # Custom rules only: every text runs every rule, so there is nothing to select per text.
        self._every_text: list[CompiledRule] | None = (
            list(self._rules) if all(rule.custom for rule in self._rules) else None
        )

    def __repr__(self) -> str:
        return (
            f"RegexFilterProcessor(id={self.id!r}, presets={list(self.presets)}, rules={len(self.rules)}, "
            f"strategy={self.strategy!r}, phase={self.phase!r})"
        )

    # --- whole texts -------------------------------------------------------------------------------

    def redact(self, text: str) -> str:
        """Return ``text`` with every match replaced, whatever the strategy (no report, no tripwire)."""
        hits = self._find(text)
        if not hits:
            return text
        return apply_regions(text, merge_hits(hits), report=False, include_values=False)[0]

    def stream_redactor(self) -> RegexStreamRedactor:
        """A redactor for text arriving in pieces: ``feed(piece)`` returns what is safe to release,
        ``close()`` the rest; the pieces joined equal :meth:`redact` of the whole text."""
        return RegexStreamRedactor(
            self._rules,
            window=self.stream_carryover_size,
            needles=self._needles,
            limit=self.stream_hold_limit,
        )

    def _find(self, text: str) -> list[Hit]:
        return self._scan(self._rules_for(text), text)

    def _rules_for(self, text: str) -> list[CompiledRule]:
        """The rules that may match in ``text``: those with a needle in it, and every custom rule."""
        every = self._every_text
        return every if every is not None else self._needles.select(text)[0]

    @staticmethod
    def _scan(rules: list[CompiledRule], text: str) -> list[Hit]:
        if not rules:
            return []
        if len(rules) == 1:
            return scan_final(rules[0], text, 0)
        hits: list[Hit] = []
        for rule in rules:
            hits.extend(scan_final(rule, text, 0))
        return hits

    async def process_input(self, args: ProcessInputArgs) -> list[Message] | ProcessInputResult | None:
        """Check the input messages (and, with ``system_messages``, the system messages first); block,
        redact or warn. Skipped when ``phase="output"``."""
        if self.phase == "output":
            return None
        if not self.system_messages or not args.system_messages:
            return await self._check_messages(args.messages, "process_input", args)
        check = self._new_check("process_input", tool_arguments=self.tool_arguments)
        system = [check.message(message) for message in args.system_messages]
        system_changed, check.changed = check.changed, False
        messages = [check.message(message) for message in args.messages]
        await self._settle(check, check.found, args)
        if not system_changed:
            return messages if check.changed else None
        return ProcessInputResult(messages=messages if check.changed else None, system_messages=list(system))

    @on_tool_results_only
    async def process_input_step(self, args: ProcessInputStepArgs) -> ProcessInputStepResult | None:
        """Check the results of the tools run during this call, each once, before the model reads them.

        A tool's result is new text the next model call reads (the input phase has run by then): every
        string of it (and of its output for the model) is checked with the strategy, as the input's
        texts are. Skipped when ``phase="output"``.
        """
        if self.phase == "output":
            return None
        return await judge_tool_results(args, partial(self._check_result, args))

    async def _check_result(
        self, args: ProcessInputStepArgs, message: Message, at: int, part: ToolInvocationPart, _: list[str]
    ) -> ToolInvocationPart:
        check = self._new_check("process_input_step")
        checked = check.tool_result(part, message.id, at)
        await self._settle(check, check.found, args)
        return checked

    async def process_output_result(self, args: ProcessOutputResultArgs) -> list[Message] | None:
        """Check the response messages (and the result text). Skipped when ``phase="input"``."""
        if self.phase == "input":
            return None
        extra = args.result.text
        if not extra:
            return await self._check_messages(args.messages, "process_output_result", args)
        rules = self._rules_for(extra)
        hits = self._scan(rules, extra)
        known = KnownText(self._find, extra, hits, needle_free=not rules)
        if hits and self.strategy == "redact":
            args.result.text = apply_regions(extra, merge_hits(hits), report=False, include_values=False)[0]
        return await self._check_messages(
            args.messages, "process_output_result", args, known=known, extra_hits=hits
        )

    async def _check_messages(
        self,
        messages: list[Message],
        phase: RegexTextPhase,
        args: ProcessorArgs,
        *,
        known: KnownText | None = None,
        extra_hits: list[Hit] | None = None,
    ) -> list[Message] | None:
        check = self._new_check(phase, known, tool_arguments=self.tool_arguments)
        out = [check.message(message) for message in messages]
        found = check.found
        if not found and extra_hits and self.strategy != "redact":
            found = [
                {"rule": hit.rule.name, "match": REDACTED_MATCH, "index": hit.start} for hit in extra_hits
            ]
        await self._settle(check, found, args)
        return out if check.changed else None

    def _new_check(
        self,
        phase: RegexTextPhase,
        find: Callable[[str], list[Hit]] | None = None,
        *,
        tool_arguments: bool = False,
    ) -> MessageCheck:
        """A pass over texts for ``phase``, with this filter's strategy and reporting."""
        redact = self.strategy == "redact"
        return MessageCheck(
            find=self._find if find is None else find,
            phase=phase,
            redact=redact,
            report=redact and self.on_violation is not None,
            include_values=self.include_redacted_values,
            tool_arguments=tool_arguments,
        )

    async def _settle(self, check: MessageCheck, found: list[dict[str, Any]], args: ProcessorArgs) -> None:
        """After a pass: ``block`` aborts on what it found, ``warn`` logs it, ``redact`` reports."""
        if found and self.strategy == "block":
            self._block(args, found)
        if found and self.strategy == "warn":
            warn_matches(self.id, check.phase, [entry["rule"] for entry in found])
        for detail in check.details:
            await self._report(detail)

    def _block(self, args: ProcessorArgs, matches: list[dict[str, Any]]) -> None:
        unique = {repr(sorted(entry.items())): entry for entry in matches}
        matches = list(unique.values())
        rules = ", ".join(dict.fromkeys(str(entry["rule"]) for entry in matches))
        args.abort(
            f"Content blocked by {self.name}: matched {rules}",
            retry=False,
            metadata={"processor_id": self.id, "matches": matches, "strategy": "block"},
        )

    async def _report(self, detail: RegexRedactionDetail) -> None:
        count = len(detail["redactions"])
        rules = ", ".join(dict.fromkeys(entry["rule"] for entry in detail["redactions"]))
        await notify_violation(
            self,
            ProcessorViolation(
                processor_id=self.id, message=f"Redacted {count} match(es): {rules}", detail=dict(detail)
            ),
        )

    # --- streams -----------------------------------------------------------------------------------

    async def process_output_stream(self, args: ProcessOutputStreamArgs) -> StreamResult:
        """Check streamed text, holding back only text where a match may still be in progress.

        Settled text is released with every chunk. Reasoning, source, file, response-metadata and
        ``data-*`` chunks pass at once, ahead of held text, which stays one text with what follows;
        text-start/text-end chunks wait in place with the text (text split across text blocks is
        checked as one text); any other chunk (a tool call, a step's end) first releases the held
        text, checked as final. The strings a tool call's arguments (with ``tool_arguments``), a
        tool's result or a ``data-*`` chunk's data carry are checked as the chunk passes. A custom
        rule that times out, or a possible match longer than ``stream_hold_limit``, stops the stream
        with a tripwire: the runner would let the chunk through.
        """
        try:
            chunk = args.part
            if chunk.type == "text-delta":
                stream: Stream | None = args.state.get(_STATE_KEY)
                text = chunk.payload.get("text")
                if stream is not None and stream.redacts and type(text) is str and text:
                    return await self._take(stream, chunk, text, args)
            return await self._on_chunk(args)
        except (PatternTimeoutError, StreamHoldLimitError) as exc:
            self._stopped(args, exc)

    def open_output_stream(self, args: ProcessOutputStreamArgs) -> Session | Hooks:
        """Bind the stream hooks to one stream (called by the stream runner): see :class:`Session`.

        A subclass that overrides either hook gets its own hooks as they are.
        """
        cls = type(self)
        if (
            cls.process_output_stream is not RegexFilterProcessor.process_output_stream
            or cls.flush_output_stream is not RegexFilterProcessor.flush_output_stream
        ):
            return Hooks(self.process_output_stream, self.flush_output_stream)
        return Session(self)

    def _stopped(self, args: ProcessorArgs, exc: PatternTimeoutError | StreamHoldLimitError) -> NoReturn:
        if isinstance(exc, PatternTimeoutError):
            self._timed_out(args, exc)
        self._over_limit(args, exc)

    async def flush_output_stream(self, args: ProcessOutputStreamArgs) -> list[Chunk] | None:
        """End of stream: release the held text, checked as final."""
        stream: Stream | None = args.state.get(_STATE_KEY)
        if stream is None or self.phase == "input":
            return None
        try:
            return await self._finish(stream, args)
        except PatternTimeoutError as exc:
            self._timed_out(args, exc)

    def _over_limit(self, args: ProcessorArgs, exc: StreamHoldLimitError) -> NoReturn:
        args.abort(
            f"Content blocked by {self.name}: a possible match grew past stream_hold_limit ({exc.limit}), "
            "the text could not be checked",
            retry=False,
            metadata={"processor_id": self.id, "strategy": self.strategy, "error": "stream_hold_limit"},
        )

    def _timed_out(self, args: ProcessorArgs, exc: PatternTimeoutError) -> NoReturn:
        args.abort(
            f"Content blocked by {self.name}: rule {exc.rule!r} timed out, the text could not be checked",
            retry=False,
            metadata={
                "processor_id": self.id,
                "strategy": self.strategy,
                "error": "pattern_timeout",
                "rule": exc.rule,
            },
        )

    async def _on_chunk(self, args: ProcessOutputStreamArgs) -> StreamResult:
        chunk = args.part
        if self.phase == "input":
            return chunk
        kind = chunk.type
        stream: Stream | None = args.state.get(_STATE_KEY)
        if kind == "tool-result" or (kind == "tool-call" and self.tool_arguments):
            out = [] if stream is None else await self._finish(stream, args)
            out.append(await self._check_carried(chunk, args))
            return out
        if kind.startswith("data-"):
            return await self._check_carried(chunk, args)  # ahead of held text, which stays one text
        if kind == "text-delta":
            text = chunk.payload.get("text")
            if not isinstance(text, str) or not text:
                return chunk
            if stream is None:
                stream = args.state[_STATE_KEY] = self._new_stream()
            if self.strategy == "warn":
                self._warn_feed(stream, text)
                return chunk
            return await self._take(stream, chunk, text, args)
        if stream is None or kind in _PASS_AHEAD or kind.startswith("data-"):
            return chunk
        if kind == "text-start" or kind == "text-end":
            if not stream.queue.items:
                return chunk
            stream.queue.add_marker(chunk)
            return None
        out = await self._finish(stream, args)
        out.append(chunk)
        return out

    async def _check_carried(self, chunk: Chunk, args: ProcessorArgs) -> Chunk:
        """The strings a non-text chunk carries, checked as it passes: a tool call's arguments (before
        the tool runs: the step's tool call is built from this chunk, so ``redact`` changes what the
        tool receives and ``block`` stops it from running), a tool's result, a ``data-*`` chunk's data.
        """
        kind, payload = chunk.type, chunk.payload
        fields: tuple[tuple[str, Literal["result", "model_output"] | None], ...]
        if kind.startswith("data-"):
            where: dict[str, Any] = {"chunk_type": kind}
            fields = (("data", None),)
        else:
            where = {
                "tool_call_id": str(payload.get("tool_call_id", "")),
                "tool_name": str(payload.get("tool_name", "")),
            }
            fields = (("args", None),) if kind == "tool-call" else tuple((f, f) for f in RESULT_FIELDS)
        check = self._new_check("process_output_stream")
        changed: dict[str, Any] = {}
        for name, field in fields:  # ``field``: the result's field a report names
            value = payload.get(name)
            if value is None:
                continue
            new = check.carried(value, where, field)
            if new is not value:
                changed[name] = new
        await self._settle(check, check.found, args)
        return Chunk(kind, {**payload, **changed}, chunk.transient) if changed else chunk

    def _warn_feed(self, stream: Stream, text: str) -> None:
        try:
            release = stream.scanner.feed(text)
        except StreamHoldLimitError:
            log.warning("regex_filter_hold_limit", processor_id=self.id)
            stream.scanner = StreamScanner(
                self._rules,
                window=self.stream_carryover_size,
                needles=self._needles,
                limit=self.stream_hold_limit,
            )
            return
        if release is not None:
            self._warn_release(release)

    def _new_stream(self) -> Stream:
        scanner = StreamScanner(
            self._rules,
            window=self.stream_carryover_size,
            needles=self._needles,
            limit=self.stream_hold_limit,
        )
        return Stream(scanner, redacts=self.strategy != "warn")

    async def _finish(self, stream: Stream, args: ProcessorArgs) -> list[Chunk]:
        del args.state[_STATE_KEY]
        if not stream.scanner.pending and not stream.queue.items:
            return []
        release = stream.scanner.scan(final=True)
        if self.strategy == "warn":
            self._warn_release(release)
            return []
        out = await self._release(stream, release, args)
        return [out] if isinstance(out, Chunk) else list(out or [])

    async def _take(self, stream: Stream, chunk: Chunk, text: str, args: ProcessorArgs) -> StreamResult:
        out = stream.queue.take(chunk, text)
        if out is None or type(out) is Chunk:
            return out
        return await self._release(stream, out, args) if isinstance(out, Release) else out

    async def _release(self, stream: Stream, release: Release, args: ProcessorArgs) -> StreamResult:
        regions = release.regions
        if not regions:
            return stream.queue.release_plain(release)
        if self.strategy == "block":
            matches = [
                {"rule": hit.rule.name, "match": REDACTED_MATCH, "index": release.start + hit.start}
                for region in regions
                for hit in region.hits
            ]
            self._block(args, matches)
        replacements = [region.replacement(release.text) for region in regions]
        report = self.on_violation is not None
        out, reports = stream.queue.release(release, replacements, report=report)
        for replaced in reports:
            await self._report(self._chunk_detail(release, replaced))
        return out[0] if len(out) == 1 else out

    def _chunk_detail(self, release: Release, replaced: list[Replacement]) -> RegexRedactionDetail:
        entries: list[RegexRedaction] = []
        for region, index, replacement in replaced:
            value = release.text[region.start : region.end] if self.include_redacted_values else None
            entries.append(redaction_entry(region, index, replacement, value))
        return {"strategy": "redact", "phase": "process_output_stream", "redactions": entries}

    def _warn_release(self, release: Release) -> None:
        if release.regions:
            names = [hit.rule.name for region in release.regions for hit in region.hits]
            warn_matches(self.id, "process_output_stream", names)

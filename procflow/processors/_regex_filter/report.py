"""What :class:`RegexFilterProcessor` reports: redaction details for ``on_violation``, tripwire matches."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from procflow.processors._regex_filter.match import Region

__all__ = [
    "REDACTED_MATCH",
    "RegexPhase",
    "RegexRedaction",
    "RegexRedactionDetail",
    "RegexStrategy",
    "RegexTextPhase",
    "apply_regions",
    "redaction_entry",
]

RegexStrategy = Literal["block", "redact", "warn"]
"""What happens on a match: stop with a tripwire, replace the match, or log and pass it."""

RegexPhase = Literal["input", "output", "all"]
"""Where the filter applies: input messages, the output stream and result, or both."""

RegexTextPhase = Literal[
    "process_input", "process_input_step", "process_output_stream", "process_output_result"
]
"""The hook that redacted a text, as named in a :class:`RegexRedactionDetail`."""

REDACTED_MATCH = "[REDACTED_MATCH]"
"""What tripwire metadata shows instead of a matched value."""


class RegexRedaction(TypedDict):
    """One redacted span, offsets relative to the text of the message part or stream chunk.

    ``overlapping_rules`` is set only when matches of *different* rules were merged into the span
    (nested ones included: an e-mail inside a URL), each name once; ``value`` only
    when the processor was built with ``include_redacted_values=True``.

    A message's text parts that the model reads as one text are checked joined: a span that starts in
    one part and runs on into later ones (``"ana.lopez@"`` + ``"example.org"``) is reported once, by
    the part where it starts (its ``index`` is in that part's text, its ``length`` over the parts
    joined), with ``part_indexes`` listing every part it covers. The replacement is put in that first
    part; what the span covers of the later parts is removed from them.
    """

    rule: str
    index: int
    length: int
    replacement: str
    overlapping_rules: NotRequired[list[str]]
    part_indexes: NotRequired[list[int]]
    value: NotRequired[str]


class RegexRedactionDetail(TypedDict):
    """``ProcessorViolation.detail`` for a redaction report (the ``block`` strategy reports its tripwire
    metadata instead: ``processor_id``, ``matches``, ``strategy``).

    ``message_id`` is absent for stream chunks; ``part_index`` (the index in the message's parts, which
    include non-text parts) is absent for the flattened ``content.content`` text and for stream chunks.
    Text parts the model reads as one text are checked joined: a match is in the detail of the part
    where it starts, whichever parts it runs on into (see :class:`RegexRedaction`).
    ``arg_path`` (keys and list indexes) is set for a string inside a tool call's arguments, whose
    part ``part_index`` is; for a string inside a tool's result (``process_input_step``), ``field``
    says which (``"result"``, or ``"model_output"``: what the model is shown) and ``arg_path`` is the
    path inside it. In ``process_output_stream``, a string inside a streamed tool call's arguments
    or a tool's result is named by the call's ``tool_call_id`` and ``tool_name`` (and the result's
    ``field``), one inside a ``data-*`` chunk by its ``chunk_type``; ``arg_path`` is the path inside.
    """

    strategy: Literal["redact"]
    phase: RegexTextPhase
    message_id: NotRequired[str]
    tool_call_id: NotRequired[str]
    tool_name: NotRequired[str]
    chunk_type: NotRequired[str]
    part_index: NotRequired[int]
    arg_path: NotRequired[list[str | int]]
    field: NotRequired[Literal["result", "model_output"]]
    redactions: list[RegexRedaction]


def redaction_entry(region: Region, index: int, replacement: str, value: str | None) -> RegexRedaction:
    """The report entry of one replaced region."""
    entry: RegexRedaction = {
        "rule": region.chosen.name,
        "index": index,
        "length": region.end - region.start,
        "replacement": replacement,
    }
    if len(region.hits) > 1:
        names = region.rule_names
        if len(names) > 1:
            entry["overlapping_rules"] = names
    if value is not None:
        entry["value"] = value
    return entry


def apply_regions(
    text: str, regions: list[Region], *, report: bool, include_values: bool
) -> tuple[str, list[RegexRedaction]]:
    """Replace each region of ``text``; also return the report entries when ``report``."""
    pieces: list[str] = []
    entries: list[RegexRedaction] = []
    last = 0
    for region in regions:
        replacement = region.replacement(text)
        pieces.append(text[last : region.start])
        pieces.append(replacement)
        if report:
            value = text[region.start : region.end] if include_values else None
            entries.append(redaction_entry(region, region.start, replacement, value))
        last = region.end
    pieces.append(text[last:])
    return "".join(pieces), entries

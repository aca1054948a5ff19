"""UnicodeNormalizer: one canonical form for text before the model, other processors or the user see it."""

from __future__ import annotations

import unicodedata
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from procflow._messages.chunk import Chunk
from procflow._messages.message import Message
from procflow._messages.parts import Part, TextPart, ToolInvocationPart
from procflow.errors import ConfigurationError
from procflow.processors._args import (
    ProcessInputArgs,
    ProcessInputResult,
    ProcessInputStepArgs,
    ProcessInputStepResult,
    ProcessOutputResultArgs,
    ProcessOutputStreamArgs,
)
from procflow.processors._base import ProcessorBase
from procflow.processors._guards._texts import TOOL_FIELDS
from procflow.processors._tool_args import ArgPath, map_strings
from procflow.processors._tool_results import (
    RESULT_FIELDS,
    judge_tool_results,
    on_tool_results_only,
    rewrite_part,
)
from procflow.processors._unicode_stream import NormalizedStream
from procflow.processors._unicode_text import INVISIBLE, collapse, join_runs, strip_invisible, trim_ends

__all__ = ["UnicodeNormalizer"]

NormalForm = Literal["NFC", "NFKC", "NFD", "NFKD"]
NormalizerPhase = Literal["input", "output", "all"]

_PHASES = ("input", "output", "all")
_CARRIED = {"tool-call": ("args",), "tool-result": ("args", "result", "model_output")}
"""The payload fields of the stream's tool chunks, by chunk type: a tool part's fields."""
_STREAM = "stream"
"""This processor's ``state`` key: the :class:`NormalizedStream` of the request's output stream."""


class UnicodeNormalizer(ProcessorBase):
    """Normalizes text: Unicode form, invisible characters, whitespace, trimming.

    ``phase`` says which text: ``"input"`` (default) the input messages, before the model and the
    processors after this one read them; ``"output"`` the model's answer, streamed and whole, before
    the processors after this one (a redacting filter) and the user see it; ``"all"`` both. Listed in
    a phase it does not run in, it has none of that list's hooks (and the agent refuses it there).

    Every text a message carries is normalized: its text parts, its flattened ``content`` text, and the
    strings inside its tool calls' arguments and tool results (at any depth), in messages of any role
    (a replayed conversation's tool traffic reaches the model too). On input, the results of the tools
    run during the call are normalized as well, each once, before the next model call reads them
    (:meth:`process_input_step`). On output, the response messages (:meth:`process_output_result`:
    what a stored conversation's assistant turns go through in ``procflow run``) and the stream
    (:meth:`process_output_stream`) are normalized the same way.

    Steps, in order: Unicode normalization (NFKC by default: full-width letters, ligatures and other
    compatibility forms become their plain equivalents); optionally stripping invisible characters
    (control and format characters such as zero-width spaces, bidirectional overrides, soft hyphens and
    tag characters; the combining grapheme joiner; a variation selector that selects nothing) while
    keeping tab and line breaks; collapsing whitespace (runs of spaces and tabs become one space, runs
    of line breaks one ``\\n``; ``\\r\\n``, ``\\r`` and Unicode line separators count as line breaks);
    trimming.

    A message's text parts are one text, as :attr:`Message.text` joins them: a whitespace run across two
    parts collapses to one (never to none, which would glue their words), and trimming strips the start
    of the first part and the end of the last. Tool strings (and all the text of a ``tool`` message) are
    a tool's data, whose layout may matter (code, tables): they get the first two steps only.

    A streamed answer comes out as the same answer normalized whole, however it is split into deltas:
    each delta is normalized as it passes, and only the shortest tail a later character could still
    change is held back — a character a combining mark may yet compose with, the last grapheme cluster
    while stripping keeps emoji, trailing whitespace — and released with the next delta, before a chunk
    that ends the text part, or at the end of the stream (see :mod:`procflow.processors._unicode_stream`).
    Reasoning deltas are normalized as a text of their own. The strings of ``tool-call`` and
    ``tool-result`` chunks get the character steps, as the response message's tool parts do (so the
    tool runs with the arguments the message records); ``data-*`` chunks are left as they are.

    Emoji sequences rely on format characters (the zero-width joiner of 👨‍👩‍👧, the tag characters of
    subdivision flags such as 🏴󠁧󠁢󠁳󠁣󠁴󠁿). With ``preserve_emojis=True`` (default) stripping keeps those inside
    an emoji, and only those: tag characters that spell no subdivision flag go (hidden text), and so do
    variation selectors beyond the one after an emoji. With ``False`` format characters go everywhere,
    so joined emoji fall apart into their pieces.

    With ``system_messages=True`` the untagged system messages are normalized on input too, before the
    input messages, as :class:`RegexFilterProcessor`'s option of that name checks them: where system
    text is data (a stored conversation's system and developer turns in ``procflow run``), a filter
    after this one reads it plain, so a full-width secret there is redacted like its ASCII form.

    Messages whose text does not change are passed on as the very same objects.

    Args:
        form: The Unicode normalization form, or ``None`` to skip this step.
        strip_control_chars: Remove invisible characters (default ``False``).
        preserve_emojis: Keep emoji sequences whole when stripping (default ``True``).
        collapse_whitespace: Collapse whitespace runs (default ``True``).
        trim: Strip leading and trailing whitespace (default ``True``).
        phase: ``"input"`` (default), ``"output"`` or ``"all"``: the text it normalizes.
        system_messages: Also normalize the system messages in ``process_input`` (the untagged ones);
            normalized ones replace them. Off by default: in an agent they are the app's instructions.
            Set it where a filter after it has ``system_messages=True`` (the bundled guard does).
            No effect with ``phase="output"``.
        id: The processor id (default ``"unicode-normalizer"``).

    Raises:
        ConfigurationError: An unknown ``form`` or ``phase``.
    """

    name = "UnicodeNormalizer"

    def __init__(
        self,
        *,
        form: NormalForm | None = "NFKC",
        strip_control_chars: bool = False,
        preserve_emojis: bool = True,
        collapse_whitespace: bool = True,
        trim: bool = True,
        phase: NormalizerPhase = "input",
        system_messages: bool = False,
        id: str = "unicode-normalizer",
    ) -> None:
        if form not in (None, "NFC", "NFKC", "NFD", "NFKD"):
            raise ConfigurationError(
                f"UnicodeNormalizer form must be 'NFC', 'NFKC', 'NFD', 'NFKD' or None, got {form!r}"
            )
        if phase not in _PHASES:
            raise ConfigurationError(
                f"UnicodeNormalizer phase must be one of {_PHASES}, got {phase!r}: 'input' normalizes the "
                "input messages, 'output' the model's answer (stream and result), 'all' both"
            )
        self.id = id
        self.form = form
        self.strip_control_chars = strip_control_chars
        self.preserve_emojis = preserve_emojis
        self.collapse_whitespace = collapse_whitespace
        self.trim = trim
        self.phase: NormalizerPhase = phase
        self.system_messages = bool(system_messages)
        self.process_data_parts = phase != "input"  # a stored data chunk ends a text part (see streams)

    def __repr__(self) -> str:
        return f"UnicodeNormalizer(form={self.form!r}, phase={self.phase!r}, id={self.id!r})"

    @property
    def holds_output_stream(self) -> bool:
        """Whether streamed text is held back (a character at a time): so on the output side.

        Such a processor must see every chunk of the stream in order, so a workflow's ``.branch`` case
        (each chunk routed on its own) refuses it.
        """
        return self.phase != "input"

    def normalize(self, text: str) -> str:
        """Return ``text`` normalized with this processor's options."""
        text = self._characters(text)
        if self.collapse_whitespace:
            text = collapse(text)
        return text.strip() if self.trim else text

    def _characters(self, text: str) -> str:
        """The character steps: the normal form, then stripping (then the form again if that removed
        something: ``a``, a zero-width space, a combining acute is ``á``, not ``a`` and a loose mark)."""
        form = self.form
        if form is not None and not text.isascii():  # ASCII is the same in every normal form
            text = unicodedata.normalize(form, text)
        if self.strip_control_chars and INVISIBLE.search(text):
            text = strip_invisible(text, preserve_emojis=self.preserve_emojis)
            if form is not None and not text.isascii():
                text = unicodedata.normalize(form, text)
        return text

    def _texts(self, texts: list[str]) -> list[str]:
        """The texts, taken as one text, normalized: each keeps its own part of the result."""
        if len(texts) < 2:
            return [self.normalize(text) for text in texts]
        out = [self._characters(text) for text in texts]
        if self.collapse_whitespace:
            out = [collapse(text) for text in out]
            join_runs(out)
        if self.trim:
            trim_ends(out)
        return out

    def _tool_string(self, text: str, _path: ArgPath) -> str | None:
        new = self._characters(text)
        return None if new == text else new

    def _tool_part(self, part: ToolInvocationPart, fields: tuple[str, ...]) -> ToolInvocationPart:
        if self.form is None and not self.strip_control_chars:  # no character step: nothing to walk
            return part
        return rewrite_part(part, fields, lambda _field: self._tool_string)

    def _message(self, message: Message) -> Message:
        if message.role == "signal":
            return message
        content = message.content
        tool_output = message.role == "tool"  # all its text is a tool's: the character steps only
        texts = [part.text for part in content.parts if isinstance(part, TextPart)]
        normalized = iter([self._characters(t) for t in texts] if tool_output else self._texts(texts))
        parts: list[Part] = []
        changed = False
        for part in content.parts:
            if isinstance(part, TextPart):
                text = next(normalized)
                if text != part.text:
                    part = part.model_copy(update={"text": text})
                    changed = True
            elif isinstance(part, ToolInvocationPart):
                new_part = self._tool_part(part, TOOL_FIELDS)
                changed = changed or new_part is not part
                part = new_part
            parts.append(part)
        update: dict[str, Any] = {"parts": parts}
        fallback = content.content
        if fallback:
            text = self._characters(fallback) if tool_output else self.normalize(fallback)
            if text != fallback:
                update["content"], changed = text, True
        if not changed:
            return message
        return message.model_copy(update={"content": content.model_copy(update=update)})

    def _messages(self, messages: list[Message]) -> list[Message] | None:
        """The messages normalized; ``None`` when none changes."""
        out = [self._message(m) for m in messages]
        if all(new is old for new, old in zip(out, messages, strict=True)):
            return None
        return out

    # The hooks are properties: a phase the processor does not run in has no hook (``None``), so the
    # pipeline never calls it there, and an agent refuses it in a list it would do nothing in.

    @property
    def process_input(self) -> Callable[[ProcessInputArgs], list[Message] | ProcessInputResult | None] | None:
        """Normalize the input messages' text and tool traffic, and with ``system_messages`` the system
        messages' first; ``None`` when nothing changes.

        ``None`` (no hook) when ``phase="output"``.
        """
        return None if self.phase == "output" else self._process_input

    def _process_input(self, args: ProcessInputArgs) -> list[Message] | ProcessInputResult | None:
        if not self.system_messages or not args.system_messages:
            return self._messages(args.messages)
        system = self._messages(args.system_messages)
        messages = self._messages(args.messages)
        if system is None:
            return messages
        return ProcessInputResult(messages=messages, system_messages=list(system))

    @property
    def process_input_step(
        self,
    ) -> Callable[[ProcessInputStepArgs], Awaitable[ProcessInputStepResult | None]] | None:
        """Normalize the results of the tools run during this call, each once, before the model reads them.

        ``process_input`` sees the request's messages once, at the start; a tool's result is new text
        the next model call reads, and the processors after this one (a prompt-injection detector)
        judge it as this one leaves it. Tool results in the input are ``process_input``'s. ``None``
        (no hook) when ``phase="output"``.
        """
        return None if self.phase == "output" else self._process_input_step

    @on_tool_results_only
    async def _process_input_step(self, args: ProcessInputStepArgs) -> ProcessInputStepResult | None:
        if self.form is None and not self.strip_control_chars:  # tool strings get no other step
            return None
        return await judge_tool_results(args, self._result)

    async def _result(
        self, _message: Message, _at: int, part: ToolInvocationPart, _strings: list[str]
    ) -> ToolInvocationPart:
        return self._tool_part(part, RESULT_FIELDS)

    @property
    def process_output_result(self) -> Callable[[ProcessOutputResultArgs], list[Message] | None] | None:
        """Normalize the response messages as input messages are; ``None`` when nothing changes.

        The result's text (which the processors after this one search for what spans two messages)
        gets the character steps. ``None`` (no hook) when ``phase="input"``.
        """
        return None if self.phase == "input" else self._process_output_result

    def _process_output_result(self, args: ProcessOutputResultArgs) -> list[Message] | None:
        if args.result.text:
            args.result.text = self._characters(args.result.text)
        return self._messages(args.messages)

    @property
    def process_output_stream(self) -> Callable[[ProcessOutputStreamArgs], Chunk | list[Chunk] | None] | None:
        """Normalize streamed text as it passes, holding back only what a later character may change.

        ``None`` (no hook) when ``phase="input"``.
        """
        return None if self.phase == "input" else self._process_output_stream

    def _process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk | list[Chunk] | None:
        stream: NormalizedStream | None = args.state.get(_STREAM)
        if stream is None:
            stream = args.state[_STREAM] = NormalizedStream(self)
        return stream.push(args.part, args.retry_count)

    @property
    def flush_output_stream(self) -> Callable[[ProcessOutputStreamArgs], list[Chunk] | None] | None:
        """End of the stream (or of an attempt thrown away for a retry): release the held text.

        ``None`` (no hook) when ``phase="input"``.
        """
        return None if self.phase == "input" else self._flush_output_stream

    def _flush_output_stream(self, args: ProcessOutputStreamArgs) -> list[Chunk] | None:
        stream: NormalizedStream | None = args.state.get(_STREAM)
        return None if stream is None else stream.flush(args.retry_count)

    def _tool_chunk(self, chunk: Chunk) -> Chunk:
        """A ``tool-call`` or ``tool-result`` chunk with the character steps on its strings."""
        if self.form is None and not self.strip_control_chars:
            return chunk
        payload = chunk.payload
        update: dict[str, Any] = {}
        for name in _CARRIED[chunk.type]:
            value = payload.get(name)
            new = map_strings(value, self._tool_string)
            if new is not value:
                update[name] = new
        return Chunk(chunk.type, {**payload, **update}, chunk.transient) if update else chunk

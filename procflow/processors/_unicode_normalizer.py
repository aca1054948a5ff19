"""UnicodeNormalizer: one canonical form for input text before it reaches the model or other processors."""

from __future__ import annotations

import unicodedata
from typing import Any, Literal

import regex

from procflow._messages.message import Message
from procflow._messages.parts import Part, TextPart, ToolInvocationPart
from procflow.errors import ConfigurationError
from procflow.processors._args import ProcessInputArgs, ProcessInputStepArgs, ProcessInputStepResult
from procflow.processors._base import ProcessorBase
from procflow.processors._guards._texts import TOOL_FIELDS
from procflow.processors._tool_args import ArgPath
from procflow.processors._tool_results import (
    RESULT_FIELDS,
    judge_tool_results,
    on_tool_results_only,
    rewrite_part,
)

__all__ = ["UnicodeNormalizer"]

NormalForm = Literal["NFC", "NFKC", "NFD", "NFKD"]

# What stripping removes: control (Cc) characters but tab, line feed and carriage return; format (Cf)
# characters; the combining grapheme joiner (invisible, it only splits words for a reader that matches
# them); and a variation selector that selects nothing: VS15/VS16 only follow an emoji character, the
# others (ideographic variation sequences) only an ideograph, one each. A run of selectors after one
# character is how arbitrary data is hidden behind a single visible emoji.
_INVISIBLE_SOURCE = (
    r"[^\t\n\r\P{Cc}]|\p{Cf}|\N{COMBINING GRAPHEME JOINER}"
    r"|(?<!\p{Emoji})[\uFE0E\uFE0F]|(?<!\p{Ideographic})[\uFE00-\uFE0D\U000E0100-\U000E01EF]"
)
_INVISIBLE = regex.compile(_INVISIBLE_SOURCE)
_GRAPHEME = regex.compile(r"\X")
_EMOJI = regex.compile(r"[\p{Extended_Pictographic}\p{Regional_Indicator}\N{COMBINING ENCLOSING KEYCAP}]")
# Inside an emoji's grapheme cluster two kinds of format characters belong to the emoji: the zero-width
# joiner of 👨‍👩‍👧, and the tag characters of a subdivision flag (🏴, a subdivision id in tag letters
# and digits: a region's two letters and one to four more, then the cancel tag). Any other tag character
# attaches to the emoji before it all the same, and carries hidden text ("ASCII smuggling").
_EMOJI_KEEP = regex.compile(
    r"(\u200D|\U0001F3F4[\U000E0061-\U000E007A]{2}[\U000E0030-\U000E0039\U000E0061-\U000E007A]{1,4}"
    rf"\U000E007F)|{_INVISIBLE_SOURCE}"
)
_LINE_BREAKS = regex.compile(r"\r\n?|[\u2028\u2029\x85]")
_BREAK_RUN = regex.compile(r"[^\S\n]*\n\s*")
_SPACE_RUN = regex.compile(r"[^\S\n]+")
# Whitespace the three patterns above would change: any but a space or a line feed (the other line breaks
# are whitespace too), or two in a row. Text without it is collapsed already; one search, no new string.
_COLLAPSIBLE = regex.compile(r"[^\S \n]|\s\s")
# After collapsing, every whitespace run is one of these.
_RUNS = (" ", "\n")


def _collapse(text: str) -> str:
    """``text`` with each whitespace run made one space, or one line break if it holds one."""
    if not _COLLAPSIBLE.search(text):
        return text
    text = _LINE_BREAKS.sub("\n", text)
    return str(_SPACE_RUN.sub(" ", _BREAK_RUN.sub("\n", text)))


def _join_runs(texts: list[str]) -> None:
    """Make the whitespace runs that span two texts one run, as if the texts were one (in place).

    Each text is collapsed already. The run stays in the earlier text (``["cancel ", " order"]`` gives
    ``["cancel ", "order"]``), a line break if either side had one; a text that was only whitespace
    becomes empty, and the run carries on into the text after it.
    """
    open_run: int | None = None  # the index of the text ending the text so far in whitespace
    for index, text in enumerate(texts):
        if open_run is not None and text[:1] in _RUNS:
            before = texts[open_run]
            if text[0] == "\n" and before[-1] != "\n":
                texts[open_run] = before[:-1] + "\n"
            text = texts[index] = text[1:]
        if text:
            open_run = index if text[-1] in _RUNS else None


def _trim_ends(texts: list[str]) -> None:
    """Strip the whitespace at both ends of the texts taken as one text (in place)."""
    for index, text in enumerate(texts):
        texts[index] = text.lstrip()
        if texts[index]:
            break
    for index in range(len(texts) - 1, -1, -1):
        texts[index] = texts[index].rstrip()
        if texts[index]:
            break


class UnicodeNormalizer(ProcessorBase):
    """Normalizes the text of input messages: Unicode form, invisible characters, whitespace, trimming.

    Every text a message carries is normalized: its text parts, its flattened ``content`` text, and the
    strings inside its tool calls' arguments and tool results (at any depth), in messages of any role
    (a replayed conversation's tool traffic reaches the model too). The results of the tools run during
    the call are normalized as well, each once, before the next model call reads them
    (:meth:`process_input_step`).

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

    Emoji sequences rely on format characters (the zero-width joiner of 👨‍👩‍👧, the tag characters of
    subdivision flags such as 🏴󠁧󠁢󠁳󠁣󠁴󠁿). With ``preserve_emojis=True`` (default) stripping keeps those inside
    an emoji, and only those: tag characters that spell no subdivision flag go (hidden text), and so do
    variation selectors beyond the one after an emoji. With ``False`` format characters go everywhere,
    so joined emoji fall apart into their pieces.

    Messages whose text does not change are passed on as the very same objects.

    Args:
        form: The Unicode normalization form, or ``None`` to skip this step.
        strip_control_chars: Remove invisible characters (default ``False``).
        preserve_emojis: Keep emoji sequences whole when stripping (default ``True``).
        collapse_whitespace: Collapse whitespace runs (default ``True``).
        trim: Strip leading and trailing whitespace (default ``True``).
        id: The processor id (default ``"unicode-normalizer"``).
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
        id: str = "unicode-normalizer",
    ) -> None:
        if form not in (None, "NFC", "NFKC", "NFD", "NFKD"):
            raise ConfigurationError(
                f"UnicodeNormalizer form must be 'NFC', 'NFKC', 'NFD', 'NFKD' or None, got {form!r}"
            )
        self.id = id
        self.form = form
        self.strip_control_chars = strip_control_chars
        self.preserve_emojis = preserve_emojis
        self.collapse_whitespace = collapse_whitespace
        self.trim = trim

    def __repr__(self) -> str:
        return f"UnicodeNormalizer(form={self.form!r}, id={self.id!r})"

    def normalize(self, text: str) -> str:
        """Return ``text`` normalized with this processor's options."""
        text = self._characters(text)
        if self.collapse_whitespace:
            text = _collapse(text)
        return text.strip() if self.trim else text

    def _characters(self, text: str) -> str:
        """The character steps: the normal form, then stripping."""
        if self.form is not None and not text.isascii():  # ASCII is the same in every normal form
            text = unicodedata.normalize(self.form, text)
        if self.strip_control_chars and _INVISIBLE.search(text):
            text = self._strip(text)
        return text

    def _texts(self, texts: list[str]) -> list[str]:
        """The texts, taken as one text, normalized: each keeps its own part of the result."""
        if len(texts) < 2:
            return [self.normalize(text) for text in texts]
        out = [self._characters(text) for text in texts]
        if self.collapse_whitespace:
            out = [_collapse(text) for text in out]
            _join_runs(out)
        if self.trim:
            _trim_ends(out)
        return out

    def _strip(self, text: str) -> str:
        if not self.preserve_emojis:
            return str(_INVISIBLE.sub("", text))
        return str(_GRAPHEME.sub(_strip_cluster, text))

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

    def process_input(self, args: ProcessInputArgs) -> list[Message] | None:
        """Normalize the input messages' text and tool traffic; ``None`` when nothing changes."""
        out = [self._message(m) for m in args.messages]
        if all(new is old for new, old in zip(out, args.messages, strict=True)):
            return None
        return out

    @on_tool_results_only
    async def process_input_step(self, args: ProcessInputStepArgs) -> ProcessInputStepResult | None:
        """Normalize the results of the tools run during this call, each once, before the model reads them.

        ``process_input`` sees the request's messages once, at the start; a tool's result is new text
        the next model call reads, and the processors after this one (a prompt-injection detector)
        judge it as this one leaves it. Tool results in the input are ``process_input``'s.
        """
        if self.form is None and not self.strip_control_chars:  # tool strings get no other step
            return None
        return await judge_tool_results(args, self._result)

    async def _result(
        self, _message: Message, _at: int, part: ToolInvocationPart, _strings: list[str]
    ) -> ToolInvocationPart:
        return self._tool_part(part, RESULT_FIELDS)


def _strip_cluster(match: regex.Match[str]) -> str:
    """A grapheme cluster without its invisible characters; an emoji's keep what belongs to it."""
    cluster = match.group()
    if _EMOJI.search(cluster):
        return str(_EMOJI_KEEP.sub(lambda m: m.group(1) or "", cluster))
    return str(_INVISIBLE.sub("", cluster))

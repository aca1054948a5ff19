"""UnicodeNormalizer: one canonical form for input text before it reaches the model or other processors."""

from __future__ import annotations

import unicodedata
from typing import Literal

import regex

from procflow._messages.message import Message
from procflow._messages.parts import Part, TextPart
from procflow.errors import ConfigurationError
from procflow.processors._args import ProcessInputArgs
from procflow.processors._base import ProcessorBase

__all__ = ["UnicodeNormalizer"]

NormalForm = Literal["NFC", "NFKC", "NFD", "NFKD"]

# Control (Cc) and format (Cf) characters, except tab, line feed and carriage return.
_CONTROL = regex.compile(r"[^\t\n\r\P{Cc}]|\p{Cf}")
_GRAPHEME = regex.compile(r"\X")
_EMOJI = regex.compile(r"[\p{Extended_Pictographic}\p{Regional_Indicator}\N{COMBINING ENCLOSING KEYCAP}]")
_LINE_BREAKS = regex.compile(r"\r\n?|[\u2028\u2029\x85]")
_BREAK_RUN = regex.compile(r"[^\S\n]*\n\s*")
_SPACE_RUN = regex.compile(r"[^\S\n]+")
# Whitespace the three patterns above would change: any but a space or a line feed (the other line breaks
# are whitespace too), or two in a row. Text without it is collapsed already; one search, no new string.
_COLLAPSIBLE = regex.compile(r"[^\S \n]|\s\s")


class UnicodeNormalizer(ProcessorBase):
    """Normalizes the text of input messages: Unicode form, control characters, whitespace, trimming.

    Both places a message keeps text are normalized: its text parts and its flattened ``content`` text.
    Steps, in order: Unicode normalization (NFKC by default: full-width letters, ligatures and other
    compatibility forms become their plain equivalents); optionally stripping control and invisible
    format characters (zero-width spaces, bidirectional overrides, soft hyphens, …) while keeping tab
    and line breaks; collapsing whitespace (runs of spaces and tabs become one space, runs of line
    breaks one ``\\n``; ``\\r\\n``, ``\\r`` and Unicode line separators count as line breaks); trimming.

    Emoji sequences rely on format characters (the zero-width joiner of 👨‍👩‍👧, the tag characters of
    subdivision flags). With ``preserve_emojis=True`` (default) stripping leaves every emoji sequence
    whole; with ``False`` the format characters go everywhere, so joined emoji fall apart into their
    pieces.

    Messages whose text does not change are passed on as the very same objects.

    Args:
        form: The Unicode normalization form, or ``None`` to skip this step.
        strip_control_chars: Remove control and format characters (default ``False``).
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
        if self.form is not None and not text.isascii():  # ASCII is the same in every normal form
            text = unicodedata.normalize(self.form, text)
        if self.strip_control_chars and _CONTROL.search(text):
            text = self._strip(text)
        if self.collapse_whitespace and _COLLAPSIBLE.search(text):
            text = _LINE_BREAKS.sub("\n", text)
            text = _SPACE_RUN.sub(" ", _BREAK_RUN.sub("\n", text))
        if self.trim:
            text = text.strip()
        return text

    def _strip(self, text: str) -> str:
        if not self.preserve_emojis:
            return str(_CONTROL.sub("", text))
        return str(
            _GRAPHEME.sub(
                lambda m: m.group() if _EMOJI.search(m.group()) else _CONTROL.sub("", m.group()), text
            )
        )

    def _message(self, message: Message) -> Message:
        if message.role == "signal":
            return message
        parts: list[Part] = []
        changed = False
        for part in message.content.parts:
            if isinstance(part, TextPart):
                text = self.normalize(part.text)
                if text != part.text:
                    part = part.model_copy(update={"text": text})
                    changed = True
            parts.append(part)
        fallback = message.content.content
        if fallback:
            text = self.normalize(fallback)
            if text != fallback:
                fallback, changed = text, True
        if not changed:
            return message
        content = message.content.model_copy(update={"parts": parts, "content": fallback})
        return message.model_copy(update={"content": content})

    def process_input(self, args: ProcessInputArgs) -> list[Message] | None:
        """Normalize the input messages' text; ``None`` when nothing changes."""
        out = [self._message(m) for m in args.messages]
        if all(new is old for new, old in zip(out, args.messages, strict=True)):
            return None
        return out

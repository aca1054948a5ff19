"""UnicodeNormalizer on a stream: text normalized as it arrives, holding back only what may still change.

A streamed text comes out exactly as the same text normalized whole (:meth:`UnicodeNormalizer.normalize`,
a message's text parts taken as one text), however the model split it into deltas. Each step holds
back the shortest tail of the text that a character after it could still change, and releases the rest
with the delta that settled it:

- **Unicode form.** Normalizing text and then what follows it is normalizing the whole
  (``N(a + b) == N(N(a) + b)``), and in normalized text nothing after the last starter (a character
  of combining class 0) can reach before it: combining marks are only reordered among themselves, and
  a character only composes with the last starter before it. So the tail held is the combining marks
  after the last starter (but those of class 1 right after it, which no mark can sort before), and,
  in a composed form (NFC, NFKC), that starter too when a character after it can still change it: it
  is the first character of a canonical composition (``e`` of ``é``; ``<``, ``=``, ``>``), a composed
  character that takes one more mark sorted into it (``é`` then a dot below gives ``ẹ́``), or a Hangul
  leading consonant or LV syllable — and the marks already after it do not block all of that (no
  starter composes across a mark; a mark of the same class or higher blocks one). Every other
  character is a boundary after which nothing is held. ASCII text is normalized already: in a
  composed form only a last letter (``q`` and ``Q`` compose with nothing) or ``<=>`` is held, and
  nothing in NFD or NFKD. The character tables come from this Python's Unicode data, once.
- **Stripping invisible characters.** With ``preserve_emojis`` the last grapheme cluster is held (a
  joiner, a tag or a variation selector after it belongs to it); without, nothing is held, and the
  character before each delta is the context a variation selector's check reads.
- **Whitespace.** A trailing whitespace run is held until text after it shows what it collapses to
  (``" "`` then ``"\\n"`` is one line break) or the text ends (trimming drops it); leading whitespace
  is dropped until the text starts.

Text parts are one text for whitespace, as on messages (:meth:`UnicodeNormalizer._texts`): the held
whitespace carries over a part's end (it opens the next delta). The character steps apply per part,
as the stream's messages are collected: a chunk that ends a text part (a ``text-start`` or
``text-end``, a tool call, a reasoning delta, a stored ``data-*`` chunk, ...) first releases the held
characters as a delta of their own; ``reasoning-start``/``reasoning-end``, ``response-metadata`` and
transient ``data-*`` chunks split no part and pass ahead. Reasoning deltas are a text of their own,
one per run of reasoning (any other chunk but a transient one ends it). The end of the stream ends
the text (trimming its end). An attempt thrown away for a retry drops what it held.
"""

from __future__ import annotations

import unicodedata
from functools import cache, lru_cache
from typing import TYPE_CHECKING

from procflow._messages.chunk import TEXT_MARKER_TYPES, Chunk
from procflow.processors._unicode_text import GRAPHEME, INVISIBLE, collapse, strip_invisible

if TYPE_CHECKING:
    from procflow.processors._unicode_normalizer import NormalForm, UnicodeNormalizer

__all__ = ["ASCII_COMPOSABLE", "NormalizedStream", "composable"]

ASCII_COMPOSABLE = frozenset("<=>ABCDEFGHIJKLMNOPRSTUVWXYZabcdefghijklmnoprstuvwxyz")
"""The ASCII characters a character after them can compose with (``Q`` and ``q`` compose with none): the
ASCII part of :func:`composable`, known without building it. Stable: a character encoded later that
decomposes to existing ones is excluded from composition (Unicode's normalization stability policy)."""

_COMPOSED = frozenset({"NFC", "NFKC"})
"""The forms that compose: a starter may change with what follows it."""


@cache
def _compositions() -> tuple[frozenset[str], tuple[str, ...]]:
    """The starters of composed text a character after them can change, and the marks that compose.

    Built once, from the Unicode data of this Python (planes 0 and 1: no other holds a composition).
    """
    firsts: set[str] = set()
    marks: set[str] = set()
    ends: set[str] = set()  # composed characters whose decomposition ends in a combining mark
    combining = unicodedata.combining
    for code in range(0x20000):
        char = chr(code)
        decomposition = unicodedata.decomposition(char)
        if not decomposition or decomposition[0] == "<" or unicodedata.normalize("NFC", char) != char:
            continue  # no canonical decomposition, or one composed text never holds (an exclusion)
        first, second = (chr(int(code, 16)) for code in decomposition.split())
        firsts.add(first)
        if combining(second):
            marks.add(second)
        if combining(unicodedata.normalize("NFD", char)[-1]):
            ends.add(char)
    probes = tuple(sorted(marks))
    # Such a character changes when a mark that sorts before its last one composes with what precedes
    # that (``é`` then a dot below gives ``ẹ́``); most do not (``ṕ``: no ``p`` takes a dot below).
    changing = {c for c in ends - firsts if any(unicodedata.normalize("NFC", c + m)[0] != c for m in probes)}
    return frozenset(firsts | changing), probes


def composable() -> frozenset[str]:
    """The characters of composed (NFC or NFKC) text that a character right after them can change.

    The first character of every canonical composition, and the composed characters that take one
    more mark sorted into their decomposition (``é``, not ``ṕ``); Hangul syllables compose by rule, not
    from this data (see :func:`_composes`).
    """
    return _compositions()[0]


def _composes(char: str, starters: frozenset[str]) -> bool:
    """Whether a character right after ``char`` (a starter of composed text) can change it;
    ``starters``: :func:`composable`."""
    if char in starters:
        return True
    code = ord(char)
    if 0xAC00 <= code <= 0xD7A3:  # a Hangul syllable: an LV one takes a trailing consonant
        return (code - 0xAC00) % 28 == 0
    return 0x1100 <= code <= 0x1112  # a Hangul leading consonant takes a vowel


@lru_cache(maxsize=1024)
def _still_composes(form: NormalForm, tail: str) -> bool:
    """Whether a mark after ``tail`` (a starter that composes, then combining marks) can change the
    starter: the marks may block every composition it has (a mark of the same class or higher between
    them blocks), and no starter composes across a mark."""
    starter = tail[0]
    return any(
        not unicodedata.normalize(form, tail + mark).startswith(starter) for mark in _compositions()[1]
    )


def _settled_end(text: str, form: NormalForm, starters: frozenset[str] | None) -> int:
    """How much of ``text`` (normalized to ``form``) no character after it can change (the rest is
    held); ``starters``: :func:`composable` for a composed form, else ``None``."""
    end = len(text)
    combining = unicodedata.combining
    if not combining(text[-1]):  # the common case: a starter last
        return end - 1 if starters is not None and _composes(text[-1], starters) else end
    while end and combining(text[end - 1]):
        end -= 1
    if (
        end
        and starters is not None
        and _composes(text[end - 1], starters)
        and _still_composes(form, text[end - 1 :])
    ):
        return end - 1
    while end < len(text) and combining(text[end]) == 1:
        end += 1
    return end


class _Run:
    """One text normalized as it streams: a message's text parts, or one run of reasoning."""

    __slots__ = (
        "_before",
        "_chars",
        "_cluster",
        "_composed",
        "_normalizer",
        "_space",
        "_started",
        "_starters",
        "_stripped_chars",
        "template",
    )

    def __init__(self, normalizer: UnicodeNormalizer) -> None:
        self._normalizer = normalizer
        self._composed = normalizer.form in _COMPOSED
        self._starters: frozenset[str] | None = None  # composable(), in a composed form
        self._chars = ""  # normalized characters a character after them may still change
        self._cluster = ""  # the last grapheme cluster, not stripped yet (``preserve_emojis``)
        self._stripped_chars = ""  # ``_chars`` of the form applied again, after stripping
        self._before = ""  # the character before the next text to strip (without ``preserve_emojis``)
        self._space = ""  # trailing whitespace, settled by what comes after it
        self._started = False  # some non-whitespace text was released: trimming is behind
        self.template: Chunk | None = None
        """The last delta of this text: its payload (the block id) goes on released held text."""

    @property
    def active(self) -> bool:
        """Whether the text has begun (anything released or held)."""
        return self._started or bool(self._chars or self._cluster or self._stripped_chars or self._space)

    def push(self, text: str) -> str:
        """Take the next piece of the text; return the normalized text it settles (maybe ``""``)."""
        normalizer = self._normalizer
        if normalizer.form is not None:
            text, self._chars = self._formed(self._chars + text if self._chars else text)
        if normalizer.strip_control_chars:
            text = self._stripped(text, part_end=False)
            if normalizer.form is not None:  # stripping may join what it separated: the form again
                text, self._stripped_chars = self._formed(self._stripped_chars + text)
        if normalizer.collapse_whitespace or normalizer.trim:
            text = self._spaced(text)
        return text

    def end_part(self) -> str:
        """The text part ends: release the held characters (the held whitespace carries over)."""
        normalizer = self._normalizer
        form = normalizer.form
        text, self._chars = self._chars, ""
        if normalizer.strip_control_chars:
            text = self._stripped(text, part_end=True)
            if form is not None:
                text, self._stripped_chars = self._stripped_chars + text, ""
                if not text.isascii():
                    text = unicodedata.normalize(form, text)
        if normalizer.collapse_whitespace or normalizer.trim:
            text = self._spaced(text)
        return text

    def _formed(self, text: str) -> tuple[str, str]:
        """``text`` (held characters first) in the normal form: ``(settled, held)``."""
        if not text:
            return "", ""
        form = self._normalizer.form
        assert form is not None
        if text.isascii():  # normalized already: only its last character may compose
            cut = len(text) - 1 if self._composed and text[-1] in ASCII_COMPOSABLE else len(text)
        else:
            text = unicodedata.normalize(form, text)
            if self._composed and self._starters is None:
                self._starters = composable()  # built on first use, once per process
            cut = _settled_end(text, form, self._starters)
        return text[:cut], text[cut:]

    def end(self) -> str:
        """The text ends: release all it holds, trimmed; the next piece starts a new text."""
        text = self.end_part()
        space, self._space = self._space, ""
        self._started = False
        normalizer = self._normalizer
        if space and not normalizer.trim:
            text += collapse(space) if normalizer.collapse_whitespace else space
        return text

    def reset(self) -> None:
        """Drop what is held, unreleased (the attempt it came from was thrown away)."""
        self._chars = self._cluster = self._stripped_chars = self._before = self._space = ""
        self._started = False

    def _stripped(self, text: str, part_end: bool) -> str:
        if self._normalizer.preserve_emojis:
            if self._cluster:
                text = self._cluster + text
            cut = len(text)
            if not part_end:
                # Two ASCII characters but CR LF always have a cluster boundary between them (every
                # character that extends a cluster or joins two is beyond ASCII): search from there.
                tail = text[-2:]
                start = len(text) - 1 if tail.isascii() and tail != "\r\n" else 0
                for match in GRAPHEME.finditer(text, start):
                    cut = match.start()
            self._cluster = text[cut:]
            text = text[:cut]
            return strip_invisible(text, preserve_emojis=True) if INVISIBLE.search(text) else text
        before = self._before
        if text:
            self._before = text[-1]
        if part_end:
            self._before = ""
        context = before + text
        if not INVISIBLE.search(context, len(before)):
            return text
        return strip_invisible(context, preserve_emojis=False, pos=len(before))[len(before) :]

    def _spaced(self, text: str) -> str:
        if self._space:
            text = self._space + text
        body = text.rstrip()
        self._space = text[len(body) :]
        normalizer = self._normalizer
        if not body:
            if normalizer.trim and not self._started:
                self._space = ""  # leading whitespace: trimmed
            return ""
        if not self._started:
            self._started = True
            if normalizer.trim:
                body = body.lstrip()
        return collapse(body) if normalizer.collapse_whitespace else body


class NormalizedStream:
    """The output stream of one request through one UnicodeNormalizer (see the module docstring)."""

    __slots__ = ("_normalizer", "attempt", "reasoning", "text")

    def __init__(self, normalizer: UnicodeNormalizer) -> None:
        self._normalizer = normalizer
        self.text = _Run(normalizer)
        self.reasoning = _Run(normalizer)
        self.attempt = 0

    def push(self, chunk: Chunk, attempt: int) -> Chunk | list[Chunk] | None:
        """One chunk of attempt ``attempt`` (the retry count): what may be released now."""
        self.attempt = attempt
        kind = chunk.type
        if kind == "text-delta" or kind == "reasoning-delta":
            text = chunk.payload.get("text")
            if type(text) is not str or not text:
                return chunk
            run, other = (self.text, self.reasoning) if kind == "text-delta" else (self.reasoning, self.text)
            # A switch between text and reasoning ends the other's part (and a run of reasoning).
            before = self._ended(other, whole=other is self.reasoning) if other.active else None
            new = run.push(text)
            run.template = chunk
            out = (
                chunk
                if new == text
                else Chunk(kind, {**chunk.payload, "text": new}, chunk.transient)
                if new
                else None
            )
            if not before:
                return out
            return [*before, out] if out is not None else before
        if kind.startswith("data-") and chunk.transient:
            return chunk  # not stored: splits no part
        released = [] if kind in TEXT_MARKER_TYPES else self._ended(self.text, whole=False)
        if self.reasoning.active:
            released += self._ended(self.reasoning, whole=True)
        if kind == "tool-call" or kind == "tool-result":
            chunk = self._normalizer._tool_chunk(chunk)
        return [*released, chunk] if released else chunk

    def flush(self, attempt: int) -> list[Chunk] | None:
        """End of the stream: release the rest, or drop it if its attempt was thrown away."""
        if attempt != self.attempt:
            self.text.reset()
            self.reasoning.reset()
            return None
        out = self._ended(self.reasoning, whole=True) + self._ended(self.text, whole=True)
        return out or None

    def _ended(self, run: _Run, *, whole: bool) -> list[Chunk]:
        """End ``run``'s part (``whole``: the text itself), as a delta of what it released."""
        text = run.end() if whole else run.end_part()
        if not text:
            return []
        template = run.template
        kind = "reasoning-delta" if run is self.reasoning else "text-delta"
        payload = dict(template.payload) if template is not None else {}
        payload["text"] = text
        return [Chunk(kind, payload)]

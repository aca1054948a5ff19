"""The text rules of UnicodeNormalizer, on whole texts and streams: invisible characters, whitespace."""

from __future__ import annotations

import regex

__all__ = [
    "GRAPHEME",
    "INVISIBLE",
    "RUNS",
    "collapse",
    "join_runs",
    "strip_invisible",
    "trim_ends",
]

# What stripping removes: control (Cc) characters but tab, line feed and carriage return; format (Cf)
# characters; the combining grapheme joiner (invisible, it only splits words for a reader that matches
# them); and a variation selector that selects nothing: VS15/VS16 only follow an emoji character, the
# others (ideographic variation sequences) only an ideograph, one each. A run of selectors after one
# character is how arbitrary data is hidden behind a single visible emoji.
_INVISIBLE_SOURCE = (
    r"[^\t\n\r\P{Cc}]|\p{Cf}|\N{COMBINING GRAPHEME JOINER}"
    r"|(?<!\p{Emoji})[\uFE0E\uFE0F]|(?<!\p{Ideographic})[\uFE00-\uFE0D\U000E0100-\U000E01EF]"
)
INVISIBLE = regex.compile(_INVISIBLE_SOURCE)
GRAPHEME = regex.compile(r"\X")
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
RUNS = (" ", "\n")
"""After collapsing, every whitespace run is one of these."""


def collapse(text: str) -> str:
    """``text`` with each whitespace run made one space, or one line break if it holds one."""
    # Every whitespace character but the space is unprintable (Zs, Zl, Zp, Cc): printable text without
    # two spaces in a row is collapsed already, known without the (slower) pattern search.
    if (text.isprintable() and "  " not in text) or not _COLLAPSIBLE.search(text):
        return text
    text = _LINE_BREAKS.sub("\n", text)
    return str(_SPACE_RUN.sub(" ", _BREAK_RUN.sub("\n", text)))


def join_runs(texts: list[str]) -> None:
    """Make the whitespace runs that span two texts one run, as if the texts were one (in place).

    Each text is collapsed already. The run stays in the earlier text (``["cancel ", " order"]`` gives
    ``["cancel ", "order"]``), a line break if either side had one; a text that was only whitespace
    becomes empty, and the run carries on into the text after it.
    """
    open_run: int | None = None  # the index of the text ending the text so far in whitespace
    for index, text in enumerate(texts):
        if open_run is not None and text[:1] in RUNS:
            before = texts[open_run]
            if text[0] == "\n" and before[-1] != "\n":
                texts[open_run] = before[:-1] + "\n"
            text = texts[index] = text[1:]
        if text:
            open_run = index if text[-1] in RUNS else None


def trim_ends(texts: list[str]) -> None:
    """Strip the whitespace at both ends of the texts taken as one text (in place)."""
    for index, text in enumerate(texts):
        texts[index] = text.lstrip()
        if texts[index]:
            break
    for index in range(len(texts) - 1, -1, -1):
        texts[index] = texts[index].rstrip()
        if texts[index]:
            break


def strip_invisible(text: str, *, preserve_emojis: bool, pos: int = 0) -> str:
    """``text`` without its invisible characters (see :data:`INVISIBLE`); ``text[:pos]`` is left as it
    is, and only read as the context of what follows it.

    With ``preserve_emojis`` each grapheme cluster is stripped on its own, and an emoji's keeps what
    belongs to it; ``pos`` must then be 0 (a cluster's stripping needs no context).
    """
    if not preserve_emojis:
        return str(INVISIBLE.sub("", text, pos=pos))
    return str(GRAPHEME.sub(_strip_cluster, text))


def _strip_cluster(match: regex.Match[str]) -> str:
    """A grapheme cluster without its invisible characters; an emoji's keep what belongs to it."""
    cluster = match.group()
    if _EMOJI.search(cluster):
        return str(_EMOJI_KEEP.sub(lambda m: m.group(1) or "", cluster))
    return str(INVISIBLE.sub("", cluster))

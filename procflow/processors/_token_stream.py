r"""Exact token counts of a growing text, and the longest prefix of it that fits a budget.

**Why a text cannot be counted chunk by chunk.** BPE counts do not add up across a cut: ``"blue "`` and
``"sky "`` are two tokens each, ``"blue sky "`` is three. Nor do they grow with the text: a prefix can
count *more* than a longer text (``" unbelievab"`` needs more tokens than ``" unbelievable"``). So the
count that matters is the count of the whole accumulated text, and the longest prefix that fits may lie
past a prefix that does not.

**Counting incrementally.** tiktoken cuts a text into *pieces* with its pre-tokenizer regex and runs BPE
on each piece alone, so a text's count is the sum of its pieces' counts. When text is appended, only the
pieces at the end can change; the earlier ones are *settled*. We keep ``settled`` (the tokens of the
settled pieces) and ``tail`` (the text after them); from time to time (every 256 characters, or on every
chunk near the limit) the settled start of the tail is counted once and moved into ``settled``. A chunk
then costs about its own length, whatever the length of the text before it.

**Which pieces are settled (o200k_base), and why.** The regex is matched left to right: the piece at a
position is the first path, in backtracking order, that matches there, and whether a path matches depends
only on the characters it *inspects*. The pattern has no look-behind, anchor or word boundary, so nothing
looks left of where a match starts; and every character starts some alternative, so pieces tile the text.
If every path tried for the pieces before a position ``p`` inspects only characters of the text, those
pieces are the same after any append, and the text from ``p`` on is matched as if it stood alone.

1. *Fixed boundaries* (the common case, found with one reverse search). Let the character before ``p``
   be a letter or digit (``\p{L}``, ``\p{N}``), and the character at ``p`` be neither a letter, a mark,
   nor an apostrophe (nor a digit after a digit). A letter is only ever part of a letter piece (the
   optional lead ``[^\r\n\p{L}\p{N}]`` and the punctuation class both exclude letters), a digit only of
   a ``\p{N}{1,3}`` piece. A letter run stops at a non-letter; a contraction (``'s``, ``'ll``…) needs an
   apostrophe or letters; a digit run stops at a non-digit; whitespace and punctuation runs cannot cross
   the letter or digit before ``p``. So ``p`` is a piece boundary, and the paths for the pieces before it
   inspect at most the character at ``p`` — a character already received, which also fails each of those
   tests exactly as the end of the text would. Hence the pieces before ``p`` are settled, and even
   ``count(text[:p])`` is exactly their tokens.
2. *Last two pieces* (the fallback for a long tail without a fixed boundary: digits, symbols, emoji and
   spaces). Write m1..mk for the tail's pieces. A piece can change only if a path tried at its start
   inspected the end of the text. Past the end ``e`` of the piece it produces, an alternative inspects:
   for letters, the character at ``e`` and, when that is an apostrophe, one or two more (``'re``, ``'ll``);
   reaching the end then means what follows is ``'`` or ``'`` plus a letter, one piece, so the piece is
   m(k-1) or mk. For digits and punctuation, the one character at ``e``: reaching the end means the piece
   ends at the end (mk). For whitespace, ``\s*[\r\n]+`` inspects the whole run plus one character; if
   the run reaches the end, the piece ends after its last line break and the rest of the run (no line
   break) is one ``\s+(?!\S)`` piece, or there is no line break and the run is one piece: m(k-1) or mk.
   So m1..m(k-2) are settled. A *prefix* that ends at such a boundary may be cut differently on its own
   (``"a  "`` is one whitespace piece, in ``"a  1"`` two), so here the settled tokens are computed from
   suffixes, which start at a boundary and so are cut exactly as in the text:
   ``count(tail) - count(tail[cut:])``.

The boundaries are found with the pattern in the ``regex`` module; the counts are always tiktoken's, and
the property tests compare the incremental count with tiktoken's count of the whole text after every
chunk of many texts and chunkings.

**Deciding the cut in a stream** (:class:`PrefixBudget`). The answer is the longest prefix ending on a
grapheme-cluster boundary that fits. A prefix ``n`` counts ``settled + count(tail + text up to n)`` with
the settled part as it stood before the chunk that reaches ``n`` (that snapshot holds for every longer
text), so each chunk searches its own boundaries, newest first, and releases up to the first that fits;
the end of the text so far is not yet a boundary (the next chunk may extend its cluster), so it waits.
Once ``settled`` alone is over the room, no longer prefix can fit (counts are never negative): the cut is
final and the rest is dropped. Far from the limit — ``settled + bytes(tail) + SLACK_BYTES`` within the
room, and a text never has more tokens than UTF-8 bytes — every prefix up to the chunk's end fits, so
the chunk passes whole without a search.

Other counters (a custom ``count(text)``, or a tiktoken encoding other than o200k_base, whose regex the
argument above does not cover) have no settled part: the whole accumulated text is counted on each
chunk, which is exact, and their counts are assumed never to shrink as the text grows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import regex

from procflow.processors._tokens import _O200K_PATTERN, TiktokenCounter, TokenCounter, count_checked

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["PrefixBudget", "TextTally", "longest_prefix", "truncate_to_tokens"]

_PIECES = regex.compile(_O200K_PATTERN)
_SETTLE_CHARS = 256
_FIXED = regex.compile(r"(?r)(?<=[\p{L}\p{N}])(?=[^\p{L}\p{M}\p{N}'])|(?<=\p{L})(?=\p{N})")
"""The last *fixed* piece boundary of a text: after a letter or digit, before what cannot join it."""
_CLUSTER_BREAK = regex.compile(
    r"(?rV1)(?<=[\p{Grapheme_Cluster_Break=Other}--\p{Extended_Pictographic}])"
    r"(?=[\p{Grapheme_Cluster_Break=Other}--\p{Extended_Pictographic}])"
)
"""The last certain grapheme cluster boundary found cheaply: between two characters no rule joins."""
_GRAPHEME = regex.compile(r"\X")

SLACK_BYTES = 64
"""Headroom, in UTF-8 bytes, below which a stream is checked position by position.

While ``settled + bytes(tail) + SLACK_BYTES`` stays within the room, every prefix up to the end of the
chunk fits (a text never counts more tokens than it has bytes), so the chunk passes whole. This is also
how far a grapheme cluster cut by a chunk boundary may grow before the stream could have released its
first half while the whole text would have been cut before it.
"""


def _pieces_for(counter: TokenCounter) -> regex.Pattern[str] | None:
    """The o200k_base pre-tokenizer when ``counter`` counts with it (the case proven above), else None."""
    if (
        isinstance(counter, TiktokenCounter)
        and counter.name == "o200k_base"
        and counter.encoding._pat_str == _O200K_PATTERN
    ):
        return _PIECES
    return None


class TextTally:
    """The exact token count of a text that grows by appending (see the module docstring).

    Settling is lazy: the tail is cut down to its last two pieces once it is longer than
    ``_SETTLE_CHARS`` or when :meth:`settle` is called, and the total is counted when asked for.

    Attributes:
        settled: Tokens of the settled pieces (they cannot change, whatever is appended).
        tail: The text after the settled pieces.
        tail_bytes: The UTF-8 length of ``tail`` (a text never has more tokens than bytes).
    """

    __slots__ = ("_count", "_pieces", "_settle_at", "_total", "settled", "tail", "tail_bytes")

    def __init__(self, counter: TokenCounter) -> None:
        self._pieces = _pieces_for(counter)
        if self._pieces is not None and isinstance(counter, TiktokenCounter):
            encode = counter.encoding.encode_ordinary
            self._count: Callable[[str], int] = lambda text: len(encode(text))
        else:
            self._count = lambda text: count_checked(counter, text)
        self.settled = 0
        self.tail = ""
        self.tail_bytes = 0
        self._total: int | None = 0
        self._settle_at = _SETTLE_CHARS

    @property
    def incremental(self) -> bool:
        """Whether the counter's pieces are known, so the settled part grows (else the tail is the text)."""
        return self._pieces is not None

    @property
    def total(self) -> int:
        """Tokens of the whole text."""
        if self._total is None:
            self._total = self.settled + self._count(self.tail)
        return self._total

    def count(self, text: str) -> int:
        """Count ``text`` with the tally's counter."""
        return self._count(text)

    def push(self, text: str) -> None:
        """Append ``text``."""
        self.tail += text
        self.tail_bytes += _utf8_len(text)
        self._total = None
        if len(self.tail) > self._settle_at:
            self.settle()

    def settle(self) -> None:
        """Move the settled start of the tail into ``settled`` (see the module docstring)."""
        if self._pieces is None:
            return
        tail = self.tail
        fixed = _FIXED.search(tail)
        if fixed is not None:
            cut = fixed.start()
            self.settled += self._count(tail[:cut])
            self.tail = tail[cut:]
            self.tail_bytes = _utf8_len(self.tail)
            self._total = None
        elif len(tail) > _SETTLE_CHARS:
            self._settle_pieces()
        # A tail that would not shrink (one long piece: a run of emoji, digits or CJK without a break) is
        # looked at again only once it has doubled, so appending stays linear overall.
        self._settle_at = max(_SETTLE_CHARS, 2 * len(self.tail))

    def _settle_pieces(self) -> None:
        """No fixed boundary in a long tail (digits, symbols, spaces): keep only its last two pieces."""
        assert self._pieces is not None
        tail = self.tail
        pieces = self._pieces.findall(tail)
        if len(pieces) > 2:
            rest = tail[len(tail) - len(pieces[-1]) - len(pieces[-2]) :]
            rest_tokens = self._count(rest)
            self.settled += self._count(tail) - rest_tokens
            self.tail = rest
            self.tail_bytes = _utf8_len(rest)
            self._total = self.settled + rest_tokens


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _grapheme_ends(text: str) -> list[int]:
    """The end offset of every grapheme cluster of ``text`` (which must start at a cluster boundary)."""
    ends: list[int] = []
    position = 0
    for cluster in _GRAPHEME.findall(text):
        position += len(cluster)
        ends.append(position)
    return ends


def _char_ends(text: str) -> list[int]:
    return list(range(1, len(text) + 1))


class PrefixBudget:
    """Decides, chunk by chunk, the longest prefix of a growing text that counts at most ``room`` tokens.

    Feed the text with :meth:`push` and end it with :meth:`finish`; each returns the text that is now
    certain to be part of that prefix. Whatever the chunking, the released text is the same: the longest
    prefix, ending between grapheme clusters (or between code points with ``graphemes=False``), whose
    count is within ``room``. Text may be held back while that is undecided: the last cluster (it may
    still grow), and, once the count is over the room, the pieces that may still merge into fewer
    tokens. :attr:`cut` becomes true once it is certain that text is dropped; nothing is released after.

    Args:
        counter: The token counter.
        room: The budget in tokens.
        graphemes: Cut between grapheme clusters (default) or between code points.
    """

    __slots__ = ("_boundaries", "_context", "_held", "cut", "room", "tally")

    def __init__(self, counter: TokenCounter, room: int, *, graphemes: bool = True) -> None:
        self.tally = TextTally(counter)
        self.room = room
        self.cut = False
        self._boundaries: Callable[[str], list[int]] = _grapheme_ends if graphemes else _char_ends
        self._held = ""  # received, not released; starts at the end of the released text
        self._context = ""  # released text since the last certain cluster boundary

    @property
    def tokens(self) -> int:
        """Tokens of all the text received so far."""
        return self.tally.total

    def _far(self) -> bool:
        tally = self.tally
        return tally.incremental and tally.settled + tally.tail_bytes + SLACK_BYTES <= self.room

    def push(self, text: str) -> str:
        """Append ``text``; return the text released now (possibly ``""``)."""
        if self.cut or not text:
            return ""
        tally = self.tally
        base_settled, base_tail = tally.settled, tally.tail
        start = len(self._held)
        self._held += text
        tally.push(text)
        if self._far():
            return self._release_all()
        tally.settle()  # near the limit: settle now, so the tests below are as tight as they can be
        if self._far():
            return self._release_all()
        released = self._search(base_settled, base_tail, start)
        over = tally.settled > self.room if tally.incremental else tally.total > self.room
        if over:
            self._drop()
        return released

    def finish(self) -> str:
        """End the text; return the rest of the prefix that fits (possibly ``""``)."""
        if self.cut or not self._held:
            return ""
        if self.tally.total <= self.room:
            return self._release_all()
        # Every boundary before the end was searched when its chunk came; the end itself is over the room.
        self._drop()
        return ""

    def _release_all(self) -> str:
        out, self._held = self._held, ""
        context = self._context + out
        if len(context) > 64:
            found = _CLUSTER_BREAK.search(context)
            # From a certain boundary on, or else from the start of the last cluster (also certain).
            context = context[found.start() :] if found is not None else _GRAPHEME.findall(context)[-1]
        self._context = context
        return out

    def _drop(self) -> None:
        self.cut = True
        self._held = ""

    def _search(self, base_settled: int, base_tail: str, start: int) -> str:
        """Release up to the largest certain boundary at or after ``start`` whose prefix fits."""
        held = self._held
        offset = len(self._context)
        # The end of the text is not a boundary yet (the next chunk may extend its cluster): left out.
        ends = [end - offset for end in self._boundaries(self._context + held)[:-1]]
        tally = self.tally
        monotone_fit = not tally.incremental and tally.total <= self.room
        for end in reversed(ends):
            if end < start:
                break
            if end <= 0:
                continue
            if monotone_fit or base_settled + tally.count(base_tail + held[start:end]) <= self.room:
                self._held = held[end:]
                self._context = ""
                return held[:end]
        return ""


def longest_prefix(counter: TokenCounter, text: str, max_tokens: int, *, graphemes: bool = True) -> str:
    """The longest prefix of ``text`` with at most ``max_tokens`` tokens, cut between grapheme clusters.

    Runs :class:`PrefixBudget` over the text in chunks of whole clusters (so no chunk boundary falls
    inside one), larger while the budget is far: about two counts of the text plus a search near the cut.
    """
    if max_tokens <= 0 or not text:
        return ""
    budget = PrefixBudget(counter, max_tokens, graphemes=graphemes)
    out: list[str] = []
    position = 0
    while position < len(text) and not budget.cut:
        tally = budget.tally
        spare = max_tokens - tally.settled - tally.tail_bytes - SLACK_BYTES
        wanted = max(16, spare // 4) if tally.incremental else max(16, len(text) // 8)
        size = 1 << (wanted.bit_length() - 1)  # a power of two: few distinct patterns to compile
        if graphemes:
            match = regex.compile(rf"\X{{1,{size}}}").match(text, position)
            end = match.end() if match is not None else len(text)
        else:
            end = position + size
        out.append(budget.push(text[position:end]))
        position = end
    out.append(budget.finish())
    return "".join(out)


def _grapheme_floor(text: str, end: int) -> int:
    """The largest grapheme-cluster boundary of ``text`` at or before ``end``."""
    if end >= len(text):
        return len(text)
    boundary = 0
    for match in _GRAPHEME.finditer(text, 0, len(text)):
        if match.end() > end:
            break
        boundary = match.end()
    return boundary


def _search_prefix(counter: TokenCounter, text: str, max_tokens: int) -> int:
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if count_checked(counter, text[:middle]) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    return low


def truncate_to_tokens(counter: TokenCounter, text: str, max_tokens: int) -> str:
    """Return the longest prefix of ``text`` that counts at most ``max_tokens``, never splitting a character.

    The cut falls between user-perceived characters (grapheme clusters): an accent stays on its letter
    and an emoji sequence such as a family or a skin-toned thumb stays whole or goes whole. The
    result's count is checked, so it never exceeds ``max_tokens``.

    With the default counter the prefix is the longest exactly, even where a shorter prefix does not
    fit (BPE counts can shrink as text grows). With another counter it uses ``counter.truncate`` when
    there is one, else a binary search, which finds the longest prefix when counts never shrink as the
    text grows.
    """
    if max_tokens <= 0 or not text:
        return ""
    if count_checked(counter, text) <= max_tokens:
        return text
    if _pieces_for(counter) is not None:
        return longest_prefix(counter, text, max_tokens)
    truncate = getattr(counter, "truncate", None)
    head = truncate(text, max_tokens) if callable(truncate) else None
    if isinstance(head, str) and text.startswith(head):
        end = len(head)
    else:
        end = _search_prefix(counter, text, max_tokens)
    end = _grapheme_floor(text, end)
    # Re-encoding a prefix can merge differently from the full text: shrink until it really fits.
    while end > 0 and count_checked(counter, text[:end]) > max_tokens:
        end = _grapheme_floor(text, end - 1)
    return text[:end]

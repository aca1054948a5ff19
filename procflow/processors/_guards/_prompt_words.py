"""The words of an agent's system prompt, and where an output repeats a run of them.

A leak is a run of ``min_words`` or more consecutive words of the output that is also a run of
consecutive words of one system message. Words are compared by content, not by code points: each is
read with the format characters inside it (zero-width spaces and joiners, soft hyphens, bidi
controls) dropped, then NFKC-normalised and case-folded, so a leak written in full-width letters,
with compatibility forms or with invisible characters inside its words is still found — while the
spans found are spans of the original text. CJK characters count as words, each on its own.

One suffix automaton over all the system messages' words answers, word by word, how long the
longest run ending at the current word is (the matching statistics): a leak scan is linear in the
output, whatever the prompt's length. :class:`LeakHold` uses the same automaton to keep a stream's
cuts away from leaks in progress (see there).
"""

from __future__ import annotations

import unicodedata
from collections import deque
from collections.abc import Callable, Sequence

import regex

from procflow.processors._guards._windows import SENTENCE_END

__all__ = ["LeakHold", "PromptWords"]

_CJK = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}"
_WORD = regex.compile(
    # A CJK character with the marks, format characters, conjoining Hangul vowels and finals, and
    # half-width kana sound marks that belong to it; or a run of other letters, digits and ``_``, each
    # with the marks and format characters that follow it (so ``Ze\u200bta`` is one word).
    rf"[{_CJK}][\p{{M}}\p{{Cf}}\u1160-\u11ff\uff9e\uff9f]*|(?:[[\p{{L}}\p{{N}}_]--[{_CJK}]][\p{{M}}\p{{Cf}}]*)+",
    regex.V1,
)
_FORMAT = regex.compile(r"\p{Cf}+")


def word_key(word: str) -> str:
    """How ``word`` is compared: without format characters, NFKC-normalised, case-folded."""
    if word.isascii():
        return word.lower()
    return unicodedata.normalize("NFKC", _FORMAT.sub("", word)).casefold()


class PromptWords:
    """A suffix automaton over the words of some system messages: which word runs they contain.

    Attributes:
        secrets: The system messages' texts, as given.
        empty: Whether they hold no word at all (then nothing can leak).
    """

    __slots__ = ("_length", "_link", "_next", "empty", "secrets")

    def __init__(self, secrets: Sequence[str]) -> None:
        self.secrets = tuple(secrets)
        self._next: list[dict[str, int]] = [{}]
        self._link = [-1]
        self._length = [0]
        last = 0
        for number, secret in enumerate(self.secrets):
            if number:
                # A separator no word equals, so no run spans two messages.
                last = self._extend(last, f"\x00{number}")
            for match in _WORD.finditer(secret):
                last = self._extend(last, word_key(match.group()))
        self.empty = len(self._next) == 1

    def _extend(self, last: int, word: str) -> int:
        nxt, link, length = self._next, self._link, self._length
        cur = len(nxt)
        nxt.append({})
        link.append(0)
        length.append(length[last] + 1)
        state = last
        while state != -1 and word not in nxt[state]:
            nxt[state][word] = cur
            state = link[state]
        if state != -1:
            other = nxt[state][word]
            if length[state] + 1 == length[other]:
                link[cur] = other
            else:
                clone = len(nxt)
                nxt.append(dict(nxt[other]))
                link.append(link[other])
                length.append(length[state] + 1)
                while state != -1 and nxt[state].get(word) == other:
                    nxt[state][word] = clone
                    state = link[state]
                link[other] = link[cur] = clone
        return cur

    def step(self, state: int, run: int, word: str) -> tuple[int, int]:
        """After ``word``: the new automaton state and the length of the longest run ending there.

        ``state`` and ``run`` are what the previous word gave (``0, 0`` at the start of a text).
        """
        nxt = self._next
        while state and word not in nxt[state]:
            state = self._link[state]
            run = self._length[state]
        target = nxt[state].get(word)
        return (0, 0) if target is None else (target, run + 1)

    def spans(self, text: str, min_words: int) -> list[tuple[int, int]]:
        """Character spans of ``text`` that repeat ``min_words`` or more consecutive prompt words.

        Overlapping or touching finds are merged into one span.
        """
        spans: list[tuple[int, int]] = []
        if self.empty:
            return spans
        state = run = 0
        starts: deque[int] = deque()  # where the words of the current run start
        for match in _WORD.finditer(text):
            state, run = self.step(state, run, word_key(match.group()))
            starts.append(match.start())
            while len(starts) > run:
                starts.popleft()
            if run >= min_words:
                start, end = starts[0], match.end()
                if spans and start <= spans[-1][1]:
                    spans[-1] = (spans[-1][0], end)
                else:
                    spans.append((start, end))
        return spans


class LeakHold:
    """Keeps a stream's cuts out of leaks in progress: the scrubber's :class:`HoldBack`.

    The segmenter proposes a cut at the last sentence end of the text so far. A cut is *safe* when
    no run of ``min_words`` prompt words of the whole text can cross it, whatever text follows; if
    every cut is safe, judging the text in segments finds exactly the leaks of the whole text. A cut
    is safe once two things hold: the run of prompt words ending at the latest word starts at or
    after it (a leak still to come starts inside that run), and no leak already seen spans it. So
    every sentence end read (and each proposed cut) is kept as a candidate; a candidate that a leak
    comes to span is dropped; and at each proposal the text is cut at the latest safe candidate, or
    not at all. Segments stay whole sentences (custom patterns and the judge see whole sentences, as
    before), and the released text is the same for any chunking.

    A leak that goes on is held until it ends — a run is at most one system message long, unless the
    output repeats the prompt's own repetitions; past ``limit`` held characters the stream fails
    closed (``OverflowError``). Each word is read once and each proposal costs at most
    ``min_words`` steps, so holding is linear in the stream.
    """

    __slots__ = (
        "_base",
        "_candidates",
        "_count",
        "_region_end",
        "_region_start",
        "_run",
        "_scanned",
        "_source",
        "_state",
        "_words",
        "limit",
        "min_words",
    )

    def __init__(self, source: Callable[[], PromptWords], *, min_words: int, limit: int) -> None:
        self._source = source
        self.min_words = min_words
        self.limit = limit
        self._words: PromptWords | None = None
        self._candidates: list[tuple[int, int]] = []  # (offset, words before it), oldest first
        self.reset()

    def reset(self) -> None:
        """Forget the text seen (the pending text was judged whole); read the system prompt afresh."""
        self._words = None
        self._state = self._run = self._count = 0
        self._base = self._scanned = 0  # offsets from the start of the block: pending text, words read
        self._region_start = self._region_end = -1  # word indices of the latest leak seen
        self._candidates.clear()

    def hold_back(self, text: str, cut: int) -> int:
        """How many leading characters of the pending ``text`` may be judged now; ``cut`` is proposed."""
        words = self._words
        if words is None:
            words = self._words = self._source()
        if words.empty:
            self._base = self._scanned = self._base + cut
            return cut
        base = self._base
        start = self._scanned - base
        if cut > start:
            self._scan(words, text, start, cut)
        frontier = self._count - self._run  # the index of the current run's first word
        candidates = self._candidates
        index = len(candidates)
        while index and (candidates[index - 1][1] > frontier or candidates[index - 1][0] > base + cut):
            index -= 1
        released = 0
        if index:
            released = candidates[index - 1][0] - self._base
            del candidates[:index]
            self._base += released
        if len(text) - released > self.limit:
            raise OverflowError("of one possible system-prompt leak")
        return released

    def _scan(self, words: PromptWords, text: str, start: int, cut: int) -> None:
        # Words and sentence ends in stream order: each sentence end is offered before the next word.
        base = self._base
        ends = [match.end() for match in SENTENCE_END.finditer(text, start, cut)]
        offered = 0
        for match in _WORD.finditer(text, start, cut):
            while offered < len(ends) and ends[offered] <= match.start():
                self._offer(base + ends[offered])
                offered += 1
            self._read(words, match.group())
        for end in ends[offered:]:
            self._offer(base + end)
        self._offer(base + cut)
        self._scanned = base + cut

    def _read(self, words: PromptWords, word: str) -> None:
        self._state, self._run = words.step(self._state, self._run, word_key(word))
        self._count += 1
        if self._run >= self.min_words:
            first = self._count - self._run
            if first > self._region_end:
                self._region_start = first
            self._region_end = self._count - 1
            # Candidates inside this leak would split it; those before its first word stay safe.
            candidates = self._candidates
            while candidates and candidates[-1][1] > self._region_start:
                candidates.pop()

    def _offer(self, offset: int) -> None:
        candidates = self._candidates
        if candidates and candidates[-1][1] == self._count:
            # No word between the two: the later cut releases the same words, with what follows them.
            candidates[-1] = (offset, self._count)
        else:
            candidates.append((offset, self._count))

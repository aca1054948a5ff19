"""A small Okapi BM25 index over short documents (tool names and descriptions), with a name boost."""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

__all__ = ["BM25Index", "ScoredDocument", "tokenize"]

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SPLIT = re.compile(r"[\W_]+")


def tokenize(text: str) -> list[str]:
    """Split ``text`` into lower-case terms at camelCase boundaries, ``_``, ``-`` and punctuation.

    One-character terms are dropped: in tool names and descriptions they carry no meaning and make
    every query match everything.
    """
    spaced = _CAMEL.sub(" ", text)
    return [term for term in _SPLIT.split(spaced.lower()) if len(term) > 1]


@dataclass(frozen=True, slots=True)
class ScoredDocument:
    """A search hit: the document key and its score (BM25 plus the name boost)."""

    key: str
    score: float


@dataclass(slots=True)
class _Document:
    key: str
    name_terms: frozenset[str]
    name_norm: str
    counts: Counter[str]
    length: int


@dataclass(slots=True)
class BM25Index:
    """Okapi BM25 over ``name + description`` documents, plus a boost when query terms hit the name.

    Scores: the BM25 sum over the query's distinct terms, plus ``name_boost`` for each query term that
    is one of the name's terms, plus ``exact_name_boost`` when the whole query is the name itself
    (``"send email"`` for ``send_email``). Ties keep insertion order, so results are deterministic.
    """

    k1: float = 1.2
    b: float = 0.75
    name_boost: float = 2.0
    exact_name_boost: float = 5.0
    _docs: list[_Document] = field(default_factory=list)
    _postings: dict[str, list[int]] = field(default_factory=dict)
    _total_length: int = 0

    def add(self, key: str, name: str, description: str) -> None:
        """Index a document named ``name`` whose body is ``description``, under ``key``."""
        name_terms = tokenize(name)
        terms = name_terms + tokenize(description)
        counts = Counter(terms)
        position = len(self._docs)
        self._docs.append(_Document(key, frozenset(name_terms), " ".join(name_terms), counts, len(terms)))
        for term in counts:
            self._postings.setdefault(term, []).append(position)
        self._total_length += len(terms)

    def search(self, query: str) -> list[ScoredDocument]:
        """Return every document with a positive score for ``query``, best first."""
        terms = list(dict.fromkeys(tokenize(query)))
        if not terms or not self._docs:
            return []
        count = len(self._docs)
        average = self._total_length / count or 1.0
        query_norm = " ".join(tokenize(query))
        # Every way to score (a term in the body, in the name, or the whole name) needs a query term in
        # the document, so only the documents in the terms' postings can match.
        candidates = sorted({p for term in terms for p in self._postings.get(term, ())})
        idf = {term: self._idf(term, count) for term in terms}
        hits: list[tuple[float, int, str]] = []
        for position in candidates:
            doc = self._docs[position]
            score = 0.0
            for term in terms:
                frequency = doc.counts.get(term, 0)
                if frequency:
                    norm = self.k1 * (1.0 - self.b + self.b * doc.length / average)
                    score += idf[term] * frequency * (self.k1 + 1.0) / (frequency + norm)
                if term in doc.name_terms:
                    score += self.name_boost
            if query_norm == doc.name_norm:
                score += self.exact_name_boost
            hits.append((-score, position, doc.key))
        hits.sort()
        return [ScoredDocument(key, -negative) for negative, _, key in hits]

    def _idf(self, term: str, count: int) -> float:
        df = len(self._postings.get(term, ()))
        return math.log(1.0 + (count - df + 0.5) / (df + 0.5))

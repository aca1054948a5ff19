"""Token counting: exact tiktoken o200k_base counts, loaded offline; truncation between characters."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import regex
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from procflow.errors import ConfigurationError
from procflow.processors import TiktokenCounter, TokenCounter, TokenLimiter
from procflow.processors._token_stream import truncate_to_tokens

MULTILINGUAL = [
    "Hello, world! How are you doing today?",
    "Ça va très bien, merci. L'été dernier, nous étions à Montréal.",
    "Grüße aus München – die Straße ist groß.",
    "Привет, мир! Как дела?",
    "你好，世界！今天天气很好。",
    "こんにちは世界。東京は晴れです。",
    "안녕하세요, 세계!",
    "مرحبا بالعالم، كيف حالك؟",
    "שלום עולם",
    "नमस्ते दुनिया, आप कैसे हैं?",
    "สวัสดีชาวโลก",
    "Γειά σου Κόσμε",
    "Emoji: 👍🏽 👨‍👩‍👧 🏴󠁧󠁢󠁳󠁣󠁴󠁿 🇫🇷 1️⃣",
    "def f(x):\n    return x ** 2  # comment\n\n\tprint(f(12345678))",
    '{"api_key": "sk-abc", "items": [1, 2, 3], "nested": {"ok": true}}',
    "Combining: e\u0301 a\u0308 n\u0303; ligature ﬁ; full-width ＡＢＣ",
    "Special text <|endoftext|> and <|endofprompt|> is ordinary text here.",
    "   leading and trailing spaces   \r\n\r\nwindows lines\n",
    "",
]
O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


class _NoSocket(socket.socket):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise OSError("network disabled in this test")


def _block_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket, "socket", _NoSocket)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tiktoken.Encoding:
    """tiktoken's own o200k_base (its pattern, special tokens and pinned hash), from a seeded cache."""
    spec = importlib.util.find_spec("bpe_openai")
    assert spec is not None and spec.submodule_search_locations
    packed = Path(spec.submodule_search_locations[0], "data", "o200k_base.tiktoken.gz").read_bytes()
    cache = tmp_path_factory.mktemp("tiktoken-cache")
    cache.joinpath(hashlib.sha1(O200K_URL.encode()).hexdigest()).write_bytes(gzip.decompress(packed))
    with pytest.MonkeyPatch.context() as mp:
        _block_network(mp)
        mp.setenv("TIKTOKEN_CACHE_DIR", str(cache))
        return tiktoken.get_encoding("o200k_base")


def test_counts_equal_tiktoken_on_multilingual_sample(reference: tiktoken.Encoding) -> None:
    """TokenLimiter.count matches tiktoken's o200k_base on text in many scripts, code and emoji."""
    limiter = TokenLimiter(100)
    for text in MULTILINGUAL:
        assert limiter.count(text) == len(reference.encode_ordinary(text)), text
    joined = "\n".join(MULTILINGUAL)
    assert TiktokenCounter().count(joined) == len(reference.encode_ordinary(joined))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_counts_equal_tiktoken_on_any_text(reference: tiktoken.Encoding, text: str) -> None:
    """Any text counts exactly as tiktoken's o200k_base counts it."""
    assert TiktokenCounter().count(text) == len(reference.encode_ordinary(text))


def test_encoding_loads_with_networking_disabled(tmp_path: Path, reference: tiktoken.Encoding) -> None:
    """A fresh process with socket creation refused still loads o200k_base and counts."""
    script = textwrap.dedent(
        """
        import socket

        class NoSocket(socket.socket):
            def __init__(self, *args, **kwargs):
                raise OSError("network disabled")

        def refuse(*args, **kwargs):
            raise OSError("network disabled")

        socket.socket = NoSocket
        socket.create_connection = refuse
        socket.getaddrinfo = refuse

        from procflow.processors import TiktokenCounter

        counter = TiktokenCounter()
        print(counter.count("Hello, world! 你好"), counter.encoding.name)
        """
    )
    env = {"TIKTOKEN_CACHE_DIR": str(tmp_path), "PATH": "", "PYTHONNOUSERSITE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=50, check=False
    )
    assert done.returncode == 0, done.stderr
    expected = len(reference.encode_ordinary("Hello, world! 你好"))
    assert done.stdout.split() == [str(expected), "o200k_base"]
    assert list(tmp_path.iterdir()) == []


def test_default_counter_is_a_token_counter() -> None:
    """TiktokenCounter satisfies the TokenCounter protocol and names its encoding."""
    counter = TiktokenCounter()
    assert isinstance(counter, TokenCounter)
    assert counter.name == "o200k_base"
    assert counter.count("") == 0


def test_counter_wraps_another_tiktoken_encoding(reference: tiktoken.Encoding) -> None:
    """TiktokenCounter(encoding) counts with the encoding it is given."""
    counter = TiktokenCounter(reference)
    assert counter.name == "o200k_base"
    assert counter.count("tokens") == len(reference.encode_ordinary("tokens"))


def test_truncate_never_splits_a_character() -> None:
    """Every truncation of mixed-script text is a prefix that fits and ends between graphemes."""
    counter = TiktokenCounter()
    text = "Grüße 👨‍👩‍👧 aus 東京 👍🏽 e\u0301t\u00e9 مرحبا"
    graphemes = {0, len(text)}
    graphemes.update(m.end() for m in regex.finditer(r"\X", text))
    for limit in range(counter.count(text) + 2):
        head = truncate_to_tokens(counter, text, limit)
        assert text.startswith(head)
        assert len(head) in graphemes
        assert counter.count(head) <= limit


def test_truncate_with_a_counter_without_truncate_uses_search() -> None:
    """A plain counter (count only) still gets the longest fitting prefix."""

    class Chars:
        def count(self, text: str) -> int:
            return len(text)

    assert truncate_to_tokens(Chars(), "abcdef", 4) == "abcd"
    assert truncate_to_tokens(Chars(), "abcdef", 10) == "abcdef"
    assert truncate_to_tokens(Chars(), "ab👍🏽", 3) == "ab"
    assert truncate_to_tokens(Chars(), "abc", 0) == ""


def test_counter_returning_a_negative_count_is_rejected() -> None:
    """A counter must return a non-negative int; anything else is a clear configuration error."""

    class Broken:
        def count(self, text: str) -> int:
            return -1

    with pytest.raises(ConfigurationError, match="non-negative int"):
        TokenLimiter(10, counter=Broken()).count("hello")


@pytest.mark.parametrize(
    ("data", "message"),
    [(None, "cannot read o200k_base.tiktoken.gz"), (b"not the rank file", "reinstall bpe-openai")],
)
def test_missing_or_wrong_data_fails_with_a_clear_error(
    tmp_path: Path, data: bytes | None, message: str
) -> None:
    """A missing or altered rank file raises TokenizerDataError saying what to reinstall."""
    package = tmp_path / "bpe_openai"
    package.joinpath("data").mkdir(parents=True)
    package.joinpath("__init__.py").write_text("")
    if data is not None:
        package.joinpath("data", "o200k_base.tiktoken.gz").write_bytes(gzip.compress(data))
    script = textwrap.dedent(
        """
        from procflow.errors import TokenizerDataError
        from procflow.processors import TokenLimiter

        try:
            TokenLimiter(10).count("hello")
        except TokenizerDataError as exc:
            print(exc)
        """
    )
    env = {"PYTHONPATH": str(tmp_path), "PATH": "", "PYTHONNOUSERSITE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=50, check=False
    )
    assert done.returncode == 0, done.stderr
    assert message in done.stdout

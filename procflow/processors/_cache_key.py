"""The deterministic response-cache key: a digest over the inputs that change a model step's answer."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict

from pydantic import BaseModel

from procflow.errors import ConfigurationError

__all__ = [
    "INTERNAL_KEY_PREFIX",
    "KEY_VERSION",
    "LONG_STRING_CHARS",
    "ModelIdentity",
    "ModelParts",
    "ResponseCacheKeyInputs",
    "build_key",
    "build_step_key",
]

KEY_VERSION = "rc2"
"""Prefix of every default key; bumped if the derivation ever changes, so old entries are never misread."""

INTERNAL_KEY_PREFIX = "procflow__"
"""Mapping keys with this prefix are procflow's own bookkeeping and never part of a key."""


class ModelIdentity(TypedDict, total=False):
    """Which model answers: provider, model id and the provider interface's specification version."""

    provider: str
    model_id: str
    spec_version: str | None


class ResponseCacheKeyInputs(TypedDict):
    """What the default key is derived from, and what a custom ``key`` function receives."""

    agent_id: str | None
    step_number: int
    scope: str | None
    model: ModelIdentity
    prompt: Sequence[Any]


def build_key(inputs: Mapping[str, Any]) -> str:
    """``rc2:<blake2b-256>`` over ``inputs``: dict order and procflow-internal keys do not matter.

    Short strings enter as their UTF-8 bytes with a length prefix (no JSON document is built); a
    string of :data:`LONG_STRING_CHARS` characters or more enters as the SHA-256 digest of its UTF-8
    bytes, remembered for the next key (a repeated request re-reads its long messages with one
    comparison instead of hashing them again); ``bytes`` anywhere (inline images or files) enter as
    the digest of their contents.
    """
    out: list[bytes] = []
    _feed(out.append, inputs)
    digest = hashlib.blake2b(b"".join(out), digest_size=32).hexdigest()
    return f"{KEY_VERSION}:{digest}"


ModelParts = tuple[str, str, str | None]
"""A model's ``(provider, model_id, spec_version)``, as :class:`ModelIdentity` holds them."""


def build_step_key(
    agent_id: str | None, step_number: int, scope: str | None, model: ModelParts | None, prompt: Any
) -> str:
    """:func:`build_key` over the five default inputs (the same key), without building them a mapping.

    ``model`` is ``None`` for no model (an empty :class:`ModelIdentity`). The encoding around the
    prompt — the input names, agent and model before it, scope and step after it — is the same for
    every request of one agent and user, so it is remembered by exact type and value instead of
    being walked again; only the prompt is fed anew.
    """
    ident = (agent_id, scope, step_number, model)
    frame = _FRAMES.get(ident) if _plain_frame(ident) else None
    if frame is None:
        frame = _frame(ident)
    head, tail = frame
    out: list[bytes] = []
    _feed(out.append, prompt)
    out.append(tail)
    state = head.copy()  # the hash already fed the head: copying its state beats a new one
    state.update(b"".join(out))
    return f"{KEY_VERSION}:{state.hexdigest()}"


_PLAIN = (str, type(None))
_FRAMES: dict[tuple[Any, ...], tuple[hashlib.blake2b, bytes]] = {}
"""Per plain ``(agent_id, scope, step_number, model)``: the hash fed the bytes before the prompt, and
the bytes after it."""
_FRAMES_KEPT = 1024


def _plain_frame(ident: tuple[Any, Any, Any, ModelParts | None]) -> bool:
    """Whether a frame may be remembered: plain strings, ``None`` and an ``int`` step only.

    Values that are equal but encode differently (``1`` and ``True``, a ``str`` subclass with its
    own ``==``) must never share an entry.
    """
    agent_id, scope, step_number, model = ident
    if type(agent_id) not in _PLAIN or type(scope) not in _PLAIN or type(step_number) is not int:
        return False
    if model is None:
        return True
    provider, model_id, version = model
    return type(provider) is str and type(model_id) is str and type(version) in _PLAIN


def _frame(ident: tuple[Any, Any, Any, ModelParts | None]) -> tuple[hashlib.blake2b, bytes]:
    """What :func:`build_key` feeds before the prompt (already hashed) and after it; kept when plain."""
    agent_id, scope, step_number, model = ident
    identity = (
        {} if model is None else dict(zip(("provider", "model_id", "spec_version"), model, strict=True))
    )
    head = b"{5:" + _encoded("agent_id") + _encoded(agent_id) + _encoded("model") + _encoded(identity)
    tail = _encoded("scope") + _encoded(scope) + _encoded("step_number") + _encoded(step_number) + b"}"
    frame = (hashlib.blake2b(head + _encoded("prompt"), digest_size=32), tail)
    if _plain_frame(ident):
        if len(_FRAMES) >= _FRAMES_KEPT:
            _FRAMES.clear()
        _FRAMES[ident] = frame
    return frame


LONG_STRING_CHARS = 1024
"""Strings this long enter a key as their digest, which :class:`_DigestMemo` remembers."""


class _DigestMemo:
    """SHA-256 digests of recently keyed long strings, found again by content, never by identity.

    A repeated request brings the same text as new objects (decoded again from JSON or storage), and
    hashing a new string (Python's ``hash`` included) reads all of it, so entries are filed under a
    cheap sample of the text (length, head, two middle slices, tail). A sample is only a hint, not a
    digest: texts that differ anywhere else share it. So a digest is reused only after a full
    comparison with the string it was computed from; that comparison is what proves the text is the
    same, and it is the cheapest proof there is (a ``memcmp``, several times faster than hashing the
    text again, which is the only alternative). Two texts that share a sample cost a hash, never a
    wrong key. Bounded by entries and characters held, least recently used first out; thread-safe.
    """

    __slots__ = ("_chars", "_entries", "_lock", "max_chars", "max_entries")

    def __init__(self, *, max_entries: int = 4096, max_chars: int = 8_000_000) -> None:
        self.max_entries = max_entries
        self.max_chars = max_chars
        self._entries: OrderedDict[tuple[int, str, str, str, str], tuple[str, bytes]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def digest(self, text: str) -> bytes:
        """SHA-256 of ``text``'s UTF-8 bytes (lone surrogates passed through)."""
        n = len(text)
        third = n // 3
        sample = (n, text[:32], text[third : third + 32], text[n - third : n - third + 32], text[-32:])
        found = self._entries.get(sample)
        if found is not None and found[0] == text:
            try:  # noqa: SIM105 - a hot path, and contextlib.suppress costs more than the rest of it
                self._entries.move_to_end(sample)
            except KeyError:  # another thread evicted it meanwhile
                pass
            return found[1]
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
        if n <= self.max_chars // 4:
            self._keep(sample, text, digest)
        return digest

    def _keep(self, sample: tuple[int, str, str, str, str], text: str, digest: bytes) -> None:
        with self._lock:
            entries = self._entries
            old = entries.pop(sample, None)  # another text with the same sample, or this one meanwhile
            if old is not None:
                self._chars -= len(old[0])
            entries[sample] = (text, digest)  # last: the most recently used
            self._chars += len(text)
            while len(entries) > self.max_entries or self._chars > self.max_chars:
                self._chars -= len(entries.popitem(last=False)[1][0])

    def clear(self) -> None:
        """Forget every digest."""
        with self._lock:
            self._entries.clear()
            self._chars = 0


_MEMO = _DigestMemo()


Emit = Callable[[bytes], None]


class _ModelFields:
    """A pydantic model class's fields in key order, each with its name already encoded."""

    __slots__ = ("header", "names", "prefixed")

    def __init__(self, kind: type[BaseModel]) -> None:
        names = sorted(name for name in kind.model_fields if not name.startswith(INTERNAL_KEY_PREFIX))
        self.names = frozenset(kind.model_fields)
        self.header = b"{%d:" % len(names)
        self.prefixed = [(name, _encoded(name)) for name in names]


def _encoded(value: Any) -> bytes:
    out: list[bytes] = []
    _feed(out.append, value)
    return b"".join(out)


_MODEL_TYPES: dict[type, _ModelFields] = {}
"""Types seen so far that are pydantic models and neither strings nor mappings."""


def _feed(emit: Emit, value: Any) -> None:
    kind = type(value)
    if kind is str:
        if len(value) < LONG_STRING_CHARS:
            data = value.encode("utf-8", "surrogatepass")
            emit(b"s%d:" % len(data))
            emit(data)
        else:
            emit(b"h" + _MEMO.digest(value))
    elif kind is dict:
        _feed_mapping(emit, value)
    elif kind in _MODEL_TYPES:
        _feed_model(emit, value.__dict__, _MODEL_TYPES[kind])
    elif kind is list or kind is tuple:
        emit(b"[%d:" % len(value))
        for item in value:
            model = _MODEL_TYPES.get(type(item))  # never str or dict, so first is the same order
            if model is None:
                _feed(emit, item)
            else:
                _feed_model(emit, item.__dict__, model)
        emit(b"]")
    elif value is None:
        emit(b"n")
    elif kind is bool:
        emit(b"T" if value else b"F")
    elif kind is int:
        emit(b"i%d;" % value)
    else:
        _feed_other(emit, value, kind)


def _feed_model(emit: Emit, fields: dict[str, Any], model: _ModelFields) -> None:
    """A model's fields, exactly as :func:`_feed_mapping` would feed them, without sorting each time."""
    if fields.keys() != model.names:  # built with model_construct() and a field left out
        _feed_mapping(emit, fields)
        return
    emit(model.header)
    for name, prefixed in model.prefixed:
        emit(prefixed)
        value = fields[name]
        if type(value) is str and len(value) < LONG_STRING_CHARS:  # most fields: as _feed would
            data = value.encode("utf-8", "surrogatepass")
            emit(b"s%d:" % len(data))
            emit(data)
        else:
            _feed(emit, value)
    emit(b"}")


def _feed_mapping(emit: Emit, mapping: Mapping[Any, Any]) -> None:
    items = [
        (k, v)
        for k, v in ((key if type(key) is str else str(key), v) for key, v in mapping.items())
        if not k.startswith(INTERNAL_KEY_PREFIX)
    ]
    items.sort(key=_first)
    emit(b"{%d:" % len(items))
    for k, v in items:
        _feed(emit, k)
        _feed(emit, v)
    emit(b"}")


def _first(item: tuple[str, Any]) -> str:
    return item[0]


def _feed_other(emit: Emit, value: Any, kind: type) -> None:
    """The rarer kinds: subclasses of the plain types, floats, bytes, models, other sequences."""
    if isinstance(value, str):
        # A subclass may redefine ==, so only plain strings use the memo.
        data = str.encode(value, "utf-8", "surrogatepass")
        if len(value) < LONG_STRING_CHARS:
            emit(b"s%d:" % len(data))
            emit(data)
        else:
            emit(b"h" + hashlib.sha256(data).digest())
    elif isinstance(value, Mapping):
        _feed_mapping(emit, value)
    elif isinstance(value, BaseModel):
        # The fields, as model_dump() would give them, uncopied.
        _MODEL_TYPES[kind] = model = _ModelFields(kind)
        _feed_model(emit, value.__dict__, model)
    elif isinstance(value, int):
        emit(b"i%d;" % value)
    elif isinstance(value, float):
        emit(b"f" + repr(value).encode() + b";")
    elif isinstance(value, bytes | bytearray | memoryview):
        emit(b"b" + hashlib.sha256(value).digest())
    elif isinstance(value, Sequence):
        _feed(emit, list(value))
    else:
        raise ConfigurationError(
            f"cannot derive a cache key from a {type(value).__name__}: key inputs must be JSON-like data "
            "(str, int, float, bool, None, bytes, lists, dicts or pydantic models)"
        )

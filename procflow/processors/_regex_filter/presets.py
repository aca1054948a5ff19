"""The built-in rule sets of :class:`RegexFilterProcessor`: ``pii``, ``secrets`` and ``urls``.

Every pattern is written to run in linear time on any input: quantifiers are bounded or possessive, no
repetition can split the same text two ways, and boundary look-behinds come *after* the first consumed
character so most positions are rejected by one character test. Where a check exists, a candidate must
also pass it in Python (Luhn and issuer ranges for cards, SSN ranges, digit counts for phone numbers,
a letter TLD for emails) — precision matters as much as recall: a guard that fires on order numbers
gets switched off.

A public rule name (``phone``, ``api-key``…) may be backed by several patterns; each pattern is searched
on its own, like a user rule, so a rejected candidate never hides a valid one that overlaps it. The phone
shapes, and why bare digit runs need a phone word before them, are in ``_regex_phones``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from procflow.processors._regex_filter import phones
from procflow.processors._regex_filter.phones import CJK, CJK_PUNCT, W

__all__ = [
    "CJK",
    "CJK_PUNCT",
    "DIGITS",
    "PARTIAL",
    "PRESET_NAMES",
    "PresetName",
    "PresetPattern",
    "SuffixChars",
    "preset_patterns",
]

PresetName = Literal["pii", "secrets", "urls"]
PRESET_NAMES: tuple[PresetName, ...] = ("pii", "secrets", "urls")

Validator = Callable[[str], bool]
Trimmer = Callable[[str, int, int], int]


@dataclass(frozen=True, slots=True)
class PresetPattern:
    """One built-in pattern.

    Attributes:
        rule: Public rule name shown in reports (several patterns may share one).
        pattern: Source for the ``regex`` package.
        replacement: Default replacement.
        group: Name of the group to redact instead of the whole match (``key = value`` forms keep the key).
        validate: Check on the redacted text; a candidate failing it is not a match.
        trim: Moves the end of a candidate back (URLs drop trailing punctuation).
        context: A pattern the text right before the match must end with (checked in Python: the
            ``regex`` package's partial matching is unreliable with variable-length look-behinds).
        needles: Strings one of which every match contains (``"0-9"``: any ASCII digit; a ``"(?i)"``
            prefix: any case). A stream skips the pattern while none is pending; a match in progress
            that holds no needle yet lies within the last word, which the stream always holds back.
        needle_re: A finer test, run once a needle is present: a pattern every complete match contains.
        max_hold: The longest match; a stream holds back at most this much for the pattern.
        tail: How a stream finds where a match of this pattern may still be in progress: ``None`` when
            such a match never contains whitespace (it lies within the last word, always held back),
            ``"partial"`` for the ``regex`` package's partial matching, :class:`SuffixChars`, or a
            pattern that matches — anchored at the end of the text — a suffix holding every such match.
        variants: Other readings of the same match, tried first (their ``pattern`` is unused): one
            search serves several rules that share a shape, such as the ``key = value`` forms.
    """

    rule: str
    pattern: str
    replacement: str
    group: str | None = None
    validate: Validator | None = None
    trim: Trimmer | None = None
    context: str | None = None
    needles: tuple[str, ...] = ()
    needle_re: str | None = None
    max_hold: int = 128
    tail: str | SuffixChars | None = None
    variants: tuple[PresetPattern, ...] = ()


DIGITS = "0-9"
"""Needle standing for "any ASCII digit"."""

PARTIAL = "partial"
"""``tail`` value: find matches in progress with partial matching."""


@dataclass(frozen=True, slots=True)
class SuffixChars:
    """``tail`` value: every match in progress lies in the longest suffix made of these characters."""

    chars: str


_DIGITS_TAIL = SuffixChars("0123456789 .()+-/")
_ASSIGNED_TAIL = r"[:=][ \t]{0,3}[\"']?[A-Za-z0-9_\-+/.~]*={0,3}"
_FLAG_TAIL = r"--[A-Za-z-]{0,20}(?:=|[ \t]{1,3})?[\"']?[A-Za-z0-9_\-+/.~]*={0,3}"
_BEARER_TAIL = r"(?i:bearer)[ \t]{1,3}[A-Za-z0-9\-._~+/]*={0,3}"


def _digits(text: str) -> str:
    return "".join(ch for ch in text if "0" <= ch <= "9")


def _luhn(digits: str) -> bool:
    total = 0
    for index, ch in enumerate(reversed(digits)):
        value = ord(ch) - 48
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _card_issuer_ok(d: str) -> bool:
    """Whether the number's prefix belongs to a card network that issues numbers of its length."""
    n = len(d)
    p2, p3, p4, p6 = int(d[:2]), int(d[:3]), int(d[:4]), int(d[:6])
    if d[0] == "4":  # Visa
        return n in (13, 16, 19)
    if 51 <= p2 <= 55 or 2221 <= p4 <= 2720:  # Mastercard
        return n == 16
    if p2 in (34, 37):  # American Express
        return n == 15
    if p4 == 6011 or 644 <= p3 <= 649 or p2 == 65 or 622126 <= p6 <= 622925:  # Discover
        return 16 <= n <= 19
    if 3528 <= p4 <= 3589 or p2 == 62 or 2200 <= p4 <= 2204:  # JCB, UnionPay, Mir
        return 16 <= n <= 19
    if 300 <= p3 <= 305 or p2 in (36, 38, 39):  # Diners Club
        return 14 <= n <= 19
    if p4 in (5018, 5020, 5038, 5893, 6304, 6759, 6761, 6762, 6763):  # Maestro
        return 12 <= n <= 19
    return False


def card_ok(text: str) -> bool:
    """A card number: a known issuer prefix and length, and a valid Luhn checksum."""
    digits = _digits(text)
    return 12 <= len(digits) <= 19 and _card_issuer_ok(digits) and _luhn(digits)


def ssn_ok(text: str) -> bool:
    """A US SSN: area not 000, 666 or 900-999; group not 00; serial not 0000."""
    digits = _digits(text)
    area = int(digits[:3])
    return area != 0 and area != 666 and area < 900 and digits[3:5] != "00" and digits[5:] != "0000"


_NOT_TLDS = frozenset(
    ["png", "jpg", "jpeg", "gif", "svg", "webp", "avif", "ico", "bmp", "tif", "tiff", "heic", "pdf"]
)


def email_ok(text: str) -> bool:
    """An email: a domain of at most 253 characters, labels of at most 63, a TLD of 2+ letters (or a
    punycode ``xn--`` label); not an image name such as ``logo@2x.png``."""
    domain = text.rpartition("@")[2]
    labels = domain.split(".")
    tld = labels[-1]
    if not (tld.isalpha() or (tld[:4].lower() == "xn--" and tld[4:].isalnum())) or len(tld) < 2:
        return False
    if tld.lower() in _NOT_TLDS or (labels[0][-1:] in "xX" and labels[0][:-1].isdecimal()):
        return False
    return len(domain) <= 253 and all(len(x) <= 63 for x in labels)


def token_ok(text: str) -> bool:
    """A credential: it mixes letters and digits (real keys do; prose and placeholders rarely)."""
    return any(ch.isdigit() for ch in text) and any(ch.isalpha() for ch in text)


_TRAILING = frozenset(".,;:!?'\"*")
_CLOSERS = {")": "(", "]": "[", "}": "{"}


def trim_url(text: str, start: int, end: int) -> int:
    """Drop sentence punctuation and unbalanced closing brackets from the end of a URL."""
    while end > start:
        ch = text[end - 1]
        unbalanced = ch in _CLOSERS and text.count(ch, start, end) > text.count(_CLOSERS[ch], start, end)
        if ch not in _TRAILING and not unbalanced:
            break
        end -= 1
    return end


def url_ok(text: str) -> bool:
    """A URL with something after ``://`` that contains a letter or digit."""
    rest = text.partition("://")[2]
    return any(ch.isalnum() for ch in rest)


def trim_dots(text: str, start: int, end: int) -> int:
    """Drop trailing full stops (a token at the end of a sentence)."""
    while end > start and text[end - 1] == ".":
        end -= 1
    return end


# --- pii ----------------------------------------------------------------------------------------------

_LOCAL = r"(?:" + W + r"|[.%+-])"
_LABEL = r"[^\W_" + CJK + r"](?:" + W + r"|-)*+"
_EMAIL = (
    _LOCAL + r"(?<!" + _LOCAL + _LOCAL + r")(?<!://[^\s/@]{0,256}" + _LOCAL + r")" + _LOCAL + r"{0,63}+"
    r"@" + _LABEL + r"(?:\." + _LABEL + r")++(?!:[^\s])"
)
"""Not the password of URL userinfo (``://user:pass@host``), nor an scp-style remote (``git@host:repo``)."""
_SSN = r"[0-9](?<!(?:" + W + r"|-)[0-9])[0-9]{2}(?P<sep>[- ])[0-9]{2}(?P=sep)[0-9]{4}(?!" + W + r"|-[0-9])"
_CARD = (  # bare runs from 8 digits: the same search finds the bare phone numbers (see _BARE_PHONE)
    r"[0-9](?<!" + W + r"[0-9])"
    r"(?:[0-9]{7,18}+"
    r"|[0-9]{3}(?P<sep>[ -])[0-9]{4}(?P=sep)[0-9]{4}(?P=sep)[0-9]{1,4}+"
    r"|[0-9]{3}(?P<sep2>[ -])[0-9]{6}(?P=sep2)[0-9]{4,5}+)(?!" + W + r")"
)


def _phone_not_card(text: str) -> bool:
    """A digit run after a phone word that is not a valid card number (those stay cards)."""
    return phones.bare_phone_ok(text) and not card_ok(text)


_BARE_PHONE = PresetPattern(
    "phone",
    "",
    "[PHONE]",
    validate=_phone_not_card,
    trim=phones.bare_phone_end,
    context=phones.BARE_CONTEXT,
)

_PII = (
    PresetPattern("email", _EMAIL, "[EMAIL]", validate=email_ok, needles=("@",), max_hold=330),
    PresetPattern(
        "phone",
        phones.INTL,
        "[PHONE]",
        validate=phones.intl_phone_ok,
        needles=("+",),
        needle_re=r"\+[0-9]",
        max_hold=64,
        tail=_DIGITS_TAIL,
    ),
    PresetPattern(
        "phone",
        phones.PAREN,
        "[PHONE]",
        validate=phones.paren_phone_ok,
        needles=("(",),
        needle_re=r"\([0-9+]",
        max_hold=64,
        tail=_DIGITS_TAIL,
    ),
    PresetPattern(
        "phone",
        phones.NANP,
        "[PHONE]",
        needles=(DIGITS,),
        needle_re=r"[0-9]{3}[ .-][0-9]{4}",
        max_hold=32,
        tail=_DIGITS_TAIL,
    ),
    PresetPattern(
        "phone",
        phones.TRUNK,
        "[PHONE]",
        validate=phones.national_phone_ok,
        needles=(DIGITS,),
        needle_re=r"[0-9][ ./-][0-9]{2}",
        max_hold=48,
        tail=_DIGITS_TAIL,
    ),
    PresetPattern(
        "phone",
        phones.SPACED,
        "[PHONE]",
        context=phones.BARE_CONTEXT,
        needles=(DIGITS,),
        needle_re=r"[0-9]{3}[ .][0-9]{2}",
        max_hold=16,
        tail=_DIGITS_TAIL,
    ),
    PresetPattern(
        "ssn",
        _SSN,
        "[SSN]",
        validate=ssn_ok,
        needles=(DIGITS,),
        needle_re=r"[0-9]{2}[- ][0-9]{4}",
        max_hold=16,
        tail=_DIGITS_TAIL,
    ),
    PresetPattern(
        "credit-card",
        _CARD,
        "[CREDIT_CARD]",
        validate=card_ok,
        needles=(DIGITS,),
        needle_re=r"[0-9]{4}[ -]?[0-9]{4}",
        max_hold=32,
        tail=_DIGITS_TAIL,
        variants=(_BARE_PHONE,),
    ),
)

# --- secrets ------------------------------------------------------------------------------------------

_KEY_NAMES = (
    r"api[_-]?(?:key|secret|token)|access[_-]?token|auth[_-]?token|refresh[_-]?token"
    r"|secret[_-]?key|client[_-]?secret|private[_-]?token"
)
_ASSIGNED_VALUE = r"[:=][ \t]{0,3}[\"']?(?P<value>[A-Za-z0-9_\-+/.~]{12,512}+={0,3})"
_ASSIGNED_TO_KEY = r"(?<![A-Za-z0-9])(?i:" + _KEY_NAMES + r")[\"']?[ \t]{0,3}\Z"
_API_KEY_FLAG = (
    r"--(?<!(?:" + W + r"|-)--)(?i:api-key|api-token|access-token|auth-token|token|secret|client-secret)"
    r"(?:=|[ \t]{1,3})[\"']?(?P<value>[A-Za-z0-9_\-+/.~]{12,512}+={0,3})"
)
_ASSIGNED_TO_AWS_SECRET = (
    r"(?i:aws[_-]?secret[_-]?(?:access[_-]?)?key|secret[_-]?access[_-]?key)[\"']?[ \t]{0,3}\Z"
)
_AWS_SECRET_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+")


def trim_aws_secret(text: str, start: int, end: int) -> int:
    """Keep exactly 40 base64 characters not followed by another (else reject: return ``start``)."""
    stop = start + 40
    if end < stop or not all(ch in _AWS_SECRET_CHARS for ch in text[start:stop]):
        return start
    if stop < len(text) and (text[stop] in _AWS_SECRET_CHARS or text[stop] == "="):
        return start
    return stop


_AWS_PREFIXES = ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA")
_AWS_ACCESS = (
    r"A(?<![A-Za-z0-9]A)(?:" + "|".join(p[1:] for p in _AWS_PREFIXES) + r")[A-Z0-9]{16}(?![A-Za-z0-9])"
)
_BEARER = r"(?i:bearer)[ \t]{1,3}(?P<value>[A-Za-z0-9\-._~+/]{16,4096}+={0,3})"
_PRIVATE_KEY = (
    r"-----BEGIN (?P<kind>(?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY(?: BLOCK)?)-----"
    r"(?:\r?\n[A-Za-z][\w-]{0,40}:[^\r\n]{0,256}+){0,8}+"
    r"[A-Za-z0-9+/=\s]{0,20000}+(?:-----END (?P=kind)-----|\Z)"
)


def _prefixed(prefix: str, body: str, *, needles: tuple[str, ...] = ()) -> PresetPattern:
    """A key with a fixed prefix, not glued to a longer word (``task-…`` is no ``sk-…``)."""
    escaped = prefix.replace("-", r"\-")
    return PresetPattern(
        "api-key",
        f"{escaped}(?<!(?:{W}|-){escaped}){body}",
        "[API_KEY]",
        validate=token_ok,
        needles=needles or (prefix,),
        max_hold=512,
    )


_SECRETS = (
    PresetPattern(
        "api-key",
        _ASSIGNED_VALUE,
        "[API_KEY]",
        group="value",
        validate=token_ok,
        context=_ASSIGNED_TO_KEY,
        needles=(":", "="),
        max_hold=600,
        tail=_ASSIGNED_TAIL,
        variants=(
            PresetPattern(
                "aws-secret-key",
                "",
                "[AWS_KEY]",
                group="value",
                trim=trim_aws_secret,
                context=_ASSIGNED_TO_AWS_SECRET,
            ),
        ),
    ),
    PresetPattern(
        "api-key",
        _API_KEY_FLAG,
        "[API_KEY]",
        group="value",
        validate=token_ok,
        needles=("--",),
        max_hold=600,
        tail=_FLAG_TAIL,
    ),
    _prefixed("sk-", r"[A-Za-z0-9_-]{20,400}+"),  # OpenAI, Anthropic
    _prefixed("sk_live_", r"[A-Za-z0-9]{16,200}+"),  # Stripe
    _prefixed("sk_test_", r"[A-Za-z0-9]{16,200}+"),
    _prefixed("rk_live_", r"[A-Za-z0-9]{16,200}+"),
    _prefixed("rk_test_", r"[A-Za-z0-9]{16,200}+"),
    _prefixed(
        "gh", r"[pousr]_[A-Za-z0-9]{36,251}+", needles=("ghp_", "gho_", "ghu_", "ghs_", "ghr_")
    ),  # GitHub
    _prefixed("github_pat_", r"[A-Za-z0-9_]{22,244}+"),
    _prefixed("xox", r"[abposr]-[A-Za-z0-9-]{10,250}+"),  # Slack
    _prefixed("xapp-", r"[A-Za-z0-9-]{10,250}+"),
    _prefixed("glpat-", r"[A-Za-z0-9_-]{20,100}+"),  # GitLab
    _prefixed("AIza", r"[0-9A-Za-z_-]{35}(?![\w-])"),  # Google
    _prefixed("npm_", r"[A-Za-z0-9]{36}(?![\w-])"),
    _prefixed("hf_", r"[A-Za-z0-9]{30,60}+"),  # Hugging Face
    PresetPattern(
        "bearer-token",
        _BEARER,
        "[BEARER_TOKEN]",
        group="value",
        validate=token_ok,
        trim=trim_dots,
        needles=("(?i)bearer",),
        max_hold=4200,
        tail=_BEARER_TAIL,
    ),
    PresetPattern("aws-access-key", _AWS_ACCESS, "[AWS_KEY]", needles=("A",), max_hold=32),
    PresetPattern(
        "private-key", _PRIVATE_KEY, "[PRIVATE_KEY]", needles=("-----",), max_hold=24000, tail=PARTIAL
    ),
)

# --- urls ---------------------------------------------------------------------------------------------

_URL = r"(?i:h(?<!" + W + r"h)ttps?)://[^\s<>\"'`" + CJK + CJK_PUNCT + r"]{1,4096}+"

_URLS = (
    PresetPattern("url", _URL, "[URL]", validate=url_ok, trim=trim_url, needles=("://",), max_hold=4200),
)

_PRESETS: dict[PresetName, tuple[PresetPattern, ...]] = {"pii": _PII, "secrets": _SECRETS, "urls": _URLS}


def preset_patterns(name: PresetName) -> tuple[PresetPattern, ...]:
    """The patterns of one preset, in search order."""
    return _PRESETS[name]

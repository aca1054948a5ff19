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

import re
from typing import Literal

from procflow.processors._regex_filter import phones
from procflow.processors._regex_filter.pattern import (
    CJK,
    CJK_PUNCT,
    DIGITS,
    PARTIAL,
    PresetPattern,
    SuffixChars,
    W,
)
from procflow.processors._regex_filter.secrets import ASSIGNMENT_OPERATORS, KEY_NAME_BEFORE, SECRETS

__all__ = [
    "CJK",
    "CJK_PUNCT",
    "DIGITS",
    "PARTIAL",
    "PRESET_NAMES",
    "PresetName",
    "PresetPattern",
    "SuffixChars",
    "first_trigger",
    "may_match",
    "preset_patterns",
]

PresetName = Literal["pii", "secrets", "urls"]
PRESET_NAMES: tuple[PresetName, ...] = ("pii", "secrets", "urls")

_DIGITS_TAIL = SuffixChars("0123456789 .()+-/")

_SEPARATORS = r"[ .\-/()]{0,2}"
_SIX_MORE_DIGITS = r"(?:" + _SEPARATORS + r"[0-9]){6}"
DIGIT_CHAIN = r"[0-9]" + _SIX_MORE_DIGITS
"""Seven digits, at most two separators between neighbours: every match of a number rule without a
``+`` or ``(`` needle holds one (the shortest, a 7-digit local phone number, has seven digits), so it
is their shared finer test: one search instead of a test per rule, each costing as much as the rule's
own search. The national phone pattern has none: its candidates may be shorter (validation rejects
them, but they must still be found to hold a stream back), and its own search is cheaper than a test."""


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
    if 51 <= p2 <= 55 or 2221 <= p4 <= 2720 or p4 == 5019:  # Mastercard, Dankort
        return n == 16
    if d[0] == "1":  # UATP
        return n == 15
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


_TRAILING = frozenset(".,;:!?'\"*")
_CLOSERS = {")": "(", "]": "[", "}": "{"}


def trim_url(text: str, start: int, end: int) -> int:
    """Drop sentence punctuation and unbalanced closing brackets from the end of a URL."""
    depth = {
        closer: text.count(closer, start, end) - text.count(opener, start, end)
        for closer, opener in _CLOSERS.items()
    }
    while end > start:
        ch = text[end - 1]
        if ch in _CLOSERS and depth[ch] > 0:
            depth[ch] -= 1
        elif ch not in _TRAILING:
            break
        end -= 1
    return end


def url_ok(text: str) -> bool:
    """A URL with something after ``://`` that contains a letter or digit."""
    rest = text.partition("://")[2]
    return any(ch.isalnum() for ch in rest)


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
    r"|[0-9]{3}[ -][0-9]{4}[ -][0-9]{4}[ -][0-9]{1,4}+"
    r"|[0-9]{3}(?P<sep2>[ -])[0-9]{6}(?P=sep2)[0-9]{4,5}+"
    r"|[0-9]{3}(?P<sep3>[ -])[0-9]{5}(?P=sep3)[0-9]{6})(?!" + W + r")"
)
"""Separators may mix (``5555-5555 5555-4444``)."""
_CARD_19 = r"[0-9](?<!" + W + r"[0-9])[0-9]{3}(?:[ -][0-9]{4}){3}[ -][0-9]{3}(?!" + W + r")"
"""19-digit numbers grouped 4-4-4-4-3, searched on their own so a 16-digit card before a short number
is not hidden by a longer candidate that fails the checksum."""


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
        needle_re=DIGIT_CHAIN,
        max_hold=32,
        tail=_DIGITS_TAIL,
    ),
    PresetPattern(
        "phone",
        phones.TRUNK,
        "[PHONE]",
        validate=phones.national_phone_ok,
        needles=(DIGITS,),
        max_hold=48,
        tail=_DIGITS_TAIL,
    ),
    PresetPattern(
        "phone",
        phones.SPACED,
        "[PHONE]",
        context=phones.BARE_CONTEXT,
        needles=(DIGITS,),
        needle_re=DIGIT_CHAIN,
        max_hold=16,
        tail=_DIGITS_TAIL,
    ),
    PresetPattern(
        "ssn",
        _SSN,
        "[SSN]",
        validate=ssn_ok,
        needles=(DIGITS,),
        needle_re=DIGIT_CHAIN,
        max_hold=16,
        tail=_DIGITS_TAIL,
    ),
    PresetPattern(
        "credit-card",
        _CARD,
        "[CREDIT_CARD]",
        validate=card_ok,
        needles=(DIGITS,),
        needle_re=DIGIT_CHAIN,
        max_hold=32,
        tail=_DIGITS_TAIL,
        variants=(_BARE_PHONE,),
    ),
    PresetPattern(
        "credit-card",
        _CARD_19,
        "[CREDIT_CARD]",
        validate=card_ok,
        needles=(DIGITS,),
        needle_re=DIGIT_CHAIN,
        max_hold=32,
        tail=_DIGITS_TAIL,
    ),
)

# --- urls ---------------------------------------------------------------------------------------------

_URL = r"(?i:h(?<!" + W + r"h)ttps?)://[^\s<>\"'`" + CJK + CJK_PUNCT + r"]++"

_URLS = (
    PresetPattern("url", _URL, "[URL]", validate=url_ok, trim=trim_url, needles=("://",), max_hold=4200),
)

_PRESETS: dict[PresetName, tuple[PresetPattern, ...]] = {"pii": _PII, "secrets": SECRETS, "urls": _URLS}


def preset_patterns(name: PresetName) -> tuple[PresetPattern, ...]:
    """The patterns of one preset, in search order."""
    return _PRESETS[name]


_AWS_TAILS = "|".join(("KIA", "SIA", "BIA", "CCA", "GPA", "IDA", "ROA", "IPA", "NPA", "NVA", "PKA"))
_TRIGGERS = re.compile(
    r"[@=：_:\-x是+(0-9JAGBb]"
    r"(?:(?<=[@=：_:])|(?<=-)(?:-|(?<=sk-)|(?<=xapp-)|(?<=glpat-)|(?<=pypi-))|(?<=x)ox"
    r"|(?<=是)(?:[!-~]|\Z)|(?<=\+)(?:[0-9]|\Z)|(?<=\()(?:[0-9+]|\Z)"
    r"|(?<=[0-9])"
    + _SIX_MORE_DIGITS  # DIGIT_CHAIN after its first digit: the prefilter and the number rules' test agree
    + r"|(?<=[0-9])(?:"
    + _SEPARATORS
    + r"[0-9]){0,5}"
    + _SEPARATORS
    + r"\Z"
    r"|(?<=eyJ)|(?<=A)(?:Iza|"
    + _AWS_TAILS
    + r")|(?<=SG)\.|(?<=[Bb])(?:[Ee][Aa][Rr][Ee][Rr]|[Aa][Ss][Ii][Cc]))"
)
"""Where a needle may be: a symbol needle (``@ = ： _ :``, ``--``), a chain of 7 digits (the fewest a
number rule matches) or digits at the end of the text (a number in progress), or a needle with letters
(``sk-``, ``xapp-``, ``glpat-``, ``pypi-``, ``eyJ``, ``SG.``, ``xox``, ``AIza``, AWS key prefixes,
``bearer`` and ``basic`` in any case). One search whose first item is a character class, so that the
engine skips the positions no needle can be at without trying the alternatives. A needle with letters
is found at its rarest character (the hyphen of ``sk-``, the ``J`` of ``eyJ``): a position inside the
needle, so inside the same word, which is all the stream needs. The class leaves out the common letters
(``e s p g``): stopping at each of them made this search cost ten times as much on prose."""


def first_trigger(text: str, pos: int) -> int:
    """Where the first possible needle of any preset is in ``text[pos:]`` (``-1``: none): its start,
    or a later position inside it (the word holding the needle starts at or before the answer).

    A quick test that over-approximates every needle of every preset (a lone digit or hyphen in
    prose is no start of a phone number or key). A match in progress holding none of them lies
    within the last word; a match holding one starts within the word of its first needle. An
    operator (``:`` ``=`` ``：`` ``是``) counts only after a key name, or where a ``:`` is or may
    become the ``://`` of a URL.
    """
    search = _TRIGGERS.search
    while True:
        found = search(text, pos)
        if found is None:
            return -1
        at = found.start()
        ch = text[at]
        if ch not in _OPERATORS or KEY_NAME_BEFORE.match(text, at) is not None:
            return at
        if ch == ":" and "//".startswith(text[at + 1 : at + 3]):
            return at  # the ``://`` of a URL, or the start of one
        pos = at + 1


_OPERATORS = frozenset(ASSIGNMENT_OPERATORS)
"""The ``key = value`` pattern's needles: it only finds an operator that follows a key name, and
prose is full of the others (``09:45``, ``Note:``, ``年费是``)."""


def may_match(text: str, pos: int) -> bool:
    """Whether ``text[pos:]`` may hold a built-in match, or the start of one, beyond its last word."""
    return first_trigger(text, pos) >= 0

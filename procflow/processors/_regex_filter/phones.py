"""Phone-number shapes of the ``pii`` preset, and the checks a candidate must pass.

Four shapes fire on their own, because their grouping says "phone": a ``+`` or ``(+44)`` country code
(or ``00`` and a country code, then separated groups); a national number with a trunk ``0`` in groups
(``020 7946 0958``, ``06 12 34 56 78``, ``03-1234-5678``, ``0412 345 678``) or as prefix and subscriber
(``07700 900123``, ``030 12345678``, ``030/12345678``, ``(01632) 960 000``); the US/Canada 3-3-4
(``(555) 123-4567``, ``1-800-555-0199``); and the Indian and Chinese mobile groupings (``98765 43210``,
``138 0013 8000``).

A bare run of digits (``07700900123``) is a phone number only right after a word that says so
(``phone``, ``tel``, ``call me at``, ``mobile``, ``cell``, ``WhatsApp``, ``fax``…): otherwise it is as
likely an order, invoice or account number, and a guard that fires on those gets switched off.

No national shape starts inside a longer number: not after a digit or a word character, nor after a
digit and one separator (the middle of a card, an IBAN or a tracking number). Candidates are then
checked in Python: digit counts, a single ``.`` (a decimal, not a separator), IPv4 and SSN shapes.
"""

from __future__ import annotations

__all__ = [
    "BARE_CONTEXT",
    "CJK",
    "CJK_PUNCT",
    "INTL",
    "NANP",
    "PAREN",
    "SPACED",
    "TRUNK",
    "W",
    "bare_phone_end",
    "bare_phone_ok",
    "intl_phone_ok",
    "national_phone_ok",
    "paren_phone_ok",
]

CJK = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\p{Bopomofo}"
"""Scripts written without spaces: an ASCII entity glued to one of their letters starts or ends there."""

CJK_PUNCT = "\u3000-\u303f\uff00-\uff65"
"""CJK symbols and punctuation, and the full-width forms (``。，；：！？）》``…)."""

W = (
    r"[0-9A-Za-z_\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02af\u0370-\u03ff\u0400-\u052f\u0590-\u06ff"
    r"\u0900-\u0dff\u1e00-\u1fff]"
)
"""A word character of a spaced script (Latin, Greek, Cyrillic, Hebrew, Arabic, Indic): what a boundary
check treats as "more of the same word". CJK and Thai, written without spaces, are boundaries; the
class is spelled out as ranges, which the engine tests faster than a negated class of properties."""


def _not_in_number(first: str) -> str:
    """Look-behinds placed after the first character: no digit run or digit group goes on before it."""
    return r"(?<!(?:" + W + r"|[#+.-])" + first + r")(?<![0-9][ .:/-]" + first + ")"


_INTL_GROUPS = r"(?:[ .-]?+(?:\([0-9]{1,4}+\)|[0-9]{1,5}+)){1,6}+(?!" + W + r")"
_NATIONAL_END = r"(?!" + W + r"|[ ./-][0-9])"
"""No digit run or digit group goes on after a national number either."""

INTL = r"\+(?<!(?:" + W + r"|\+)\+)[0-9]{1,3}+" + _INTL_GROUPS
"""``+44 20 7946 0958``, ``+1 (555) 123-4567``, ``+44 (0)20 7946 0958``, ``+4915112345678``."""

PAREN = (
    r"\((?<!(?:" + W + r"|[#+.-])\()(?:\+[0-9]{1,3}+\)" + _INTL_GROUPS + r"|(?:"
    r"0[1-9][0-9]{0,3}+\) ?+"
    r"(?:[0-9]{2,4}+(?P<sep>[ .-])[0-9]{2,4}+(?:(?P=sep)[0-9]{2,4}+){0,2}+|[0-9]{5,8}+)"
    r"|[0-9]{3}\) ?+[0-9]{3}[ .-][0-9]{4}"
    r")" + _NATIONAL_END + ")"
)
"""Numbers starting with a parenthesis: ``(+44) 20 7946 0958``; a trunk prefix ``(01632) 960 000``,
``(02) 9876 5432``, ``(030) 12345678``; US/Canada ``(555) 123-4567``. One pattern, so that ``(`` in
prose costs one search."""

NANP = (
    "[0-9]" + _not_in_number("[0-9]") + r"(?:[0-9]{2}(?:"
    r"[ .-](?:[0-9]{3}[ .-][0-9]{4}|(?<=1[3-9][0-9][ -])[0-9]{4}[ -][0-9]{4})"
    r"|(?<=[6-9][0-9]{2})[0-9]{2}[ -][0-9]{5})"
    r"|(?<=1)[ .-](?:\([0-9]{3}\) ?+|[0-9]{3}[ .-])[0-9]{3}[ .-][0-9]{4}"
    r")" + _NATIONAL_END
)
"""US/Canada ``555-123-4567``, ``1 (555) 123-4567``; India ``98765 43210``; China ``138 0013 8000``."""

TRUNK = (
    "0" + _not_in_number("0") + r"(?:"
    r"[1-9][0-9]{0,3}+(?:(?P<sep>[ .-])[0-9]{2,4}+(?:(?P=sep)[0-9]{2,4}+){1,4}+|[ /-][0-9]{5,8}+)"
    r"|0[1-9][0-9]{0,2}+[ .-][0-9]{1,5}+(?:[ .-]?+[0-9]{2,5}+){1,5}+"
    r")" + _NATIONAL_END
)
"""A trunk ``0``, then groups of 2-4 digits with one separator (``020 7946 0958``) or one subscriber
group of 5-8 digits (``07700 900123``, ``030/12345678``); or ``00``, a country code and groups."""

SPACED = (
    "[6-9]" + _not_in_number("[6-9]") + r"(?:[0-9]{2}(?P<sep>[ .])[0-9]{3}(?P=sep)[0-9]{3}"
    r"|[0-9](?P<sep2>[ .])[0-9]{3}(?P=sep2)[0-9]{2}(?P=sep2)[0-9]{2})" + _NATIONAL_END
)
"""Numbers without a trunk prefix grouped 3-3-3 or 2-3-2-2 (Spain: ``612 345 678``, ``91 123 45 67``):
phone numbers only after a phone word, like bare digit runs (the same shape writes ``612 345 678 €``)."""

_WORDS = (
    r"phone|ph|tel|t[ée]l[ée]phone|telefon[eo]?|tel[ée]fono|call|called|calling|mob|mobil|mobile"
    r"|m[óo]vil|cell|cellphone|celular|handy|portable|whats ?app|sms|fax|hotline"
    r"|appel(?:ez|er|le)?|joindre|joignable|llam(?:a|e|ar|ad|ame)|ll[áa]mame|ll[áa]menos"
)
_CJK_WORDS = r"电话|電話|手机|手機|拨打|撥打|致电|致電|联系|聯繫|联络|号码|號碼|传真|傳真|座机|携帯|番号"
_CONNECTORS = (
    r"number|num|no|nr|me|us|at|on|is|via|au|al|el|le|la|de|du|mon|mi|ma|or|and|et|ou|y|o|then"
    r"|moi|nous|te|nos|lo"
    r"|num[ée]ro|n[úu]mero"
)
BARE_CONTEXT = (
    r"(?i)(?:\b(?:" + _WORDS + r")\b|" + _CJK_WORDS + r")"
    r"(?:[\s:#.,;=/()\-：，、是为為或和至]|[0-9]|\b(?:" + _CONNECTORS + r")\b){0,40}+(?<![0-9][-./])\Z"
)
"""What the text before a bare digit run must end with: a phone word, then only punctuation, connecting
words and other phone numbers (``Phone number:``, ``call me at``, ``Tel.:``, ``mobile no.``, ``cell #``,
``call 212 555 0147, 212.555.0148 or``, ``有事请拨打``, ``手机号码是``)."""


def _digits(text: str) -> str:
    return "".join(ch for ch in text if "0" <= ch <= "9")


def _grouping_ok(text: str) -> bool:
    """Not a decimal (a single ``.``), an IPv4 address or an SSN-shaped ``ddd-dd-dddd``."""
    dots = text.count(".")
    if dots == 1:
        return False
    if dots == 3 and all(0 < len(p) <= 3 and p.isdecimal() for p in text.split(".")):
        return False
    parts = text.replace(" ", "-").split("-")
    return [len(p) for p in parts] != [3, 2, 4] or not all(p.isdecimal() for p in parts)


def intl_phone_ok(text: str) -> bool:
    """A number with a ``+`` country code: 8-15 digits (E.164 allows 15)."""
    return 8 <= len(_digits(text)) <= 15 and _grouping_ok(text)


def national_phone_ok(text: str) -> bool:
    """A national number with its trunk ``0``: 9-12 digits; after ``00``, 8-15 digits."""
    digits = _digits(text)
    count = len(digits) - 2 if digits.startswith("00") else len(digits)
    low, high = (8, 15) if digits.startswith("00") else (9, 12)
    return low <= count <= high and _grouping_ok(text)


def bare_phone_ok(text: str) -> bool:
    """A digit run after a phone word: 8-15 digits."""
    return 8 <= len(_digits(text)) <= 15


def bare_phone_end(text: str, start: int, end: int) -> int:
    """Reject a digit run that a ``.``, ``,``, ``:``, ``/`` or ``-`` and a digit continue (``start``)."""
    after = text[end : end + 2]
    if len(after) == 2 and after[0] in ".,:/-" and "0" <= after[1] <= "9":
        return start
    return end


def paren_phone_ok(text: str) -> bool:
    """A :data:`PAREN` match: checked as international after ``(+``, as national after ``(0``."""
    if text[1] == "+":
        return intl_phone_ok(text)
    return text[1] != "0" or national_phone_ok(text)

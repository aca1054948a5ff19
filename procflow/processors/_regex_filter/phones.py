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
    "INTL",
    "NANP",
    "PAREN",
    "TRUNK",
    "bare_phone_end",
    "bare_phone_ok",
    "intl_phone_ok",
    "national_phone_ok",
    "paren_phone_ok",
]

_NOT_IN_NUMBER = r"(?<![\w#+.-]{c})(?<![0-9][ .:/-]{c})"
"""Look-behinds placed after the first character ``{c}``: no digit run or digit group goes on before it."""

_INTL_GROUPS = r"(?:[ .-]?+(?:\([0-9]{1,4}+\)|[0-9]{1,5}+)){1,6}+(?!\w)"
_NATIONAL_END = r"(?!\w|[ ./-][0-9])"
"""No digit run or digit group goes on after a national number either."""

INTL = r"\+(?<![\w+]\+)[0-9]{1,3}+" + _INTL_GROUPS
"""``+44 20 7946 0958``, ``+1 (555) 123-4567``, ``+44 (0)20 7946 0958``, ``+4915112345678``."""

PAREN = (
    r"\((?<![\w#+.-]\()(?:\+[0-9]{1,3}+\)" + _INTL_GROUPS + r"|(?:"
    r"0[1-9][0-9]{0,3}+\) ?+"
    r"(?:[0-9]{2,4}+(?P<sep>[ .-])[0-9]{2,4}+(?:(?P=sep)[0-9]{2,4}+){0,2}+|[0-9]{5,8}+)"
    r"|[0-9]{3}\) ?+[0-9]{3}[ .-][0-9]{4}"
    r")" + _NATIONAL_END + ")"
)
"""Numbers starting with a parenthesis: ``(+44) 20 7946 0958``; a trunk prefix ``(01632) 960 000``,
``(02) 9876 5432``, ``(030) 12345678``; US/Canada ``(555) 123-4567``. One pattern, so that ``(`` in
prose costs one search."""

NANP = (
    "[0-9]" + _NOT_IN_NUMBER.format(c="[0-9]") + r"(?:[0-9]{2}(?:"
    r"[ .-](?:[0-9]{3}[ .-][0-9]{4}|(?<=1[3-9][0-9][ -])[0-9]{4}[ -][0-9]{4})"
    r"|(?<=[6-9][0-9]{2})[0-9]{2}[ -][0-9]{5})"
    r"|(?<=1)[ .-](?:\([0-9]{3}\) ?+|[0-9]{3}[ .-])[0-9]{3}[ .-][0-9]{4}"
    r")" + _NATIONAL_END
)
"""US/Canada ``555-123-4567``, ``1 (555) 123-4567``; India ``98765 43210``; China ``138 0013 8000``."""

TRUNK = (
    "0" + _NOT_IN_NUMBER.format(c="0") + r"(?:"
    r"[1-9][0-9]{0,3}+(?:(?P<sep>[ .-])[0-9]{2,4}+(?:(?P=sep)[0-9]{2,4}+){1,4}+|[ /-][0-9]{5,8}+)"
    r"|0[1-9][0-9]{0,2}+[ .-][0-9]{1,5}+(?:[ .-]?+[0-9]{2,5}+){1,5}+"
    r")" + _NATIONAL_END
)
"""A trunk ``0``, then groups of 2-4 digits with one separator (``020 7946 0958``) or one subscriber
group of 5-8 digits (``07700 900123``, ``030/12345678``); or ``00``, a country code and groups."""

_WORDS = (
    r"phone|ph|tel|t[ée]l[ée]phone|telefon[eo]?|tel[ée]fono|call|called|calling|mob|mobil|mobile"
    r"|m[óo]vil|cell|cellphone|celular|handy|portable|whats ?app|sms|fax|hotline"
)
BARE_CONTEXT = (
    r"(?i)\b(?:" + _WORDS + r")\b(?:[\s:#.=/()\-]|\b(?:number|num|no|nr|me|us|at|on|is|via)\b){0,16}\Z"
)
"""What the text before a bare digit run must end with: a phone word, then only punctuation and
connecting words (``Phone number:``, ``call me at``, ``Tel.:``, ``mobile no.``, ``cell #``)."""


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

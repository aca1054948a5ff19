"""The ``secrets`` preset: keys, tokens, passwords and credentials (rule names as in the docs' table).

Three kinds of evidence, from strongest to weakest:

- a vendor prefix that says "secret" (``sk_live_``, ``ghp_``, ``hf_``…): the value needs no digit;
- a key name before ``=``, ``:``, ``:=``, ``=>`` or ``：`` (``api_key=``, ``"x-api-secret": ``,
  ``My API key:``, ``clé API :``, ``密码：``, ``DB_PASSWORD=``): the value needs no digit when it is one
  long run of letters, but placeholders (``********``, ``<password>``, ``${VAR}``, ``YOUR_PASSWORD``,
  an already redacted ``[API_KEY]``) never fire;
- a bare token (``Bearer …``, ``--token …``): it must mix letters and digits.

No value length is capped: a value longer than usual is redacted whole (the patterns are possessive,
so their cost stays linear).
"""

from __future__ import annotations

import base64
import binascii

import regex

from procflow.processors._regex_filter.pattern import (
    CJK,
    CJK_PUNCT,
    PARTIAL,
    PresetPattern,
    Validator,
    W,
    is_placeholder,
    token_ok,
    trim_dots,
)

__all__ = [
    "ASSIGNMENT_OPERATORS",
    "KEY_NAME_BEFORE",
    "SECRETS",
    "assigned_ok",
    "basic_ok",
    "password_ok",
    "trim_aws_secret",
    "trim_value",
]

_KEY_CHARS = r"A-Za-z0-9_\-+/.~"
_OPERATOR = r"(?::=|=>|[:=：是])"
_NAME_END = r"[\"']?[ \t]{0,3}\Z"

_KEY_NAMES = (
    r"api[_ -]?(?:key|secret|token)|apikey|access[_ -]?(?:token|key)|auth[_ -]?token|refresh[_ -]?token"
    r"|session[_ -]?token|secret[_ -]?key|private[_ -]?(?:token|key)"
    r"|cl[ée](?: d'| de l'|s? )?api|clave(?: de)? api|jeton(?: d'acc[èe]s| api)?|token de acceso"
    r"|api ?密钥|密钥|秘钥|令牌|访问令牌|api ?キー|アクセストークン"
)
_SECRET_NAMES = (
    r"(?:client|webhook|signing|app|consumer|shared)[_ -]?secret|secret"
    r"|cl[ée] secr[èe]te|clave secreta|客户端密钥"
)
_PASSWORD_NAMES = (
    r"passwor[dt]|passwd|passphrase|(?<![A-Za-z])pass|mot de passe|mdp|contrase[ñn]a|senha|密码|口令"
    r"|パスワード"
)
_AWS_SECRET_NAME_WORDS = r"aws[_-]?secret[_-]?(?:access[_-]?)?key|secret[_-]?access[_-]?key"
_VALUE = r"[^\s\"'`<>,;:=" + CJK + CJK_PUNCT + r"]"
"""A value ends at a blank, a quote, CJK text, or another ``:``/``=`` (so that a run of operators
costs linear time); base64 padding ``=`` is kept."""
_NAMED = (
    r"(?i:"
    + "|".join((_KEY_NAMES, _SECRET_NAMES, _PASSWORD_NAMES, _AWS_SECRET_NAME_WORDS))
    + r")[\"']?[ \t]{0,3}"
)
"""Any key name the ``key = value`` forms accept, then what may stand between it and the operator:
every reading's ``context`` names one of them."""
_OPERATOR_AHEAD = r"[:=：是](?<=" + _NAMED + r"[:=：是])(?:(?<=:)=|(?<==)>)?"
"""The operators for a forward search, led by a character class (the engine skips to the next
candidate character instead of trying three alternatives at every position), then a look-behind for a
key name: prose is full of operators (``09:45``, ``Note:``, ``年费是``), and each would otherwise be a
candidate that every reading rejects, after a stream has held text back for it."""
ASSIGNMENT_OPERATORS = (":", "=", "：", "是")
"""The ``key = value`` search's needles: the first character of each of its operators."""
KEY_NAME_BEFORE = regex.compile(r"(?<=" + _NAMED + r")")
"""Matches (empty) at an operator's position where a key name comes before it: the condition the
``key = value`` search puts on its candidates, for the stream's prefilter."""
_ASSIGNED = _OPERATOR_AHEAD + r"[ \t]{0,3}[\"']?(?P<value>" + _VALUE + r"++(?:={1,3}+(?!" + _VALUE + r"))?)"
"""A value, with base64 padding only where the value ends: in ``password: password=hunter2`` the
second assignment is found on its own (the ``=`` taken as padding of the value ``password`` used to
end the match there and leave ``hunter2`` in clear)."""
_ASSIGNED_TAIL = r"(?<=" + _NAMED + r")" + _OPERATOR + r"[ \t]{0,3}[\"']?" + _VALUE + r"*={0,3}"

_AWS_SECRET_NAME = r"(?i:" + _AWS_SECRET_NAME_WORDS + ")" + _NAME_END
_AWS_SECRET_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+")
_KEY_SET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/.~=")
_CLOSERS = {")": "(", "]": "[", "}": "{"}


def trim_aws_secret(text: str, start: int, end: int) -> int:
    """Keep exactly 40 base64 characters not followed by another (else reject: return ``start``)."""
    stop = start + 40
    if end < stop or not all(ch in _AWS_SECRET_CHARS for ch in text[start:stop]):
        return start
    if stop < len(text) and (text[stop] in _AWS_SECRET_CHARS or text[stop] == "="):
        return start
    return stop


def trim_key(text: str, start: int, end: int) -> int:
    """Keep the leading run of key characters (base64, URL-safe), then drop trailing full stops."""
    stop = start
    while stop < end and text[stop] in _KEY_SET:
        stop += 1
    return trim_dots(text, start, stop)


def trim_value(text: str, start: int, end: int) -> int:
    """Drop full stops, commas, colons and unbalanced closing brackets from the end of a password
    (``!`` and ``?`` stay: passwords end with them more often than sentences around them do)."""
    depth = {
        closer: text.count(closer, start, end) - text.count(opener, start, end)
        for closer, opener in _CLOSERS.items()
    }
    while end > start:
        ch = text[end - 1]
        if ch in _CLOSERS and depth[ch] > 0:
            depth[ch] -= 1
        elif ch not in ".,:":
            break
        end -= 1
    return end


def assigned_ok(value: str) -> bool:
    """A value after a key name: letters and digits, or one run of 16+ letters; not a placeholder."""
    if is_placeholder(value) or value.endswith("EXAMPLE") or value.endswith("EXAMPLEKEY"):
        return False
    if token_ok(value):
        return len(value) >= 8
    return len(value) >= 16 and value.isalpha()


_NOT_PASSWORDS = frozenset(
    [
        "required",
        "optional",
        "incorrect",
        "invalid",
        "wrong",
        "expired",
        "reset",
        "changed",
        "hidden",
        "none",
        "null",
        "nil",
        "empty",
        "protected",
        "below",
        "above",
        "same",
        "missing",
        "string",
        "true",
        "false",
        "correct",
        "password",
        "pass",
        "secret",
        "admin",
        "requis",
        "obligatoire",
        "oublié",
        "requerido",
        "obligatoria",
        "incorrecta",
    ]
)


def password_ok(value: str) -> bool:
    """A password: at least 4 characters, not a placeholder nor a form word (``required``)."""
    low = value.lower()
    return len(value) >= 4 and not is_placeholder(value) and low not in _NOT_PASSWORDS


def key_ok(value: str) -> bool:
    """A value after a vendor prefix: anything but a placeholder."""
    return not is_placeholder(value)


def openai_ok(value: str) -> bool:
    """An ``sk-`` key: it mixes letters and digits, or upper and lower case (``sk-learn`` does not)."""
    body = value[3:]
    return token_ok(body) or (any(c.isupper() for c in body) and any(c.islower() for c in body))


def basic_ok(value: str) -> bool:
    """HTTP Basic credentials: base64 of ``user:password``."""
    padded = value + "=" * (-len(value) % 4)
    try:
        decoded = base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded and len(decoded) >= 3


def _aws_access_ok(value: str) -> bool:
    return not value.endswith("EXAMPLE")


def _assigned(rule: str, replacement: str, names: str, validate: Validator) -> PresetPattern:
    return PresetPattern(
        rule,
        "",
        replacement,
        group="value",
        validate=validate,
        trim=trim_value if rule == "password" else trim_key,
        context=r"(?<![A-Za-z0-9])(?i:" + names + r")" + _NAME_END,
    )


_AWS_SECRET = PresetPattern(
    "aws-secret-key",
    "",
    "[AWS_KEY]",
    group="value",
    validate=assigned_ok,
    trim=trim_aws_secret,
    context=_AWS_SECRET_NAME,
)

_AWS_PREFIXES = ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA")
_AWS_ACCESS = (
    r"A(?<![A-Za-z0-9]A)(?:" + "|".join(p[1:] for p in _AWS_PREFIXES) + r")[A-Z0-9]{16}(?![A-Za-z0-9])"
)
_PADDING = r"(?:={1,3}+(?![" + _KEY_CHARS + r"]))?"
"""Base64 padding where a token ends (not an ``=`` followed by more text)."""
_API_KEY_FLAG = (
    r"--(?<!(?:" + W + r"|-)--)(?i:api-key|api-token|access-token|auth-token|token|secret|client-secret)"
    r"(?:=|[ \t]{1,3})[\"']?(?P<value>[" + _KEY_CHARS + r"]{12,}+" + _PADDING + ")"
)
_FLAG_TAIL = r"--[A-Za-z-]{0,20}(?:=|[ \t]{1,3})?[\"']?[" + _KEY_CHARS + r"]*={0,3}"
_BEARER = r"(?i:b(?<![A-Za-z0-9]b)earer)[ \t]{1,16}+(?P<value>[" + _KEY_CHARS + r"]{8,}+" + _PADDING + ")"
_BEARER_TAIL = r"(?i:bearer)[ \t]{1,16}[" + _KEY_CHARS + r"]*={0,3}"
_BASIC = r"(?i:b(?<![A-Za-z0-9]b)asic)[ \t]{1,16}+(?P<value>[A-Za-z0-9+/]{4,}+={0,2})(?![A-Za-z0-9+/=])"
_BASIC_TAIL = r"(?i:basic)[ \t]{1,16}[A-Za-z0-9+/]*={0,2}"
_JWT = (
    r"e(?<![A-Za-z0-9_\-.]e)yJ[A-Za-z0-9_-]{8,}+\.eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]*+"
    r"(?![A-Za-z0-9_\-.])"
)
_PRIVATE_KEY = (
    r"-----BEGIN (?P<kind>(?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY(?: BLOCK)?)-----"
    r"(?:(?:\r?\n|\\r?\\n)[A-Za-z][\w-]{0,40}:[^\r\n\\]{0,256}+){0,8}+"
    r"[A-Za-z0-9+/=\s\\]*+(?:-----END (?P=kind)-----|\Z)"
)
"""Also inside JSON, where the newlines are escaped (``"private_key": "-----BEGIN…\\n…"``)."""
_USERINFO = (
    r"[A-Za-z](?<![A-Za-z0-9+.-][A-Za-z])[A-Za-z0-9+.-]{1,20}+://[^\s:/@]{1,256}+:"
    r"(?P<value>[^\s@/]{1,256}+)@"
)


def _prefixed(
    prefix: str,
    body: str,
    *,
    needles: tuple[str, ...] = (),
    rule: str = "api-key",
    replacement: str = "[API_KEY]",
    validate: Validator | None = None,
) -> PresetPattern:
    """A key with a fixed prefix, not glued to a longer word (``task-…`` is no ``sk-…``)."""
    escaped = prefix.replace("-", r"\-")
    return PresetPattern(
        rule,
        f"{escaped}(?<!(?:{W}|-){escaped}){body}",
        replacement,
        validate=validate or key_ok,
        needles=needles or (prefix,),
        max_hold=1024,
    )


SECRETS = (
    PresetPattern(
        "api-key",
        _ASSIGNED,
        "[API_KEY]",
        group="value",
        validate=assigned_ok,
        trim=trim_key,
        context=r"(?<![A-Za-z0-9])(?i:" + _KEY_NAMES + r")" + _NAME_END,
        needles=ASSIGNMENT_OPERATORS,
        max_hold=1024,
        tail=_ASSIGNED_TAIL,
        variants=(
            _AWS_SECRET,
            _assigned("client-secret", "[SECRET]", _SECRET_NAMES, assigned_ok),
            _assigned("password", "[PASSWORD]", _PASSWORD_NAMES, password_ok),
        ),
    ),
    PresetPattern(
        "api-key",
        _API_KEY_FLAG,
        "[API_KEY]",
        group="value",
        validate=token_ok,
        needles=("--",),
        max_hold=1024,
        tail=_FLAG_TAIL,
    ),
    _prefixed("sk-", r"[A-Za-z0-9_-]{20,}+", validate=openai_ok),  # OpenAI, Anthropic
    _prefixed("sk_live_", r"[A-Za-z0-9]{16,}+"),  # Stripe
    _prefixed("sk_test_", r"[A-Za-z0-9]{16,}+"),
    _prefixed("rk_live_", r"[A-Za-z0-9]{16,}+"),
    _prefixed("rk_test_", r"[A-Za-z0-9]{16,}+"),
    _prefixed("whsec_", r"[A-Za-z0-9+/=]{24,}+", rule="client-secret", replacement="[SECRET]"),
    _prefixed("gh", r"[pousr]_[A-Za-z0-9]{36,}+", needles=("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),  # GitHub
    _prefixed("github_pat_", r"[A-Za-z0-9_]{22,}+"),
    _prefixed("xox", r"[abposre]-[A-Za-z0-9-]{10,}+"),  # Slack
    _prefixed("xapp-", r"[A-Za-z0-9-]{10,}+"),
    _prefixed("glpat-", r"[A-Za-z0-9_-]{20,}+"),  # GitLab
    _prefixed("AIza", r"[0-9A-Za-z_-]{35,}+"),  # Google
    _prefixed("npm_", r"[A-Za-z0-9]{36,}+"),
    _prefixed("hf_", r"[A-Za-z0-9]{30,}+"),  # Hugging Face: hf_ and 34 letters
    _prefixed("pypi-", r"AgE[A-Za-z0-9_-]{50,}+"),  # PyPI upload tokens
    _prefixed("dop_v1_", r"[a-f0-9]{64,}+"),  # DigitalOcean
    _prefixed("dckr_pat_", r"[A-Za-z0-9_-]{20,}+"),  # Docker Hub
    _prefixed("shp", r"(?:at|ss|ca|pa)_[a-fA-F0-9]{32,}+", needles=("shpat_", "shpss_", "shpca_", "shppa_")),
    _prefixed("SG.", r"[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43,}+"),  # SendGrid
    PresetPattern(
        "bearer-token",
        _BEARER,
        "[BEARER_TOKEN]",
        group="value",
        validate=token_ok,
        trim=trim_dots,
        needles=("(?i)bearer",),
        max_hold=1024,
        tail=_BEARER_TAIL,
    ),
    PresetPattern(
        "basic-auth",
        _BASIC,
        "[BASIC_AUTH]",
        group="value",
        validate=basic_ok,
        needles=("(?i)basic",),
        max_hold=1024,
        tail=_BASIC_TAIL,
    ),
    PresetPattern("jwt", _JWT, "[JWT]", needles=("eyJ",), max_hold=1024),
    PresetPattern(
        "password",
        _USERINFO,
        "[PASSWORD]",
        group="value",
        validate=password_ok,
        needles=("://",),
        needle_re=r"://[^\s/@]*:",
        max_hold=600,
    ),
    PresetPattern(
        "aws-key", _AWS_ACCESS, "[AWS_KEY]", validate=_aws_access_ok, needles=_AWS_PREFIXES, max_hold=32
    ),
    PresetPattern(
        "private-key", _PRIVATE_KEY, "[PRIVATE_KEY]", needles=("-----",), max_hold=65536, tail=PARTIAL
    ),
)

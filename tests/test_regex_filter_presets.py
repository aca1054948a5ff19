"""Built-in presets: what they catch, what they must not fire on, and linear time on hostile input."""

from __future__ import annotations

import time

import pytest

from procflow.processors import RegexFilterProcessor, RegexRule

ALL = RegexFilterProcessor(presets=["pii", "secrets", "urls"], strategy="redact")
PII = RegexFilterProcessor(presets=["pii"], strategy="redact")
SECRETS = RegexFilterProcessor(presets=["secrets"], strategy="redact")
URLS = RegexFilterProcessor(presets=["urls"], strategy="redact")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mail bob@example.com.", "mail [EMAIL]."),
        ("écrire à andré.dupont@exemple.fr", "écrire à [EMAIL]"),
        ("josé@correo.es", "[EMAIL]"),
        ("user+tag@mail.example.co.uk", "[EMAIL]"),
        ("call +1 555 123 4567", "call [PHONE]"),
        ("call +44 20 7946 0958 now", "call [PHONE] now"),
        ("ring +4915112345678", "ring [PHONE]"),
        ("call (555) 123-4567", "call [PHONE]"),
        ("call 555-123-4567", "call [PHONE]"),
        ("call 1-800-555-0199", "call [PHONE]"),
        ("appelez le 06 12 34 56 78", "appelez le [PHONE]"),
        ("ssn 123-45-6789", "ssn [SSN]"),
        ("visa 4111 1111 1111 1111", "visa [CREDIT_CARD]"),
        ("mc 5555-5555-5555-4444", "mc [CREDIT_CARD]"),
        ("amex 378282246310005", "amex [CREDIT_CARD]"),
        ("amex 3782 822463 10005", "amex [CREDIT_CARD]"),
        ("diners 30569309025904", "diners [CREDIT_CARD]"),
        ("visa13 4222222222222", "visa13 [CREDIT_CARD]"),
        ("visa19 4111111111111111110", "visa19 [CREDIT_CARD]"),
    ],
)
def test_pii_finds(text: str, expected: str) -> None:
    """The pii preset redacts emails (non-ASCII local parts whole), international and national phones,
    valid SSNs and cards of every network length, with or without separators."""
    assert PII.redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Order #123456789 shipped",
        "order number 1234567890 and 98765432101",
        "tracking 1Z999AA10123456784",
        "invoice INV-2024-000123 due 2024-05-01",
        "order 4111111111111112 (bad checksum)",
        "ref 1234567812345678 (no network)",
        "ids 000-12-3456 666-12-3456 912-12-3456 123-00-4567 123-45-0000",
        "digits 55512345678901234 in a row",
        "version 1.2.3 and react@18.2.0",
        "ip 10.100.200.123 at 10:30",
        "score +2 points, +100 XP",
        "x555-123-4567 and 555-123-4567-89",
    ],
)
def test_pii_precision(text: str) -> None:
    """Order numbers, bad checksums, invalid SSN ranges, phones inside longer digit runs, versions,
    IPs and scores are left alone."""
    assert PII.redact(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("api_key = abcd1234efgh5678", "api_key = [API_KEY]"),
        ('{"api_key": "abcd1234efgh5678"}', '{"api_key": "[API_KEY]"}'),
        ("OPENAI_API_KEY=abcd1234efgh5678ijkl", "OPENAI_API_KEY=[API_KEY]"),
        ("client_secret: 'Zx9yW8vU7tS6rQ5p'", "client_secret: '[API_KEY]'"),
        ("run --api-key abcd1234efgh5678", "run --api-key [API_KEY]"),
        ("run --token=abcd1234efgh5678", "run --token=[API_KEY]"),
        ("key sk-proj-abc123DEF456ghi789JKL0", "key [API_KEY]"),
        ("key sk-ant-api03-abcDEF123456ghiJKL789", "key [API_KEY]"),
        ("gh ghp_" + "a1B2" * 9, "gh [API_KEY]"),
        ("gh github_pat_" + "11AB" * 6, "gh [API_KEY]"),
        ("slack xoxb-123456789012-abcdefGHIJ", "slack [API_KEY]"),
        ("gitlab glpat-AbC123dEf456GhI789jK", "gitlab [API_KEY]"),
        ("google AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "google [API_KEY]"),
        ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "stripe [API_KEY]"),
        (
            "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc123.",
            "Authorization: Bearer [BEARER_TOKEN].",
        ),
        ("id AKIAIOSFODNN7EXAMPLE", "id [AWS_KEY]"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws_secret_access_key = [AWS_KEY]",
        ),
        ('"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"', '"SecretAccessKey": "[AWS_KEY]"'),
        (
            "k\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA3Tz2\nmL0Vx+/9==\n"
            "-----END RSA PRIVATE KEY-----\nok",
            "k\n[PRIVATE_KEY]\nok",
        ),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA", "[PRIVATE_KEY]"),
    ],
)
def test_secrets_find(text: str, expected: str) -> None:
    """The secrets preset redacts key = value (also JSON, env, YAML and CLI flags, keeping the key),
    fixed-prefix keys, bearer tokens, AWS key ids and secret keys, and PEM private-key blocks."""
    assert SECRETS.redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "api_key = os.environ['API_KEY']",
        "api_key = settings.OPENAI_API_KEY",
        "task-abcdefghij1234567890klmnop",
        "sk-learn is a library",
        "the bearer of this letter, bearer responsibilities",
        "token: 5, secret: yes",
        "ASIAN markets and AKIA",
        "--- a horizontal rule ---",
    ],
)
def test_secrets_precision(text: str) -> None:
    """Placeholders, code references, prose and look-alike words are left alone."""
    assert SECRETS.redact(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("see https://example.com/a?b=1.", "see [URL]."),
        ("(see https://en.wikipedia.org/wiki/Foo_(bar)) ok", "(see [URL]) ok"),
        ("link: http://example.com/path, then", "link: [URL], then"),
        ('<a href="https://example.com/x">', '<a href="[URL]">'),
        ("HTTPS://EXAMPLE.COM!", "[URL]!"),
    ],
)
def test_urls_leave_trailing_punctuation(text: str, expected: str) -> None:
    """URLs stop before sentence punctuation and unbalanced closing brackets."""
    assert URLS.redact(text) == expected


def test_urls_need_a_host() -> None:
    """A bare scheme is not a URL."""
    assert URLS.redact("the http:// prefix and https://.") == "the http:// prefix and https://."


HOSTILE = [
    "a" * 200_000,
    "a." * 100_000,
    "a@" * 100_000,
    "a@b." * 50_000,
    "1 " * 100_000,
    "1-" * 100_000,
    "+1 " * 70_000,
    "0 12 " * 40_000,
    "4" * 200_000,
    "(555) " * 30_000,
    "api_key=" * 25_000,
    "==" * 100_000,
    ":" + "a" * 200_000,
    "--api-key " * 20_000,
    "sk-" * 70_000,
    "sk-" + "a-" * 100_000,
    "ghp_" * 50_000,
    "Bearer " * 30_000,
    "bearer " + "a." * 100_000,
    "AKIA" * 50_000,
    "-----BEGIN PRIVATE KEY-----" * 8_000,
    "-----BEGIN PRIVATE KEY-----\n" + "A" * 150_000 + " -",
    "http://" * 30_000,
    "https://" + "(" * 100_000,
    "https://x" + ")" * 100_000,
]


@pytest.mark.parametrize("text", HOSTILE, ids=lambda t: repr(t[:24]))
def test_presets_run_in_linear_time_on_hostile_input(text: str) -> None:
    """Every preset handles ~200 kB of adversarial input quickly (a generous guard, not a speed test)."""
    started = time.process_time()
    ALL.redact(text)
    redactor = ALL.stream_redactor()
    for start in range(0, min(len(text), 40_000), 97):
        redactor.feed(text[start : start + 97])
    redactor.close()
    assert time.process_time() - started < 10.0


def test_an_endless_custom_match_in_progress_stays_linear() -> None:
    """A custom rule whose match never completes, streamed next to the presets, costs linear time."""
    rule = RegexRule("sealed", r"SECRET-[a-z]+;")
    f = RegexFilterProcessor(rules=[rule], presets=["pii", "secrets", "urls"], strategy="redact")
    text = "SECRET-" + "a" * 150_000
    started = time.process_time()
    redactor = f.stream_redactor()
    out = "".join(redactor.feed(text[i : i + 20]) for i in range(0, len(text), 20)) + redactor.close()
    assert out == text
    assert time.process_time() - started < 10.0

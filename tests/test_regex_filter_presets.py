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


PHONES = [
    # UK
    "07700 900123",
    "020 7946 0958",
    "(01632) 960 000",
    "0161 496 0000",
    "01632 960000",
    "+44 7700 900123",
    "+44 (0)20 7946 0958",
    "(+44) 20 7946 0958",
    "0044 20 7946 0958",
    # Germany
    "030 12345678",
    "0151 23456789",
    "030/12345678",
    "(030) 12345678",
    "0151-23456789",
    "+49 30 12345678",
    "+49 (0)151 23456789",
    "0049 30 12345678",
    # France
    "06 12 34 56 78",
    "01 23 45 67 89",
    "06.12.34.56.78",
    "+33 6 12 34 56 78",
    "+33 (0)1 23 45 67 89",
    # India
    "98765 43210",
    "98765-43210",
    "+91 98765 43210",
    "+91-98765-43210",
    "022 2345 6789",
    # US and Canada
    "(555) 123-4567",
    "555-123-4567",
    "555.123.4567",
    "1-800-555-0199",
    "1 (555) 123-4567",
    "+1 555 123 4567",
    "+1-555-123-4567",
    "+1.555.123.4567",
    "+1 (555) 123-4567",
    "+14155550132",
    # Japan
    "03-1234-5678",
    "090-1234-5678",
    "0120-123-456",
    "+81 3-1234-5678",
    "+81 90 1234 5678",
    # Australia
    "0412 345 678",
    "(02) 9876 5432",
    "04 1234 5678",
    "+61 4 1234 5678",
    "+61 (0)2 9876 5432",
    # more country codes
    "+86 138 0013 8000",
    "138 0013 8000",
    "+55 11 91234-5678",
    "+7 (495) 123-45-67",
    "+353 1 234 5678",
    "+4915112345678",
    "+27 21 123 4567",
    "+52 55 1234 5678",
    "+34 612 345 678",
    "+41 44 668 18 00",
    "+39 06 1234 5678",
    "+82 10-1234-5678",
    "+65 6123 4567",
    "+971 50 123 4567",
]


@pytest.mark.parametrize("phone", PHONES)
@pytest.mark.parametrize("frame", ["{}", "Ana {} today", "Ana: {}.", "({})"])
def test_pii_finds_grouped_phone_numbers(phone: str, frame: str) -> None:
    """International (+CC, (+CC), 00CC) and national phone numbers grouped the usual way are redacted
    whole, with no context word, at the start, middle or end of a sentence and in parentheses."""
    assert PII.redact(frame.format(phone)) == frame.format("[PHONE]")


@pytest.mark.parametrize(
    "text",
    [
        "call me at 07700900123",
        "Phone number: 5551234567",
        "Tel.: 0612345678",
        "TEL 0612345678",
        "Tel/Fax: 0301234567",
        "mobile no. 9876543210",
        "WhatsApp 9876543210",
        "fax: 0301234567",
        "cell # 5551234567",
        "Téléphone : 0612345678",
        "Handy: 01511234567",
        "my phone is 4155550132",
        "Phone (mobile):\n0612345678",
    ],
)
def test_pii_finds_bare_phone_numbers_after_a_phone_word(text: str) -> None:
    """A bare run of 8-15 digits is a phone number right after phone/tel/call/mobile/cell/WhatsApp/fax
    and the like (any case), with only punctuation and connecting words in between; not after others."""
    words, number = text.rsplit(maxsplit=1)
    assert PII.redact(text) == text.removesuffix(number) + "[PHONE]"
    assert PII.redact(f"{words} order {number}") == f"{words} order {number}"


@pytest.mark.parametrize(
    "text",
    [
        "order 123456789",
        "Order #100023456 shipped",
        "invoice INV-2024-000123 due 2024-05-06",
        "on 06/05/2024 at 10:30:45",
        "05-06-2024, 01.02.2024 and 31.12.2024",
        "version 1.2.3.4 and v10.123.456.7890",
        "price $1,234.56 or €1.234,56",
        "total 1 234 567 890 items",
        "ip 192.168.100.123, 010.001.002.003 and 10.0.0.1:8080",
        "ISBN 978-3-16-148410-0, 0-306-40615-2 and 978 0 306 40615 7",
        "card 4000 0566 5566 5557 (bad checksum)",
        "12345678901234567890",
        "id 0207946095812",
        "x07700 900123",
        "020 7946 0958 1234 5678",
        "555 123 4567 8901 and 2 555 123 4567",
        "12345678901, 0612345678, 07700900123, 9876543210",
        "ref 4155550132",
        "+100 XP at UTC+05:30, 2024-05-06T10:30:00+02:00",
        "balance +1234567.89",
        "USPS 9400 1000 0000 0000 0000 00",
        "IBAN DE89 3704 0044 0532 0130 00",
        "zip 90210 90211 90212",
        "lat 51.5074, lon -0.1278",
        "recall 12345678, hotel room 12345678",
        "order number 1234567890, call us",
        "total calls: 12345678",
        "call 12345678-9 or phone 0612345678.5",
        "10:05 1234 5678",
        "uuid 123e4567-e89b-12d3-a456-426614174000",
    ],
)
def test_pii_phone_precision(text: str) -> None:
    """Order, tracking, invoice, ISBN, IBAN and card-like numbers, dates, times, versions, prices, IPs,
    decimals, digit runs glued to more digits or digit groups, and bare numbers without a phone word
    are left alone."""
    assert PII.redact(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ssn 123-45-6789, 023-45-6789 and 023 45 6789", "ssn [SSN], [SSN] and [SSN]"),
        ("call 4111111111111111", "call [CREDIT_CARD]"),
        ("phone: 378282246310005", "phone: [CREDIT_CARD]"),
        ("phone 4000 0566 5566 5556", "phone [CREDIT_CARD]"),
    ],
)
def test_ssns_and_cards_are_not_phone_numbers(text: str, expected: str) -> None:
    """SSN-shaped numbers and valid card numbers keep their own rules, even after a phone word."""
    assert PII.redact(text) == expected


@pytest.mark.parametrize(
    "phone",
    [
        "(+1) (12) (12) (12) (12) (12) (12)",
        "+1 (12) (12) (12) (12) (12) (12)",
        "0035 1 23 45 67 89 01",
        "0123 45 67 89 01",
        "(01234) 56 78 90",
        "1 (555) 123-4567",
        "phone: 123456789012345",
    ],
)
def test_the_longest_phone_numbers_stream_like_whole_text(phone: str) -> None:
    """The longest phone shapes, streamed one character at a time with the smallest window, are
    redacted whole: the stream holds back enough for every phone pattern."""
    f = RegexFilterProcessor(presets=["pii"], strategy="redact", stream_carryover_size=1)
    text = f"x {phone} y"
    redactor = f.stream_redactor()
    released = [redactor.feed(ch) for ch in text]
    assert "".join(released) + redactor.close() == f.redact(text)
    assert f.redact(text).endswith("[PHONE] y")
    assert not any(any(c.isdigit() for c in piece) for piece in released)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("api_key = abcd1234efgh5678", "api_key = [API_KEY]"),
        ('{"api_key": "abcd1234efgh5678"}', '{"api_key": "[API_KEY]"}'),
        ("OPENAI_API_KEY=abcd1234efgh5678ijkl", "OPENAI_API_KEY=[API_KEY]"),
        ("client_secret: 'Zx9yW8vU7tS6rQ5p'", "client_secret: '[SECRET]'"),
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
        ("id AKIA2E0A8F3B244C9986", "id [AWS_KEY]"),
        (
            "aws_secret_access_key = q8Hn2Lr+Vt5Wx7Zb9Pd1Kf3Mg/Js4Qc6Ye0Ua2Io",
            "aws_secret_access_key = [AWS_KEY]",
        ),
        ('"SecretAccessKey": "q8Hn2Lr+Vt5Wx7Zb9Pd1Kf3Mg/Js4Qc6Ye0Ua2Io"', '"SecretAccessKey": "[AWS_KEY]"'),
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
    "(+1 " * 50_000,
    "(0" * 100_000,
    "(01) " * 40_000,
    "0049 " * 40_000,
    "001 " * 50_000,
    "07700 " * 30_000,
    "030/" * 50_000,
    "98765 " * 30_000,
    "138 " * 50_000,
    "+44 (0)" * 30_000,
    "12345678 " * 22_000,
    "call 12345678 " * 14_000,
    ("phone " + ": " * 30 + "12345678 ") * 2_500,
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
    """A custom rule whose match never completes, streamed next to the presets, is held back whole
    (nothing of it leaks before the text ends) at a cost linear in its length."""
    rule = RegexRule("sealed", r"SECRET-[a-z]+;")
    f = RegexFilterProcessor(
        rules=[rule], presets=["pii", "secrets", "urls"], strategy="redact", stream_hold_limit=400_000
    )

    def cost(size: int) -> float:
        text = "SECRET-" + "a" * size
        started = time.process_time()
        redactor = f.stream_redactor()
        released = "".join(redactor.feed(text[i : i + 20]) for i in range(0, len(text), 20))
        assert released == ""
        assert redactor.close() == text
        return time.process_time() - started

    cost(30_000)
    assert cost(300_000) / max(cost(30_000), 1e-3) < 30

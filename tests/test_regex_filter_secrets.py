"""Secret formats, passwords and credentials, removed false positives, and linear time on 1 MB inputs."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procflow.processors import RegexFilterProcessor

ALL = RegexFilterProcessor(presets=["pii", "secrets", "urls"], strategy="redact")
PII = RegexFilterProcessor(presets=["pii"], strategy="redact")
SECRETS = RegexFilterProcessor(presets=["secrets"], strategy="redact")

HF = "hf_" + "abcdefghijklmnopqrstuvwxyzABCDEFGH"
PEM_JSON = (
    '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0B'
    'AQEFAASCBKcwggSjAgEAAoIBAQC7\\nq9Zx+/w==\\n-----END PRIVATE KEY-----\\n", "client_email": "x"}'
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("api_key=sk_live_qwertyuiopasdfghjklzxcvb", "api_key=[API_KEY]"),
        ('"x-api-secret": "MNBVCXZLKJHGFDSAPOIU"', '"x-api-secret": "[SECRET]"'),
        ("api_key: qwertyuiopasdfghjklzxcvb", "api_key: [API_KEY]"),
        (f"token {HF} ok", "token [API_KEY] ok"),
        ("Authorization: Bearer     abc123xyz9", "Authorization: Bearer     [BEARER_TOKEN]"),
        ("Authorization: bearer a1b2c3d4", "Authorization: bearer [BEARER_TOKEN]"),
        ('api_key := "abcd1234efgh5678"', 'api_key := "[API_KEY]"'),
        ("'api_key' => 'abcd1234efgh5678'", "'api_key' => '[API_KEY]'"),
        ("My API key: abcd1234efgh5678", "My API key: [API_KEY]"),
        ("Clave API: abcd1234efgh5678", "Clave API: [API_KEY]"),
        ("Ma clé API : abcd1234efgh5678", "Ma clé API : [API_KEY]"),
        ("我的API密钥：abcd1234efgh5678", "我的API密钥：[API_KEY]"),
        ("key sk-proj-" + "aB3" * 200, "key [API_KEY]"),
        ("gh ghp_" + "a1B2" * 100, "gh [API_KEY]"),
        ("api_key=" + "a1B2c3" * 200 + " end", "api_key=[API_KEY] end"),
        ("Bearer " + "x9Y8" * 2000 + " end", "Bearer [BEARER_TOKEN] end"),
        ("do dop_v1_" + "ab12" * 16, "do [API_KEY]"),
        ("docker dckr_pat_Ab12Cd34Ef56Gh78Ij90Kl", "docker [API_KEY]"),
        ("slack xoxe-1-abcdefghijk12345", "slack [API_KEY]"),
    ],
)
def test_secret_formats_that_used_to_leak(text: str, expected: str) -> None:
    """Values a key name or vendor prefix already calls secret need no digit; Hugging Face tokens,
    several spaces after Bearer, short bearer tokens, ``:=``/``=>`` and prose in four languages, and
    values longer than any former length cap are redacted whole."""
    assert SECRETS.redact(text) == expected


def test_pem_private_key_inside_json_with_escaped_newlines() -> None:
    """A service-account JSON file's private key, newlines escaped as ``\\n``, is redacted whole."""
    out = SECRETS.redact(PEM_JSON)
    assert "MIIEvQ" not in out and "q9Zx" not in out
    assert '"private_key": "[PRIVATE_KEY]\\n"' in out


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("card 5555-5555 5555-4444 ok", "card [CREDIT_CARD] ok"),
        ("tarjeta 4111 1111-1111 1111", "tarjeta [CREDIT_CARD]"),
        ("visa 4000 0000 0000 0000 006", "visa [CREDIT_CARD]"),
        ("carte 4111 1111 1111 1111 123 ok", "carte [CREDIT_CARD] 123 ok"),
        ("dankort 5019 7170 1010 3742", "dankort [CREDIT_CARD]"),
        ("uatp 1354 12345 123454", "uatp [CREDIT_CARD]"),
        ("卡号5019717010103742。", "卡号[CREDIT_CARD]。"),
    ],
)
def test_card_formats(text: str, expected: str) -> None:
    """Mixed separators, 19-digit cards grouped 4-4-4-4-3, and the Dankort and UATP ranges; a short
    number after a card stays out of it."""
    assert PII.redact(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password=hunter2!x", "password=[PASSWORD]"),
        ("DB_PASSWORD=s3cr3t-P@ss", "DB_PASSWORD=[PASSWORD]"),
        ('{"password": "Tr0ub4dor&3"}', '{"password": "[PASSWORD]"}'),
        ("The password: correcthorse9.", "The password: [PASSWORD]."),
        ("mot de passe : Tr0ub4dor&3.", "mot de passe : [PASSWORD]."),
        ("Mon mot de passe: soleil2024", "Mon mot de passe: [PASSWORD]"),
        ("contraseña: Abc12345", "contraseña: [PASSWORD]"),
        ("La contraseña=Madrid#2024 es nueva", "La contraseña=[PASSWORD] es nueva"),
        ("密码：abc123456，请修改", "密码：[PASSWORD]，请修改"),
        ("新密码是Xy7#kq9z", "新密码是[PASSWORD]"),
        (
            "postgres://admin:S3cr3tPass@db.internal:5432/app",
            "postgres://admin:[PASSWORD]@db.internal:5432/app",
        ),
        ("redis://:p4ssw0rd@cache:6379", "redis://:p4ssw0rd@cache:6379"),
        ("mysql://root:hunter22@localhost/db", "mysql://root:[PASSWORD]@localhost/db"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [BASIC_AUTH]"),
        (
            "Cookie: session=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcdefghijk; path=/",
            "Cookie: session=[JWT]; path=/",
        ),
        ("id_token=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcdefghijk", "id_token=[JWT]"),
        ("client_secret: 'Zx9yW8vU7tS6rQ5p'", "client_secret: '[SECRET]'"),
        ("webhook secret: whsec_abcdefghijklmnopqrstuvwxyz012345", "webhook secret: [SECRET]"),
        ("STRIPE_WEBHOOK_SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "STRIPE_WEBHOOK_SECRET=[SECRET]"),
        ("clé secrète : Zx9yW8vU7tS6rQ5p", "clé secrète : [SECRET]"),
    ],
)
def test_passwords_and_credentials(text: str, expected: str) -> None:
    """Passwords in assignments and prose (English, French, Spanish, Chinese), the password of
    connection strings, HTTP Basic credentials, JWTs outside a Bearer header, client and webhook
    secrets: each under its documented rule and replacement."""
    assert SECRETS.redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "password=********",
        "password: <password>",
        "password=${DB_PASSWORD}",
        "PASSWORD=$DB_PASSWORD",
        "password=YOUR_PASSWORD",
        "password: {{ vault_password }}",
        "Password: required",
        "mot de passe : obligatoire",
        "contraseña: incorrecta",
        "密码：******",
        "password=[PASSWORD]",
        "api_key = [API_KEY]",
        "postgres://user:${PGPASSWORD}@db/app",
        "postgres://user:password@db/app",
        "Basic authentication is enabled",
        "Basic plan costs $5",
        "Use the Bearer authentication scheme",
        "api_key = your_api_key_here",
        "api_key: INSERT_YOUR_KEY",
        "secret: yes",
        "client_secret: <client-secret>",
        "the eyJ prefix marks base64 JSON",
        "the passphrase must be long",
        "bypass=true compass=north",
    ],
)
def test_placeholders_and_prose_never_fire(text: str) -> None:
    """Placeholders, form words, redacted values, env-var references and prose about credentials are
    left alone."""
    assert SECRETS.redact(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "id AKIAIOSFODNN7EXAMPLE",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "logo@2x.png and icon@3x.jpg",
        "git@github.com:org/repo.git",
        "git clone git@gitlab.example.com:team/app.git",
    ],
)
def test_known_false_positives_are_gone(text: str) -> None:
    """AWS documentation example keys, image names with ``@2x``, and scp-style git remotes are not
    secrets or e-mails."""
    assert ALL.redact(text) == text


def test_password_in_url_userinfo_is_not_an_email() -> None:
    """``password@host`` inside a URL is the URL's password, never reported as an e-mail."""
    f = RegexFilterProcessor(presets=["pii", "secrets"], strategy="redact")
    assert f.redact("DATABASE_URL=postgres://app:Zq8wLm3x@db.example.com/app") == (
        "DATABASE_URL=postgres://app:[PASSWORD]@db.example.com/app"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mail ivan@почта.xn--p1ai now", "mail [EMAIL] now"),
        ("mail info@xn--80ak6aa92e.xn--p1ai", "mail [EMAIL]"),
        ("mailto:bob@example.com", "mailto:[EMAIL]"),
    ],
)
def test_punycode_email_domains(text: str, expected: str) -> None:
    """Punycode TLDs (``.xn--p1ai``) are e-mail domains; ``mailto:`` addresses stay e-mails."""
    assert PII.redact(text) == expected


ADVERSARIAL = {
    "key names": "api key: " * 20,
    "operators": ":=" * 20,
    "named operators": 'secret" \t:' * 20,
    "prose operators": "Note: 09:45 是 " * 10,
    "password words": "password=" * 10,
    "mot de passe": "mot de passe : " * 10,
    "密码": "密码：" * 20,
    "userinfo": "postgres://a:" * 10,
    "userinfo at": "s://a:b@" * 20,
    "basic": "Basic " * 20,
    "basic base64": "Basic " + "QUJD" * 40,
    "jwt": "eyJ" * 40,
    "jwt dots": "eyJabcdefghij." * 20,
    "bearer spaces": "Bearer" + " " * 200,
    "whsec": "whsec_" * 30,
    "cards": "5555-5555 " * 20,
    "cjk digits": "电话1" * 40,
    "cjk email": "客户a@b" * 40,
    "phone list": "call 212 555 0147, " * 10,
    "pem json": "-----BEGIN PRIVATE KEY-----\\n" + "QUJD\\n" * 40,
    "padding inside": "password=a=" * 20,
    "padding runs": "api_key=abcd1234efgh===" * 20,
}


def _cost(text: str) -> float:
    started = time.process_time()
    (PII if text[:1].isdigit() or text.startswith(("电话", "客户", "call")) else SECRETS).redact(text)
    return time.process_time() - started


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_new_patterns_are_linear_up_to_one_megabyte(name: str) -> None:
    """Each new pattern's adversarial input costs about 10x more at 1 MB than at 100 kB (a quadratic
    pattern would cost 100x); the bound is loose so a busy machine cannot fail it."""
    unit = ADVERSARIAL[name]
    small = unit * (100_000 // len(unit))
    large = unit * (1_000_000 // len(unit))
    _cost(small)
    small_cost = min(_cost(small) for _ in range(3))  # the least disturbed run of each, on a busy machine
    ratio = min(_cost(large) for _ in range(3)) / max(small_cost, 1e-3)
    assert ratio < 30


NESTED = [
    ("password: password=hunter2", "password: password=[PASSWORD]"),
    ("mot de passe : password=hunter2", "mot de passe : password=[PASSWORD]"),
    ("contraseña: password=hunter2", "contraseña: password=[PASSWORD]"),
    ("密码：password=hunter2。", "密码：password=[PASSWORD]。"),
    ("api_key=abcd1234efgh5678&password=hunter2", "api_key=[API_KEY]&password=[PASSWORD]"),
    ("api_key=c2VjcmV0X2tleV8xMjM0NQ== next", "api_key=[API_KEY] next"),
    ("Authorization: Bearer abcdefgh12345678==", "Authorization: Bearer [BEARER_TOKEN]"),
    ("--api-key=abcdefghijkl12345== --verbose", "--api-key=[API_KEY] --verbose"),
]


@pytest.mark.parametrize(("text", "expected"), NESTED)
def test_an_equals_sign_inside_a_value_does_not_hide_the_next_assignment(text: str, expected: str) -> None:
    """Base64 padding ends a value only where the value ends: ``password=`` after a key name is no
    padded value whose match would swallow the assignment it starts (``hunter2`` stayed in clear)."""
    assert SECRETS.redact(text) == expected
    assert ALL.redact(text) == expected


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(NESTED), st.lists(st.integers(1, 9), min_size=1, max_size=12))
def test_nested_assignments_stream_like_the_whole_text(case: tuple[str, str], sizes: list[int]) -> None:
    text, expected = case
    redactor, out, at = SECRETS.stream_redactor(), [], 0
    for size in sizes * 8:
        if at >= len(text):
            break
        out.append(redactor.feed(text[at : at + size]))
        at += size
    out.append(redactor.feed(text[at:]))
    out.append(redactor.close())
    assert "".join(out) == expected

"""A realistic multilingual chat and devops corpus with ground-truth labels, generated deterministically.

Support chats and on-call/devops messages in English, French, Spanish and Chinese: prose written the way
each language writes it (Chinese glues entities to its text, without spaces), with planted e-mails,
phone numbers in national and international formats, SSNs, cards, keys, tokens, passwords, URLs and
private keys, and hard negatives around them (order and invoice numbers, versions, IPs, dates, prices,
placeholders, AWS documentation keys, image names, git remotes). Every planted entity is labelled with
the exact span the built-in presets should redact and its rule name.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass

__all__ = ["LANGUAGES", "Document", "corpus"]

LANGUAGES = ("en", "fr", "es", "zh")


@dataclass(frozen=True, slots=True)
class Document:
    """One message: its language, text and labelled spans ``(start, end, rule)``."""

    language: str
    text: str
    labels: tuple[tuple[int, int, str], ...]


def _luhn_complete(digits: str) -> str:
    total = 0
    for index, ch in enumerate(reversed(digits)):
        value = int(ch)
        if index % 2 == 0:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return digits + str((10 - total % 10) % 10)


class _Entities:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def _pick(self, items: list[str]) -> str:
        return self.rng.choice(items)

    def _alnum(self, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
        out = "".join(self.rng.choice(alphabet) for _ in range(n))
        return out if any(c.isdigit() for c in out) else out[:-1] + "7"

    def email(self, language: str) -> str:
        first = {
            "en": ["jordan", "emily", "sam", "olivia", "noah"],
            "fr": ["andré", "camille", "léa", "hugo", "chloé"],
            "es": ["josé", "lucía", "mateo", "sofía", "pablo"],
            "zh": ["li.wei", "wang.fang", "zhang.min", "chen.jie", "liu.yang"],
        }[language]
        last = ["smith", "dupont", "garcia", "martin", "lopez", "moreau"]
        domain = self._pick(["example.com", "corp.example.net", "exemple.fr", "ejemplo.es", "example.cn"])
        if self.rng.random() < 0.05:
            domain = "почта.xn--p1ai"
        sep = self._pick([".", "_", ""])
        return f"{self._pick(first)}{sep}{self._pick(last)}@{domain}"

    def phone(self, language: str) -> str:
        d = lambda n: "".join(self.rng.choice(string.digits) for _ in range(n))  # noqa: E731
        formats = {
            "en": [f"({d(3)}) 555-{d(4)}", f"+1 415 555 {d(4)}", f"+44 20 7946 {d(4)}", f"555-{d(3)}-{d(4)}"],
            "fr": [
                f"06 {d(2)} {d(2)} {d(2)} {d(2)}",
                f"+33 6 {d(2)} {d(2)} {d(2)} {d(2)}",
                f"01.{d(2)}.{d(2)}.{d(2)}.{d(2)}",
            ],
            "es": [f"+34 612 {d(3)} {d(3)}", f"+34 91 {d(3)} {d(2)} {d(2)}", f"+52 55 {d(4)} {d(4)}"],
            "zh": [f"138 {d(4)} {d(4)}", f"+86 139 {d(4)} {d(4)}", f"010-{d(8)}"],
        }[language]
        return self._pick(formats)

    def bare_phone(self, language: str) -> tuple[str, str]:
        d = lambda n: "".join(self.rng.choice(string.digits) for _ in range(n))  # noqa: E731
        return {
            "en": ("call me at ", f"415555{d(4)}"),
            "fr": ("appelez-moi au ", f"06{d(8)}"),
            "es": ("llámame al ", f"6{d(8)}"),
            "zh": ("有事请拨打", f"139{d(8)}"),
        }[language]

    def card(self) -> str:
        prefix = self._pick(["4", "51", "55", "2221", "6011"])
        number = _luhn_complete(
            prefix + "".join(self.rng.choice(string.digits) for _ in range(15 - len(prefix)))
        )
        if self.rng.random() < 0.15:
            amex = _luhn_complete("37" + "".join(self.rng.choice(string.digits) for _ in range(12)))
            return f"{amex[:4]} {amex[4:10]} {amex[10:]}"
        style = self.rng.random()
        if style < 0.4:
            return " ".join(number[i : i + 4] for i in range(0, 16, 4))
        if style < 0.7:
            return "-".join(number[i : i + 4] for i in range(0, 16, 4))
        if style < 0.8:
            return f"{number[:4]}-{number[4:8]} {number[8:12]}-{number[12:]}"
        return number

    def ssn(self) -> str:
        area = self.rng.randint(1, 665)
        return f"{area:03d}-{self.rng.randint(1, 99):02d}-{self.rng.randint(1, 9999):04d}"

    def key(self) -> str:
        kind = self.rng.random()
        if kind < 0.3:
            return "sk-proj-" + self._alnum(32)
        if kind < 0.5:
            return "ghp_" + self._alnum(36)
        if kind < 0.65:
            return "hf_" + "".join(self.rng.choice(string.ascii_letters) for _ in range(34))
        if kind < 0.8:
            return "AIza" + self._alnum(35)
        return "sk_live_" + self._alnum(24)

    def secret_value(self) -> str:
        return self._alnum(self.rng.randint(20, 40))

    def password(self) -> str:
        word = self._pick(["Sunset", "Tr0ub4dor", "Madrid", "hunter", "Paris", "dragon", "Shanghai"])
        return f"{word}{self.rng.randint(10, 9999)}{self._pick(['!', '#', '', '&x', '%'])}"

    def aws(self) -> str:
        return "AKIA" + "".join(self.rng.choice(string.ascii_uppercase + "234567") for _ in range(16))

    def jwt(self) -> str:
        return "eyJhbGciOiJIUzI1NiJ9.eyJ" + self._alnum(24, string.ascii_letters) + "." + self._alnum(22)

    def url(self) -> str:
        host = self._pick(["docs.example.net", "status.example.com", "wiki.corp.example.org", "ejemplo.es"])
        path = self._pick(["/faq", "/runbooks/db-failover", "/incident/4711?tab=timeline", "/es/ayuda"])
        return f"https://{host}{path}"

    def pem(self) -> str:
        body = "\n".join(self._alnum(64, string.ascii_letters + string.digits + "+/") for _ in range(4))
        return f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"


_FILLER = {
    "en": [
        "Thanks for your patience while we looked into this.",
        "The deploy of v2.14.3 finished at 10:30 and the error rate is back to normal.",
        "Order #48213 shipped on 2024-11-07; the invoice INV-2024-000123 is attached.",
        "I restarted the pod on 10.0.12.7 and the health check passes again.",
        "Your plan costs $389.00 per year, billed annually.",
        "Please don't paste passwords here; use password=******** in examples.",
        "The docs use AKIAIOSFODNN7EXAMPLE as a sample key, that one is fine.",
        "Clone it with git@github.com:acme/billing.git and run make test.",
        "The retina logo is logo@2x.png in the assets folder.",
        "Ticket 2024-11-7731 is closed; tracking number 1Z999AA10123456784.",
    ],
    "fr": [
        "Merci de votre patience pendant que nous vérifions.",
        "Le déploiement de la version 3.2.1 est terminé depuis 14h05.",
        "La commande n° 48213 est partie le 07/11/2024, facture FAC-2024-0042 jointe.",
        "Le serveur 192.168.1.20 répond à nouveau, rien à signaler.",
        "L'abonnement coûte 389,00 € par an.",
        "Dans la doc, écrivez mot de passe : <votre mot de passe>.",
        "Le dépôt est git@gitlab.example.com:equipe/app.git.",
    ],
    "es": [
        "Gracias por su paciencia mientras lo revisamos.",
        "El despliegue de la versión 1.8.0 terminó a las 09:45.",
        "El pedido n.º 48213 salió el 07-11-2024; la factura F-2024-0099 va adjunta.",
        "Reinicié el nodo 10.2.0.15 y ya responde.",
        "El plan cuesta 389,00 € al año.",
        "En los ejemplos usamos contraseña: ${DB_PASSWORD}.",
        "Ticket 2024-11-7731 cerrado.",
    ],
    "zh": [
        "感谢您的耐心等待，我们正在处理。",
        "版本2.3.1已经部署完成，错误率恢复正常。",
        "订单号48213已于2024-11-07发货，发票号INV-2024-000123。",
        "服务器10.0.0.8已经重启，健康检查通过。",
        "年费是389.00元，按年收费。",
        "示例里请写密码：******，不要写真实密码。",
        "请用git@github.com:acme/app.git克隆代码。",
    ],
}

_TEMPLATES: dict[str, list[str]] = {
    "en": [
        "Hi, this is {email:email}, my card {card:credit-card} was charged twice.",
        "You can reach me on {phone:phone} or at {email:email} after 5pm.",
        "My SSN is {ssn:ssn} and the form still says invalid.",
        "The CI logs show OPENAI_API_KEY={key:api-key} in plain text, please rotate it.",
        "curl -H 'Authorization: Bearer {bearer:bearer-token}' {url:url}",
        "aws_access_key_id = {aws:aws-key} was committed by mistake.",
        "DB_PASSWORD={password:password} is in the .env file on the staging box.",
        "Connection string: postgres://app:{password:password}@db.internal:5432/billing",
        "The runbook is at {url:url}, step 3 covers failover.",
        "Here is the deploy key:\n{pem:private-key}\nplease remove it from the wiki.",
        "Set-Cookie: session={jwt:jwt}; Path=/; HttpOnly",
        "{bare_context}{bare:phone} if the pager does not work.",
        "My API key: {secret:api-key}",
    ],
    "fr": [
        "Bonjour, je suis {email:email}, ma carte {card:credit-card} a été débitée deux fois.",
        "Vous pouvez me joindre au {phone:phone} ou par mail à {email:email}.",
        "Le jeton {key:api-key} apparaît dans les logs, merci de le révoquer.",
        "mot de passe : {password:password}",
        "Ma clé API : {secret:api-key}",
        "La procédure est sur {url:url}, voir l'étape 2.",
        "export DATABASE_URL=mysql://admin:{password:password}@10.0.3.4/prod",
        "{bare_context}{bare:phone} en cas d'urgence.",
        "Authorization: Bearer {bearer:bearer-token}",
    ],
    "es": [
        "Hola, soy {email:email} y me cobraron dos veces en la tarjeta {card:credit-card}.",
        "Puede llamarme al {phone:phone} o escribir a {email:email}.",
        "La contraseña: {password:password} sigue en el repositorio.",
        "Clave API: {secret:api-key}",
        "El token {key:api-key} quedó en el log del CI.",
        "La guía está en {url:url}, paso 4.",
        "{bare_context}{bare:phone} por la tarde.",
        "aws_access_key_id={aws:aws-key}",
    ],
    "zh": [
        "你好，我是{email:email}，我的卡号是{card:credit-card}，被扣了两次款。",
        "客户{email:email}说无法登录，请尽快处理。",
        "有问题可以打电话{phone:phone}或者发邮件到{email:email}。",
        "{bare_context}{bare:phone}。",
        "详情见{url:url}。",
        "令牌是{key:api-key}，请马上作废。",
        "密码：{password:password}，请修改。",
        "API密钥：{secret:api-key}。",
        "部署密钥如下：\n{pem:private-key}\n请从文档里删掉。",
        "请求头是Authorization: Bearer {bearer:bearer-token}，已经泄露了。",
    ],
}


def _fill(template: str, language: str, entities: _Entities) -> tuple[str, list[tuple[int, int, str]]]:
    out = ""
    labels: list[tuple[int, int, str]] = []
    rest = template
    bare = entities.bare_phone(language)
    while "{" in rest:
        before, _, rest = rest.partition("{")
        slot, _, rest = rest.partition("}")
        out += before
        kind, _, rule = slot.partition(":")
        if kind == "bare_context":
            out += bare[0]
            continue
        value = {
            "email": lambda: entities.email(language),
            "phone": lambda: entities.phone(language),
            "card": entities.card,
            "ssn": entities.ssn,
            "key": entities.key,
            "secret": entities.secret_value,
            "bearer": lambda: entities.secret_value() + "." + entities.secret_value(),
            "password": entities.password,
            "aws": entities.aws,
            "jwt": entities.jwt,
            "url": entities.url,
            "pem": entities.pem,
            "bare": lambda: bare[1],
        }[kind]()
        labels.append((len(out), len(out) + len(value), rule))
        out += value
    return out + rest, labels


def corpus(size: int, *, seed: int = 13, density: float = 0.45) -> list[Document]:
    """Documents totalling about ``size`` characters, the four languages in equal shares; ``density``
    is the share of sentences that carry an entity (0.45 to measure quality, lower for speed)."""
    rng = random.Random(seed)
    entities = _Entities(rng)
    docs: list[Document] = []
    total = 0
    while total < size:
        language = LANGUAGES[len(docs) % len(LANGUAGES)]
        space = "" if language == "zh" else " "
        text = ""
        labels: list[tuple[int, int, str]] = []
        for _ in range(rng.randint(2, 5)):
            if text:
                text += space if rng.random() < 0.7 else "\n"
            if rng.random() < density:
                piece, found = _fill(rng.choice(_TEMPLATES[language]), language, entities)
                labels.extend((s + len(text), e + len(text), r) for s, e, r in found)
                text += piece
            else:
                text += rng.choice(_FILLER[language])
        docs.append(Document(language, text, tuple(labels)))
        total += len(text) + 1
    return docs

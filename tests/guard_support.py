"""A deterministic stand-in for a judge model: it answers each guard's prompt from keywords.

The same answers are given in-process (a ``ScriptedModel`` script) and over a real socket (a
``FakeProviderServer`` responder), so the guards are tested on both paths with the same verdicts.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

from procflow.models import ModelRequest
from procflow.testing import FakeReply, RecordedRequest, ScriptedModel

EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
PHONE = re.compile(r"\+?\d[\d -]{7,}\d")
NAMES = ("Marie Dupont", "José García", "李伟", "John Smith")
HATE = ("hate", "odio", "haine", "仇恨")
VIOLENCE = ("kill", "matar", "tuer", "杀")
INJECTIONS = (
    "ignore previous instructions",
    "ignora las instrucciones anteriores",
    "ignore les instructions précédentes",
    "忽略之前的指令",
)
TRANSLATIONS = {
    "Bonjour, je voudrais annuler ma commande.": "Hello, I would like to cancel my order.",
    "¿Dónde está mi pedido, por favor?": "Where is my order, please?",
    "我想取消我的订单，谢谢你的帮助。": "I want to cancel my order, thank you for your help.",
}


def verdict_for(system: str, text: str) -> dict[str, Any]:
    """What a careful judge would answer to ``system`` (a guard's prompt) about ``text``."""
    lowered = text.lower()
    if "content moderation classifier" in system:
        return {
            "categories": {
                "hate": 0.95 if any(w in lowered for w in HATE) else 0.02,
                "violence": 0.9 if any(w in lowered for w in VIOLENCE) else 0.01,
                "harassment": 0.1,
            },
            "reason": "keyword judge",
        }
    if "personal and sensitive data" in system:
        entities = [{"type": "email", "value": m.group(), "confidence": 0.99} for m in EMAIL.finditer(text)]
        entities += [{"type": "phone", "value": m.group(), "confidence": 0.9} for m in PHONE.finditer(text)]
        entities += [{"type": "name", "value": n, "confidence": 0.8} for n in NAMES if n in text]
        return {"entities": entities}
    if "attacks on an AI assistant" in system:
        hit = next((p for p in INJECTIONS if p in lowered), None)
        answer: dict[str, Any] = {
            "categories": {"injection": 0.97 if hit else 0.03},
            "reason": "keyword judge",
        }
        if hit and "rewritten_content" in system:
            start = lowered.index(hit)
            answer["rewritten_content"] = (text[:start] + text[start + len(hit) :]).strip(" ,.;")
        return answer
    if system.startswith("Translate the text"):
        return {"translated_text": TRANSLATIONS.get(text, f"(translated) {text}")}
    if "confidential system prompt" in system:
        return {"leaks": [p for p in ("the secret discount code",) if p in text]}
    if system.startswith("Convert the assistant answer"):
        numbers = [int(n) for n in re.findall(r"\d+", text)]
        return {
            "order_id": f"A-{numbers[0]}" if numbers else "unknown",
            "items": numbers[1] if len(numbers) > 1 else 0,
        }
    raise AssertionError("the keyword judge does not know this prompt")


def _texts_of(request: ModelRequest) -> tuple[str, str]:
    system = request.prompt[0].content[0].text  # type: ignore[union-attr]
    user = request.prompt[1].content[0].text  # type: ignore[union-attr]
    return system, user


def scripted_judge(calls: int = 200) -> ScriptedModel:
    """An in-process judge model answering up to ``calls`` judge calls."""

    def answer(request: ModelRequest) -> str:
        return json.dumps(verdict_for(*_texts_of(request)), ensure_ascii=False)

    return ScriptedModel([answer] * calls)


def judge_responder(request: RecordedRequest) -> FakeReply:
    """The keyword judge behind the fake provider server (OpenAI wire)."""
    messages = request.json["messages"]
    system, user = _content(messages[0]["content"]), _content(messages[1]["content"])
    return FakeReply(text=json.dumps(verdict_for(system, user), ensure_ascii=False))


def _content(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)


async def live_text(output: Any) -> AsyncIterator[str]:
    """The text deltas of ``output.full_stream`` as they arrive (``text_stream`` waits for each step)."""
    async for chunk in output.full_stream:
        if chunk.type == "text-delta":
            yield chunk.payload.get("text") or ""


def chunked(text: str, cuts: list[int]) -> list[str]:
    """``text`` cut into pieces of the given lengths (the rest, if any, as the last piece)."""
    chunks, rest = [], text
    for cut in cuts:
        if not rest:
            break
        chunks.append(rest[:cut])
        rest = rest[cut:]
    return [*chunks, rest] if rest else chunks

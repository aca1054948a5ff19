"""The judge call every LLM-backed guard makes: a structured answer from a model, validated, cached.

A :class:`Judge` asks its model for one JSON object matching a pydantic schema — with the provider's
JSON-schema mode where it has one (``response_format``), at temperature 0 — parses it tolerantly (code
fences, text around the object), validates it, and on a bad answer asks once more with the validation
problem. When the model errors, times out, refuses or answers garbage twice, the judge returns
``None`` and the guard applies its documented ``on_error`` policy. Checked text is never logged: log
events carry the processor id, the error type and sizes only.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

import anyio
from pydantic import BaseModel, ValidationError

from procflow._error_rules import format_validation_error
from procflow._messages import JUDGE_USAGE_KEY, RequestContext, Usage
from procflow._messages.prompt import PromptMessage, PromptText
from procflow.errors import ProcflowError

if TYPE_CHECKING:
    from procflow.models import LanguageModel, ModelRequest

__all__ = [
    "DEFAULT_GUARD_MODEL",
    "JUDGE_USAGE_KEY",
    "Judge",
    "JudgeCache",
    "JudgeFailure",
    "JudgeUsage",
    "OnError",
]

logger = logging.getLogger("procflow.guards")

DEFAULT_GUARD_MODEL = "openai/gpt-5-nano"
"""The judge model when a guard is given none; ``PROCFLOW_GUARD_MODEL`` overrides it."""


OnError = Literal["allow", "block"]
"""What a guard does when its judge fails: ``allow`` the content (fail open) or ``block`` it (fail closed)."""

SchemaT = TypeVar("SchemaT", bound=BaseModel)


class JudgeCache(Protocol):
    """Where judge answers may be cached: any ``ServerCache`` (``procflow.cache``) fits."""

    async def get(self, key: str) -> Any: ...

    async def set(self, key: str, value: Any, ttl: float | None = None) -> Any: ...


@dataclass(frozen=True, slots=True)
class JudgeUsage:
    """The tokens one judge call used, and which model and processor used them."""

    processor_id: str
    provider: str
    model_id: str
    usage: Usage


@dataclass(frozen=True, slots=True)
class JudgeFailure:
    """Why a judge gave no verdict: ``kind`` is ``error``, ``timeout`` or ``invalid``."""

    kind: Literal["error", "timeout", "invalid"]
    error_type: str


def extract_json(text: str) -> Any:
    """The first JSON object in ``text``: whole, inside a code fence, or surrounded by prose."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[-1].rsplit("```", 1)[0]
    try:
        return json.loads(stripped)
    except ValueError:
        pass
    start = stripped.find("{")
    while start != -1:
        try:
            value, _ = json.JSONDecoder().raw_decode(stripped, start)
            return value
        except ValueError:
            start = stripped.find("{", start + 1)
    raise ValueError("no JSON object in the answer")


@dataclass(slots=True)
class Judge(Generic[SchemaT]):
    """One guard's structured model call.

    Args:
        processor_id: The guard's id (for logs, usage records and cache keys).
        schema: The pydantic model the answer must match.
        instructions: The system prompt (the guard's documented prompt, or the user's).
        model: A model or ``provider/model`` id; ``None`` uses ``PROCFLOW_GUARD_MODEL`` or
            :data:`DEFAULT_GUARD_MODEL`, resolved on first use.
        timeout: Seconds one call may take.
        cache: Where answers are cached (keyed by content hash and configuration); ``None`` caches
            nothing.
        cache_ttl: Seconds a cached answer lives.
        settings: Guard settings that change the answer (part of the cache key).
    """

    processor_id: str
    schema: type[SchemaT]
    instructions: str
    model: LanguageModel | str | None = None
    timeout: float = 30.0
    cache: JudgeCache | None = None
    cache_ttl: float | None = 3600.0
    settings: Mapping[str, Any] = field(default_factory=dict)
    last_failure: JudgeFailure | None = None
    _resolved: LanguageModel | None = None

    def resolved_model(self) -> LanguageModel:
        """The judge model, resolved once."""
        if self._resolved is None:
            from procflow.models import resolve_model

            choice = self.model or os.environ.get("PROCFLOW_GUARD_MODEL") or DEFAULT_GUARD_MODEL
            self._resolved = resolve_model(choice)
        return self._resolved

    def _key(self, model: LanguageModel, text: str) -> str:
        material = json.dumps(
            {
                "processor": self.processor_id,
                "model": [model.provider, model.model_id],
                "instructions": self.instructions,
                "settings": self.settings,
                "schema": self.schema.__name__,
            },
            sort_keys=True,
            default=str,
        )
        digest = hashlib.sha256(material.encode() + b"\0" + text.encode("utf-8", "surrogatepass"))
        return f"procflow:judge:{digest.hexdigest()}"

    def _request(self, text: str, problem: str | None) -> ModelRequest:
        prompt = [
            PromptMessage(role="system", content=[PromptText(text=self.instructions)]),
            PromptMessage(role="user", content=[PromptText(text=text)]),
        ]
        if problem is not None:
            prompt.append(
                PromptMessage(
                    role="user",
                    content=[
                        PromptText(
                            text=f"Your previous answer was invalid ({problem}). Answer again "
                            "with only the JSON object the schema describes."
                        )
                    ],
                )
            )
        from procflow.models import ModelRequest

        schema = self.schema.model_json_schema()
        return ModelRequest(
            prompt=prompt,
            temperature=0,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": self.schema.__name__, "schema": schema, "strict": False},
            },
        )

    async def verdict(self, text: str, request_context: RequestContext | None = None) -> SchemaT | None:
        """The model's validated answer about ``text``, or ``None`` when the judge failed."""
        self.last_failure = None
        try:
            model = self.resolved_model()
        except ProcflowError as exc:
            self._failed("error", exc)
            return None
        key = self._key(model, text) if self.cache is not None else ""
        cached = await self._cached(key)
        if cached is not None:
            return cached
        problem: str | None = None
        for _ in range(2):
            try:
                with anyio.fail_after(self.timeout):
                    response = await model.generate(self._request(text, problem))
            except TimeoutError as exc:
                self._failed("timeout", exc)
                return None
            except Exception as exc:  # a judge never takes the request down; on_error decides
                self._failed("error", exc)
                return None
            self._record_usage(request_context, model, response.usage)
            try:
                value = self.schema.model_validate(extract_json(response.text))
            except (ValueError, ValidationError) as exc:
                problem = (
                    type(exc).__name__
                    if not isinstance(exc, ValidationError)
                    else format_validation_error(exc, limit=3)
                )
                continue
            await self._store(key, value)
            return value
        self._failed("invalid", ValueError(problem or "invalid answer"))
        return None

    def _failed(self, kind: Literal["error", "timeout", "invalid"], exc: BaseException) -> None:
        self.last_failure = JudgeFailure(kind, type(exc).__name__)
        logger.warning(
            "guard_judge_failed",
            extra={"processor_id": self.processor_id, "kind": kind, "error_type": type(exc).__name__},
        )
        return None

    def _record_usage(self, context: RequestContext | None, model: LanguageModel, usage: Usage) -> None:
        if context is None:
            return
        records = context.get(JUDGE_USAGE_KEY)
        if not isinstance(records, list):
            records = []
            context.set(JUDGE_USAGE_KEY, records)
        records.append(JudgeUsage(self.processor_id, model.provider, model.model_id, usage))

    async def _cached(self, key: str) -> SchemaT | None:
        if self.cache is None:
            return None
        try:
            raw = await self.cache.get(key)
            return self.schema.model_validate(raw) if raw is not None else None
        except Exception as exc:  # a cache that is down is a miss, never a failure
            logger.warning(
                "guard_cache_failed",
                extra={"processor_id": self.processor_id, "error_type": type(exc).__name__},
            )
            return None

    async def _store(self, key: str, value: SchemaT) -> None:
        if self.cache is None:
            return
        try:
            await self.cache.set(key, value.model_dump(mode="json"), self.cache_ttl)
        except Exception as exc:
            logger.warning(
                "guard_cache_failed",
                extra={"processor_id": self.processor_id, "error_type": type(exc).__name__},
            )

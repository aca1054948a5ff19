"""``StructuredOutputProcessor``: the final answer as a validated pydantic object (``result.object``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from procflow._messages import STRUCTURED_OUTPUT_KEY, Message
from procflow.processors._args import ProcessOutputResultArgs
from procflow.processors._guards._base import GuardBase, check_choice
from procflow.processors._guards._judge import Judge, JudgeCache, OnError, extract_json

if TYPE_CHECKING:
    from procflow.models import LanguageModel

__all__ = ["StructuredOutputProcessor"]

ErrorStrategy = Literal["strict", "warn", "fallback"]
ModelT = TypeVar("ModelT", bound=BaseModel)

STRUCTURING_PROMPT = """Convert the assistant answer the user sends into one JSON object that matches \
this JSON schema. Use only information in the answer; leave optional fields out when the answer does \
not give them. Answer with only the JSON object.

{schema}"""
"""The structuring model's prompt (with ``model``)."""


class StructuredOutputProcessor(GuardBase, Generic[ModelT]):
    """Turns the final text into a ``schema`` object, on ``result.object``.

    Without a ``model`` the answer itself must be JSON for the schema (code fences and surrounding
    prose are tolerated); with one, that model structures the answer (a second call, at temperature 0,
    with one repair retry).

    Args:
        schema: The pydantic model of the object.
        model: The structuring model (optional; see :class:`GuardBase`).
        error_strategy: When no valid object can be made: ``"strict"`` (default) stops with a tripwire;
            ``"warn"`` reports and leaves ``result.object`` ``None``; ``"fallback"`` uses
            ``fallback_value``.
        fallback_value: The object (or data validated into one) for ``"fallback"``.
        instructions: Extra guidance for the structuring model.
        timeout: Seconds a judge call may take.
        cache: A ``ServerCache`` for judge answers (keyed by content hash and configuration).
        id: The processor id.
    """

    def __init__(
        self,
        schema: type[ModelT],
        *,
        model: LanguageModel | str | None = None,
        error_strategy: ErrorStrategy = "strict",
        fallback_value: ModelT | dict[str, Any] | None = None,
        instructions: str | None = None,
        timeout: float = 30.0,
        cache: JudgeCache | None = None,
        id: str = "structured-output",
    ) -> None:
        on_error: OnError = "block" if error_strategy == "strict" else "allow"
        super().__init__(model=model, on_error=on_error, timeout=timeout, cache=cache, id=id)
        self.schema = schema
        self.error_strategy = check_choice("error_strategy", error_strategy, ("strict", "warn", "fallback"))
        if self.error_strategy == "fallback" and fallback_value is None:
            from procflow.errors import ConfigurationError

            raise ConfigurationError("error_strategy='fallback' needs fallback_value=...")
        self.fallback = schema.model_validate(fallback_value) if fallback_value is not None else None
        self.use_model = model is not None
        import json

        prompt = STRUCTURING_PROMPT.format(schema=json.dumps(schema.model_json_schema(), ensure_ascii=False))
        if instructions:
            prompt += "\n" + instructions
        self.judge = Judge(
            processor_id=id, schema=schema, instructions=prompt, model=model, timeout=timeout, cache=cache
        )

    def _parse(self, text: str) -> ModelT | None:
        try:
            return self.schema.model_validate(extract_json(text))
        except (ValueError, ValidationError):
            return None

    async def process_output_result(self, args: ProcessOutputResultArgs) -> list[Message]:
        """Validate (or structure) the final answer and put the object on the result.

        The final answer is the last assistant message with text (one per step): what a model wrote
        before calling a tool (a draft, an example object) is not the answer.
        """
        answers = (m.text for m in reversed(args.messages) if m.role == "assistant" and m.text)
        text = next(answers, args.result.text)
        value = await self.judge.verdict(text, args.request_context) if self.use_model else self._parse(text)
        if value is None:
            reason = f"The answer could not be turned into {self.schema.__name__}"
            detail = {"schema": self.schema.__name__, "strategy": self.error_strategy}
            if self.error_strategy == "strict":
                self.abort(args, reason, detail)
            await self.report(reason, detail)
            value = self.fallback
        args.request_context.set(STRUCTURED_OUTPUT_KEY, value)
        return args.messages

"""What the LLM-backed guards share: options, the judge, reporting, and the fail-open/closed policy."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from procflow.errors import ConfigurationError
from procflow.processors._base import ProcessorViolation, notify_violation
from procflow.processors._guards._judge import JudgeCache, JudgeFailure, OnError

if TYPE_CHECKING:
    from procflow.models import LanguageModel

__all__ = ["JUDGED_ROLES", "GuardBase", "check_choice", "check_roles", "check_threshold"]

logger = logging.getLogger("procflow.guards")


def check_threshold(value: float) -> float:
    """A score threshold in [0, 1]."""
    if not 0.0 <= float(value) <= 1.0:
        raise ConfigurationError(f"threshold must be between 0 and 1, not {value!r}")
    return float(value)


def check_choice(name: str, value: str, allowed: Sequence[str]) -> str:
    """``value`` when it is one of ``allowed``; else a ConfigurationError naming the choices."""
    if value not in allowed:
        raise ConfigurationError(f"{name} must be one of {', '.join(map(repr, allowed))}, not {value!r}")
    return value


JUDGED_ROLES: tuple[str, ...] = ("system", "user", "assistant")
"""The message roles whose text an input guard can judge (``roles=``)."""


def check_roles(roles: Sequence[str]) -> frozenset[str]:
    """The roles of ``roles``, each one of :data:`JUDGED_ROLES`; else a ConfigurationError naming them."""
    allowed = ", ".join(map(repr, JUDGED_ROLES))
    if isinstance(roles, str):
        raise ConfigurationError(
            f"roles takes a sequence of roles, e.g. ({roles!r},), not the string {roles!r}"
        )
    unknown = [role for role in roles if role not in JUDGED_ROLES]
    if unknown or not roles:
        raise ConfigurationError(
            f"roles must name one or more of {allowed}, not {list(roles)!r} "
            "(tool traffic is judged in messages of any role)"
        )
    return frozenset(roles)


class GuardBase:
    """Options every LLM-backed guard takes (keyword-only).

    Args:
        model: The judge model: a model object or ``provider/model`` id (``openai/gpt-5-nano``,
            ``ollama/llama3.2``); default ``PROCFLOW_GUARD_MODEL`` or ``openai/gpt-5-nano``.
        on_error: When the judge errors, times out, refuses or answers garbage twice: ``"allow"``
            passes the content (fail open, the original's behaviour) or ``"block"`` stops the request
            with a tripwire (fail closed).
        timeout: Seconds a judge call may take.
        cache: A ``ServerCache`` for judge answers (keyed by content hash and configuration).
        id: The processor id.
    """

    id: str
    on_error: OnError

    def __init__(
        self,
        *,
        model: LanguageModel | str | None,
        on_error: OnError,
        timeout: float,
        cache: JudgeCache | None,
        id: str,
    ) -> None:
        self.id = id
        self.model = model
        self.on_error = check_choice("on_error", on_error, ("allow", "block"))  # type: ignore[assignment]
        if timeout <= 0:
            raise ConfigurationError(f"timeout must be positive, not {timeout!r}")
        self.timeout = timeout
        self.cache = cache

    @property
    def holds_output_stream(self) -> bool:
        """Whether the guard holds streamed text back until its verdict (every stream guard does).

        Held text is released after later chunks arrive, so such a guard must see every chunk of the
        stream in order: inside a workflow's ``.branch`` case (each chunk routed on its own) it cannot.
        """
        return callable(getattr(self, "process_output_stream", None))

    @property
    def stops_output_stream(self) -> bool:
        """Whether the guard holds streamed text to stop or withhold what it flags (not only to report).

        Such a guard protects only the stream it sits in: in a parallel branch whose output ``select``
        drops, the kept branch would release the text first.
        """
        strategy = getattr(self, "strategy", None)
        return self.holds_output_stream and (strategy in ("block", "filter") or self.on_error == "block")

    def judge_failed(self, args: Any, failure: JudgeFailure | None) -> None:
        """Apply ``on_error`` after a failed judge call: return (allow) or abort (block)."""
        kind = failure.kind if failure is not None else "error"
        if self.on_error == "block":
            self.abort(
                args,
                f"Content could not be checked by {self.id} (judge {kind}); blocked because on_error='block'",
                {"error": kind, "error_type": failure.error_type if failure else None},
            )

    def abort(self, args: Any, reason: str, metadata: dict[str, Any]) -> NoReturn:
        """Stop the request with a tripwire naming this processor."""
        args.abort(reason, retry=False, metadata={"processor_id": self.id, **metadata})
        raise AssertionError("abort() returned")  # pragma: no cover - abort always raises

    async def report(self, message: str, detail: dict[str, Any]) -> None:
        """Tell ``on_violation`` (for ``warn``, ``filter`` and redactions) and log the event without text."""
        kinds = detail.get("categories") or detail.get("types") or detail.get("detected")
        logger.info("guard_violation", extra={"processor_id": self.id, "kinds": kinds})
        await notify_violation(self, ProcessorViolation(processor_id=self.id, message=message, detail=detail))

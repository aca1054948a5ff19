"""Stand-in processors for the workflow tests: the seed's moderation pipeline without LLM calls."""

from __future__ import annotations

import re
from typing import Any

from log_support import captured_logs as captured_logs

from procflow import Chunk, Message
from procflow.processors import (
    ProcessInputArgs,
    ProcessorViolation,
    ProcessOutputResultArgs,
    ProcessOutputStreamArgs,
)
from procflow.workflows import ProcessorStepSchema, Workflow, create_step, create_workflow, select

DIGITS = re.compile(r"\d{3,}")


class PIIDetector:
    """Redacts runs of 3+ digits in input, final output and the stream (holding back a trailing digit run)."""

    def __init__(self, *, id: str = "pii-detector") -> None:
        self.id = id
        self.violations: list[ProcessorViolation] = []

    def on_violation(self, violation: ProcessorViolation) -> None:
        self.violations.append(violation)

    def _redact(self, messages: list[Message]) -> list[Message]:
        return [m.with_text(DIGITS.sub("[REDACTED]", m.text)) for m in messages]

    def process_input(self, args: ProcessInputArgs) -> list[Message]:
        return self._redact(args.messages)

    def process_output_result(self, args: ProcessOutputResultArgs) -> list[Message]:
        return self._redact(args.messages)

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Any:
        chunk = args.part
        if chunk.type != "text-delta":
            return chunk
        text = args.state.pop("held", "") + (chunk.text or "")
        args.state["chunks"] = args.state.get("chunks", 0) + 1
        tail = re.search(r"\d+$", text)
        held = tail.group(0) if tail else ""
        args.state["held"] = held
        body = DIGITS.sub("[REDACTED]", text[: len(text) - len(held)])
        return Chunk.text_delta(body) if body else None

    def flush_output_stream(self, args: ProcessOutputStreamArgs) -> Any:
        held = args.state.pop("held", "")
        return Chunk.text_delta(DIGITS.sub("[REDACTED]", held)) if held else None


class Blocker:
    """Blocks (abort) when a phrase appears in the input or in the stream; records violations."""

    def __init__(self, id: str, phrase: str) -> None:
        self.id = id
        self.phrase = phrase
        self.violations: list[ProcessorViolation] = []

    def on_violation(self, violation: ProcessorViolation) -> None:
        self.violations.append(violation)

    def process_input(self, args: ProcessInputArgs) -> None:
        if any(self.phrase in m.text for m in args.messages):
            args.abort(f"{self.id}: blocked", metadata={"phrase": self.phrase})

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Any:
        seen = args.state.get("seen", "") + (args.part.text or "")
        args.state["seen"] = seen
        if self.phrase in seen:
            args.abort(f"{self.id}: blocked in stream")
        return args.part


def prompt_injection_detector() -> Blocker:
    """Stands in for the LLM-backed PromptInjectionDetector (strategy 'block')."""
    return Blocker("prompt-injection-detector", "ignore previous instructions")


def moderation_processor() -> Blocker:
    """Stands in for the LLM-backed ModerationProcessor (strategy 'block')."""
    return Blocker("moderation", "hateful")


def moderation_pipeline(
    pii: PIIDetector | None = None,
    injection: Blocker | None = None,
    moderation: Blocker | None = None,
) -> Workflow:
    """The seed's moderation pipeline: three checks in parallel, then keep the PII branch."""
    return (
        create_workflow(
            id="moderation-pipeline", input_schema=ProcessorStepSchema, output_schema=ProcessorStepSchema
        )
        .parallel(
            [
                create_step(pii or PIIDetector()),
                create_step(injection or prompt_injection_detector()),
                create_step(moderation or moderation_processor()),
            ]
        )
        .map(select("processor:pii-detector"))
        .commit()
    )

"""What the guard-seam tests share: texts in four languages, a tool that echoes, workflow shapes."""

from __future__ import annotations

import json
from typing import Any

from guard_support import scripted_judge

from procflow import Chunk, Message, MessageContent, TextPart, ToolContext, ToolInvocationPart, tool
from procflow.processors import PIIDetector
from procflow.workflows import ProcessorStepSchema, create_workflow, select

# (language, a sentence with personal data, the values a careful judge flags)
PERSONAL = [
    ("en", "Contact John Smith at john.smith@example.com today.", ("John Smith", "john.smith@example.com")),
    (
        "fr",
        "Écrivez à Marie Dupont : marie.dupont@example.fr merci.",
        ("Marie Dupont", "marie.dupont@example.fr"),
    ),
    ("es", "Llame a José García al +34 612 345 678 por favor.", ("José García", "+34 612 345 678")),
    ("zh", "请联系李伟，电话 +86 139 1234 5678。", ("李伟", "+86 139 1234 5678")),
]
HATEFUL = {"en": "I hate you.", "fr": "Je vais te tuer.", "es": "Te odio mucho.", "zh": "我会杀了你。"}
EVERY_SECRET = tuple(value for _, _, values in PERSONAL for value in values)


def dump_chunks(chunks: list[Chunk]) -> str:
    """Everything the consumer received, as one string (payloads of every chunk type)."""
    return json.dumps([c.payload for c in chunks], ensure_ascii=False, default=str)


def leaks(text: str) -> list[str]:
    """The personal values of :data:`PERSONAL` that ``text`` holds in clear."""
    return [secret for secret in EVERY_SECRET if secret in text]


received: list[dict[str, Any]] = []


@tool
async def lookup_customer(query: str, context: ToolContext) -> str:
    """Find a customer; reports progress as a data-customer chunk that echoes the query."""
    received.append({"query": query})
    assert context.writer is not None
    await context.writer.custom({"type": "data-customer", "data": {"query": query, "hits": 1}})
    return f"one customer matches {query}"


def pii_guard() -> PIIDetector:
    """A PII guard redacting with placeholders, judged by the keyword judge."""
    return PIIDetector(model=scripted_judge(), redaction_method="placeholder")


def in_workflow(shape: str, make: Any) -> Any:
    """The guards ``make()`` returns inside a processor workflow of the given shape."""

    def new(id: str) -> Any:
        return create_workflow(id=id, input_schema=ProcessorStepSchema, output_schema=ProcessorStepSchema)

    guards = make()
    if shape == "sequence":
        builder = new("guards")
        for guard in guards:
            builder = builder.then(guard)
        return builder.commit()
    if shape == "nested":
        inner = new("inner")
        for guard in guards:
            inner = inner.then(guard)
        return new("outer").then(inner.commit()).commit()
    first = guards[0]
    return new("guards").parallel([first, Observer()]).map(select(f"processor:{first.id}")).commit()


class Observer:
    """A sibling branch that looks at every message and chunk and changes nothing."""

    id = "observer"
    process_data_parts = True

    def process_input(self, args: Any) -> None:
        return None

    def process_output_stream(self, args: Any) -> Chunk:
        return args.part


SHAPES = ["direct", "sequence", "nested", "parallel"]


def listed(shape: str, make: Any) -> list[Any]:
    """``make()``'s guards listed directly, or as one workflow of ``shape``."""
    return make() if shape == "direct" else [in_workflow(shape, make)]


def history(args: dict[str, Any], result: Any) -> list[Any]:
    """A replayed conversation: a user turn, an assistant tool call with its result, a new user turn."""
    call = ToolInvocationPart(
        tool_call_id="c1", tool_name="lookup_customer", args=args, state="result", result=result
    )
    return [
        Message(role="user", content=MessageContent(parts=[TextPart(text="Find my account.")])),
        Message(role="assistant", content=MessageContent(parts=[call])),
        Message(role="user", content=MessageContent(parts=[TextPart(text="Thanks, and then?")])),
    ]


def in_parallel(*guards: Any) -> Any:
    """``guards`` as parallel branches, the first one's output selected."""
    workflow = create_workflow(id="p", input_schema=ProcessorStepSchema, output_schema=ProcessorStepSchema)
    return workflow.parallel(list(guards)).map(select(f"processor:{guards[0].id}")).commit()


class RejectFirstStep:
    """An output-step validator that sends the first step back once (abort with retry=True)."""

    id = "reject-first"

    def process_output_step(self, args: Any) -> None:
        if args.retry_count == 0:
            args.abort("Answer again, more briefly.", retry=True)

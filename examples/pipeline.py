"""An example guard workflow for a customer-support assistant.

Draw it, check it, run it over the bundled conversations, or chat through it::

    procflow graph examples/pipeline.py:pipeline --format svg -o out/pipeline.svg
    procflow check examples/pipeline.py:pipeline
    procflow run examples/data/conversations.jsonl -p examples/pipeline.py:pipeline -o out/guarded.jsonl
    procflow chat -p examples/pipeline.py:agent --model scripted

The steps: normalise Unicode; then two independent checks in parallel (prompt injection, and requests
that need a human); then redact PII and secrets; then keep the prompt within a token budget.
"""

from __future__ import annotations

import re

from procflow import Agent
from procflow.processors import ProcessInputArgs, RegexFilterProcessor, TokenLimiter, UnicodeNormalizer
from procflow.workflows import ProcessorStepSchema, create_workflow, merge_branches

INJECTION_RULES = [
    {
        "name": "ignore-instructions",
        "pattern": r"(?i)\b(?:ignore|disregard|forget)\s+(?:all\s+)?(?:previous|prior)\s+instructions\b",
    },
    {
        "name": "reveal-system-prompt",
        "pattern": r"(?i)\b(?:reveal|print|show)\s+(?:your|the)\s+system\s+prompt\b",
    },
]


class LegalHandoff:
    """Stops the automated answer when a customer raises legal action: a human takes over."""

    id = "legal-handoff"
    description = "Legal threats go to a human agent."
    _LEGAL = re.compile(r"(?i)\b(?:lawyer|attorney|solicitor|sue|lawsuit|legal action)\b")

    def process_input(self, args: ProcessInputArgs) -> None:
        for message in args.messages:
            if message.role == "user" and self._LEGAL.search(message.text):
                args.abort("Legal matters are handled by a human agent.", metadata={"handoff": "legal"})


pipeline = (
    create_workflow(
        id="support-guards",
        input_schema=ProcessorStepSchema,
        output_schema=ProcessorStepSchema,
        description="Guards around the support assistant",
    )
    .then(UnicodeNormalizer())
    .parallel(
        [
            RegexFilterProcessor(
                rules=INJECTION_RULES, strategy="block", phase="input", id="injection-guard"
            ),
            LegalHandoff(),
        ]
    )
    .map(merge_branches())
    .then(RegexFilterProcessor(presets=["pii", "secrets"], strategy="redact", id="redact-pii-secrets"))
    .then(TokenLimiter(8000))
    .commit()
)

agent = Agent(
    id="support-agent",
    instructions="You are the support assistant of Larkspur Outdoor. Be brief and friendly.",
    model="openai/gpt-5-mini",
    input_processors=[pipeline],
    output_processors=[pipeline],
)

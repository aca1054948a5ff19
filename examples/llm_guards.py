"""LLM-backed guards around an agent, judged by a local model served by Ollama.

Start Ollama and pull a model (``ollama pull llama3.2``), then::

    python examples/llm_guards.py "Mon e-mail est marie.dupont@example.fr, pouvez-vous m'aider ?"

``OLLAMA_BASE_URL`` points at another Ollama (default ``http://localhost:11434``); ``--model`` picks any
model id the router accepts (``openai/gpt-5-nano`` with ``OPENAI_API_KEY``, say).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import anyio

from procflow import Agent
from procflow.processors import (
    LanguageDetector,
    ModerationProcessor,
    PIIDetector,
    PromptInjectionDetector,
    SystemPromptScrubber,
)


def build_agent(model: str) -> Agent:
    """A support agent whose input and output are checked by judges running on ``model``."""
    return Agent(
        id="guarded-support",
        instructions="You are the support assistant of Acme. Answer briefly.",
        model=model,
        input_processors=[
            LanguageDetector(target_languages=["en", "fr", "es", "zh"], languages=["en", "fr", "es", "zh"]),
            PromptInjectionDetector(model=model, strategy="block", on_error="block"),
            ModerationProcessor(model=model, categories=["hate", "harassment", "violence"], threshold=0.7),
            PIIDetector(model=model, strategy="redact", redaction_method="placeholder"),
        ],
        output_processors=[
            PIIDetector(model=model, strategy="redact", redaction_method="placeholder", id="pii-output"),
            SystemPromptScrubber(),
        ],
    )


async def main(argv: Sequence[str] | None = None) -> str:
    """Ask the guarded agent one question; print and return what it answered (or why it refused)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question")
    parser.add_argument("--model", default="ollama/llama3.2")
    args = parser.parse_args(argv)
    result = await build_agent(args.model).generate(args.question)
    if result.tripwire is not None:
        answer = f"[blocked by {result.tripwire.processor_id}] {result.tripwire.reason}"
    else:
        answer = result.text
    print(answer)
    return answer


if __name__ == "__main__":
    anyio.run(main)

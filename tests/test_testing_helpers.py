"""procflow.testing runs single hooks: input step settings, LLM request rewrites and answers."""

from __future__ import annotations

from typing import Any

from procflow import Chunk
from procflow.models import PromptMessage, PromptText
from procflow.processors import ProcessInputStepArgs, ProcessLLMRequestArgs, ProcessLLMRequestResult
from procflow.testing import run_input_step, run_llm_request


async def test_run_input_step_returns_settings() -> None:
    """The seed's DynamicModelProcessor: step 0 picks a model, late steps disable tools."""

    class DynamicModel:
        id = "dynamic-model"

        def process_input_step(self, args: ProcessInputStepArgs) -> dict[str, Any]:
            if args.step_number == 0:
                return {"model": "openai/gpt-5-mini"}
            if args.step_number > 5:
                return {"tool_choice": "none"}
            return {}

    first = await run_input_step(DynamicModel(), ["hi"], step_number=0)
    late = await run_input_step(DynamicModel(), ["hi"], step_number=6)
    assert first.settings is not None and first.settings.model == "openai/gpt-5-mini"
    assert late.settings is not None and late.settings.tool_choice == "none"


async def test_run_llm_request_rewrites_prompt_transiently() -> None:
    """A prompt rewrite is returned for the call while stored messages stay unchanged."""

    class Shout:
        id = "shout"

        def process_llm_request(self, args: ProcessLLMRequestArgs) -> list[PromptMessage]:
            return [
                PromptMessage(role=m.role, content=[PromptText(text=m.text.upper())]) for m in args.prompt
            ]

    outcome = await run_llm_request(Shout(), ["quiet please"])
    assert outcome.prompt is not None and outcome.prompt[0].text == "QUIET PLEASE"
    assert outcome.messages[0].text == "quiet please"


async def test_run_llm_request_can_answer_instead_of_the_model() -> None:
    """Returning chunks answers the call; later request hooks are not consulted."""

    class Cache:
        id = "cache"

        def process_llm_request(self, args: ProcessLLMRequestArgs) -> ProcessLLMRequestResult:
            return ProcessLLMRequestResult(chunks=[Chunk.text_delta("cached")])

    outcome = await run_llm_request(Cache(), ["q"])
    assert outcome.answer is not None and [c.text for c in outcome.answer] == ["cached"]


async def test_run_llm_request_abort_is_a_tripwire() -> None:
    """abort() in process_llm_request comes back as the outcome's tripwire."""

    class Stop:
        id = "stop"

        def process_llm_request(self, args: ProcessLLMRequestArgs) -> None:
            args.abort("over budget")

    outcome = await run_llm_request(Stop(), ["q"])
    assert outcome.tripwire is not None and outcome.tripwire.reason == "over budget"

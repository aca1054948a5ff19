"""ToolCallFilter: remove tool calls and their results from what the model sees.

Why ``process_llm_request``: the filter must change only the model-facing prompt. Rewrites of the
provider prompt are transient — they never reach the message list, memory or UI history — so the stored
conversation keeps its tool traffic, exactly as the seed requires. ``process_input_step`` would have to
edit the live message list, and whatever it removed would be gone from what memory saves. Running before
every model call also gives ``filter_after_tool_steps`` its per-step meaning.
"""

from __future__ import annotations

from collections.abc import Iterable

from procflow._messages.prompt import (
    Prompt,
    PromptMessage,
    PromptPart,
    PromptText,
    PromptToolCall,
    PromptToolResult,
)
from procflow.errors import ConfigurationError
from procflow.processors._args import ProcessLLMRequestArgs, ProcessLLMRequestResult
from procflow.processors._base import ProcessorBase
from procflow.processors._tool_traffic import current_run_tool_steps, to_text

__all__ = ["ToolCallFilter"]


class ToolCallFilter(ProcessorBase):
    """Removes tool calls and their results from the prompt sent to the model.

    By default every tool call from earlier turns (history, recalled memory) is removed with its
    result, while the current turn's tool traffic stays, so the model still sees what the tools it just
    called returned. The current turn is this run and the tool traffic after the conversation's last
    user message: a client that runs the tools itself (through the gateway, one model step per request)
    sends the call the model just made with its result, and it stays as if the agent had run the tool.
    With ``filter_after_tool_steps=n`` the filter also applies inside the turn, keeping only its last
    ``n`` tool steps (model steps that called tools; a client's assistant message calling tools is one).

    Only the model-facing prompt changes: the message list and memory keep every call and result.
    Prompt messages left with no content are dropped; messages the filter does not touch are passed on
    as the very same objects.

    Args:
        exclude: Names of the tools to filter; ``None`` (default) filters every tool.
        filter_after_tool_steps: Also filter inside the current turn, keeping its last ``n`` tool steps
            (``0`` filters them all). ``None`` (default) keeps the whole current turn.
        preserve_model_output: Replace each removed call that has a result by a compact text record of
            what the model was shown (``[tool_name result: ...]``), dropping the raw arguments and the
            raw result: for a tool that declares ``to_model_output``, its model output (stored with the
            result when the tool ran), else the result itself.
        max_output_chars: The longest preserved record text; longer outputs are cut with ``…``.
        id: The processor id (default ``"tool-call-filter"``).
    """

    name = "ToolCallFilter"

    def __init__(
        self,
        *,
        exclude: Iterable[str] | None = None,
        filter_after_tool_steps: int | None = None,
        preserve_model_output: bool = False,
        max_output_chars: int = 2000,
        id: str = "tool-call-filter",
    ) -> None:
        if isinstance(exclude, str):
            raise ConfigurationError(
                f"ToolCallFilter exclude must be a list of tool names, not the string {exclude!r}; "
                f"write exclude=[{exclude!r}]"
            )
        if filter_after_tool_steps is not None and (
            type(filter_after_tool_steps) is not int or filter_after_tool_steps < 0
        ):
            raise ConfigurationError(
                f"ToolCallFilter filter_after_tool_steps must be None or an int >= 0, got "
                f"{filter_after_tool_steps!r}"
            )
        if type(max_output_chars) is not int or max_output_chars < 1:
            raise ConfigurationError(
                f"ToolCallFilter max_output_chars must be an int >= 1, got {max_output_chars!r}"
            )
        self.id = id
        self.exclude: frozenset[str] | None = None if exclude is None else frozenset(exclude)
        self.filter_after_tool_steps = filter_after_tool_steps
        self.preserve_model_output = preserve_model_output
        self.max_output_chars = max_output_chars

    def __repr__(self) -> str:
        return f"ToolCallFilter(exclude={sorted(self.exclude) if self.exclude else None}, id={self.id!r})"

    def _protected(self, args: ProcessLLMRequestArgs) -> set[str]:
        steps = current_run_tool_steps(args.message_list, args.steps)
        n = self.filter_after_tool_steps
        if n is not None:
            steps = steps[-n:] if n else []
        return {tool_call_id for step in steps for tool_call_id in step}

    def process_llm_request(self, args: ProcessLLMRequestArgs) -> ProcessLLMRequestResult | None:
        """Return the prompt without the filtered tool traffic, or ``None`` when nothing is filtered."""
        protected = self._protected(args)

        def removed(part: PromptPart) -> bool:
            return (
                isinstance(part, PromptToolCall | PromptToolResult)
                and part.tool_call_id not in protected
                and (self.exclude is None or part.tool_name in self.exclude)
            )

        results = {
            p.tool_call_id: p
            for m in args.prompt
            if m.role == "tool"
            for p in m.content
            if isinstance(p, PromptToolResult)
        }
        out: Prompt = []
        changed = False
        for message in args.prompt:
            if not any(removed(p) for p in message.content):
                out.append(message)
                continue
            changed = True
            content: list[PromptPart] = []
            for part in message.content:
                if not removed(part):
                    content.append(part)
                elif self.preserve_model_output and isinstance(part, PromptToolCall):
                    result = results.get(part.tool_call_id)
                    if result is not None:
                        content.append(PromptText(text=self._record(result)))
            if content:
                out.append(PromptMessage(role=message.role, content=content))
        return ProcessLLMRequestResult(prompt=out) if changed else None

    def _record(self, result: PromptToolResult) -> str:
        # The prompt's result is already model-facing: a tool's declared model output, not its raw result.
        output = to_text(result.result)
        if len(output) > self.max_output_chars:
            output = output[: self.max_output_chars - 1] + "…"
        kind = "error" if result.is_error else "result"
        return f"[{result.tool_name} {kind}: {output}]"

"""Helpers for users' tests: run one processor hook alone (scripted models arrive with the agent)."""

from procflow.testing.processors import (
    HookOutcome,
    run_input,
    run_input_step,
    run_llm_request,
    run_output_result,
    run_output_step,
    run_output_stream,
)

__all__ = [
    "HookOutcome",
    "run_input",
    "run_input_step",
    "run_llm_request",
    "run_output_result",
    "run_output_step",
    "run_output_stream",
]

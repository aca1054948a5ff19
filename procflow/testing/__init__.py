"""Helpers for users' tests: run one processor hook alone, a scripted model, a fake provider server."""

from procflow.testing.fake_provider import FakeProviderServer, FakeReply, FakeToolCall, RecordedRequest
from procflow.testing.processors import (
    HookOutcome,
    run_api_error,
    run_input,
    run_input_step,
    run_llm_request,
    run_output_result,
    run_output_step,
    run_output_stream,
)
from procflow.testing.scripted import ScriptedModel, ScriptedStep, ScriptExhaustedError, ScriptItem

__all__ = [
    "FakeProviderServer",
    "FakeReply",
    "FakeToolCall",
    "HookOutcome",
    "RecordedRequest",
    "ScriptExhaustedError",
    "ScriptItem",
    "ScriptedModel",
    "ScriptedStep",
    "run_api_error",
    "run_input",
    "run_input_step",
    "run_llm_request",
    "run_output_result",
    "run_output_step",
    "run_output_stream",
]

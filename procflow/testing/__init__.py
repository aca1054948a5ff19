"""Helpers for users' tests: run one processor hook alone, a scripted model, a fake provider server."""

from procflow._public import publish as _publish
from procflow.testing._fake_provider import FakeProviderServer, FakeReply, FakeToolCall, RecordedRequest
from procflow.testing._processors import (
    run_api_error,
    run_input,
    run_input_step,
    run_llm_request,
    run_output_result,
    run_output_step,
    run_output_stream,
)
from procflow.testing._scripted import ScriptedModel, ScriptedStep, ScriptExhaustedError

__all__ = [
    "FakeProviderServer",
    "FakeReply",
    "FakeToolCall",
    "RecordedRequest",
    "ScriptExhaustedError",
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

_publish(__name__, globals(), __all__)

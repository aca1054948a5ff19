"""Layer 0: messages, parts, the live message list, stream chunks, request context and tripwires."""

from procflow._messages.chunk import CHUNK_TYPES, Chunk, is_data_type
from procflow._messages.message import Message, MessageContent, Role, SignalInfo, new_id
from procflow._messages.message_list import MessageInput, MessageList, Source, UIMessage
from procflow._messages.parts import (
    DataPart,
    FilePart,
    ImagePart,
    Part,
    ReasoningPart,
    SourcePart,
    StepStartPart,
    TextPart,
    ToolInvocationPart,
)
from procflow._messages.prompt import (
    Prompt,
    PromptFile,
    PromptMessage,
    PromptPart,
    PromptReasoning,
    PromptText,
    PromptToolCall,
    PromptToolResult,
    prompt_text,
)
from procflow._messages.request_context import (
    JUDGE_USAGE_KEY,
    RESOURCE_ID_KEY,
    STRUCTURED_OUTPUT_KEY,
    THREAD_ID_KEY,
    RequestContext,
)
from procflow._messages.results import FinishReason, OutputResult, StepResult, ToolCall, ToolResult, Usage
from procflow._messages.signals import render_signal, validate_xml_name
from procflow._messages.tripwire import TripWire, TripwireInfo

__all__ = [
    "CHUNK_TYPES",
    "JUDGE_USAGE_KEY",
    "RESOURCE_ID_KEY",
    "STRUCTURED_OUTPUT_KEY",
    "THREAD_ID_KEY",
    "Chunk",
    "DataPart",
    "FilePart",
    "FinishReason",
    "ImagePart",
    "Message",
    "MessageContent",
    "MessageInput",
    "MessageList",
    "OutputResult",
    "Part",
    "Prompt",
    "PromptFile",
    "PromptMessage",
    "PromptPart",
    "PromptReasoning",
    "PromptText",
    "PromptToolCall",
    "PromptToolResult",
    "ReasoningPart",
    "RequestContext",
    "Role",
    "SignalInfo",
    "Source",
    "SourcePart",
    "StepResult",
    "StepStartPart",
    "TextPart",
    "ToolCall",
    "ToolInvocationPart",
    "ToolResult",
    "TripWire",
    "TripwireInfo",
    "UIMessage",
    "Usage",
    "is_data_type",
    "new_id",
    "prompt_text",
    "render_signal",
    "validate_xml_name",
]

from procflow._public import publish_root as _publish_root

_publish_root(__name__, globals())

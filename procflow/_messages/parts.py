"""Message parts: the typed pieces a message's content is made of.

Text lives in parts. A message carries text, reasoning, tool invocations (a call, later completed with
its result), files and images, sources, step boundaries and application ``data-*`` parts.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

__all__ = [
    "DataPart",
    "FilePart",
    "ImagePart",
    "Part",
    "ReasoningPart",
    "SourcePart",
    "StepStartPart",
    "TextPart",
    "ToolInvocationPart",
]


class _PartBase(BaseModel):
    # protected_namespaces=(): pydantic < 2.10 warns that ToolInvocationPart.model_output starts "model_".
    model_config = ConfigDict(extra="allow", validate_assignment=False, protected_namespaces=())


class TextPart(_PartBase):
    """Plain text written by the user or the model."""

    type: Literal["text"] = "text"
    text: str


class ReasoningPart(_PartBase):
    """Model reasoning ("thinking") text, kept apart from the answer."""

    type: Literal["reasoning"] = "reasoning"
    text: str
    signature: str | None = None


class ToolInvocationPart(_PartBase):
    """A tool call by the model and, once executed, its result.

    ``state`` is ``"call"`` until the tool has run, then ``"result"`` with ``result`` set.
    ``model_output`` is what the model is shown in place of ``result`` when the tool declares a
    ``to_model_output`` (``None``: the model sees ``result``).
    """

    type: Literal["tool-invocation"] = "tool-invocation"
    tool_call_id: str
    tool_name: str
    args: dict[str, Any] = Field(default_factory=dict)
    state: Literal["call", "result"] = "call"
    result: Any = None
    is_error: bool = False
    model_output: Any = None


class FilePart(_PartBase):
    """A file attached to a message, by URL or inline base64 data."""

    type: Literal["file"] = "file"
    media_type: str
    data: str | None = None
    url: str | None = None
    filename: str | None = None


class ImagePart(_PartBase):
    """An image attached to a message, by URL or inline base64 data."""

    type: Literal["image"] = "image"
    media_type: str = "image/png"
    data: str | None = None
    url: str | None = None


class SourcePart(_PartBase):
    """A source the model cited (for example a web page)."""

    type: Literal["source"] = "source"
    source_id: str
    url: str | None = None
    title: str | None = None


class StepStartPart(_PartBase):
    """Marks the start of an agent step inside an assistant message."""

    type: Literal["step-start"] = "step-start"


class DataPart(_PartBase):
    """Application data; ``type`` must start with ``data-``."""

    type: str
    data: Any = None
    id: str | None = None


def _part_tag(value: Any) -> str | None:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    if not isinstance(kind, str):
        return None
    return "data" if kind.startswith("data-") else kind


Part = Annotated[
    Annotated[TextPart, Tag("text")]
    | Annotated[ReasoningPart, Tag("reasoning")]
    | Annotated[ToolInvocationPart, Tag("tool-invocation")]
    | Annotated[FilePart, Tag("file")]
    | Annotated[ImagePart, Tag("image")]
    | Annotated[SourcePart, Tag("source")]
    | Annotated[StepStartPart, Tag("step-start")]
    | Annotated[DataPart, Tag("data")],
    Discriminator(_part_tag),
]
"""Any message part, discriminated by its ``type`` (``data-*`` types map to :class:`DataPart`)."""

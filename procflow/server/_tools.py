"""The client's tools as procflow tools: offered to the upstream model, run by the client.

A gateway never executes tools. Each tool of the request becomes a client-side :class:`Tool` (no
``execute``) whose JSON schema is the client's own, sent upstream unchanged; when the model calls one,
the call ends with ``finish_reason: tool_calls`` and the client runs it and sends the result back in
its next request, as with the upstream directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from procflow._tools import Tool, ToolSpec

__all__ = ["client_tools"]


class _AnyArguments(BaseModel):
    # The client validates its own arguments; procflow passes them through as the model wrote them.
    model_config = ConfigDict(extra="allow")


class _Definition(Protocol):
    @property
    def function(self) -> Any: ...


@dataclass(frozen=True, slots=True)
class _ClientTool(Tool):
    """A tool whose schema is the client's JSON schema, sent to the model as given."""

    parameters: dict[str, Any] | None = None

    def spec(self) -> ToolSpec:
        """The client's name, description and parameters."""
        return ToolSpec(self.name, self.description, dict(self.parameters or {}))


def client_tools(definitions: Sequence[_Definition]) -> dict[str, Tool]:
    """One client-side tool per definition of the request's ``tools``, by name."""
    out: dict[str, Tool] = {}
    for definition in definitions:
        function = definition.function
        out[function.name] = _ClientTool(
            name=function.name,
            description=function.description,
            input_model=_AnyArguments,
            parameters=function.parameters,
        )
    return out

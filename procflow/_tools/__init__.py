"""Function tools the model can call: a name, a description, a pydantic-validated input, a function."""

from procflow._tools._tool import Tool, ToolContext, ToolSpec, tool

__all__ = ["Tool", "ToolContext", "ToolSpec", "tool"]

from procflow._public import publish_root as _publish_root

_publish_root(__name__, globals())

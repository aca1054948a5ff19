"""Function tools the model can call: a name, a description, a pydantic-validated input, a function."""

from procflow.tools.tool import Tool, ToolContext, ToolSpec, tool

__all__ = ["Tool", "ToolContext", "ToolSpec", "tool"]

"""``WorkingMemory``: what the model keeps about the user, shown in a tagged system message, and its tool."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from procflow._messages.request_context import RequestContext
from procflow._tools._tool import Tool, ToolContext
from procflow.errors import ConfigurationError
from procflow.memory._storage import MemoryStorage, Scope, WorkingMemoryUpdate
from procflow.memory._turn import pending_turn, resource_of, thread_of
from procflow.processors._args import ProcessInputArgs, ProcessInputStepArgs, ProcessInputStepResult

__all__ = [
    "DEFAULT_WORKING_MEMORY_TEMPLATE",
    "UPDATE_WORKING_MEMORY_TOOL",
    "WORKING_MEMORY_ID",
    "WORKING_MEMORY_TAG",
    "WorkingMemory",
]

WORKING_MEMORY_ID = "working-memory"
"""The id of :class:`WorkingMemory` (a processor of yours with this id replaces memory's own)."""

WORKING_MEMORY_TAG = "working-memory"
"""Tag of the system message that shows the working memory to the model."""

UPDATE_WORKING_MEMORY_TOOL = "update_working_memory"
"""Name of the tool the model calls to replace the working memory."""

DEFAULT_WORKING_MEMORY_TEMPLATE = """# User
- Name:
- Preferences:
- Goals:
- Facts to remember:
"""
"""The Markdown template shown until the model first writes the working memory."""

_INSTRUCTIONS = (
    "You have a working memory: what you know about the user and the task, kept across conversations. "
    "When you learn something worth keeping, call {tool} with the whole updated memory{shape}. "
    "Never mention the working memory to the user."
)


class WorkingMemory:
    """Shows the stored working memory to the model and lets it update it (id ``working-memory``).

    Input (``process_input``): adds a system message tagged :data:`WORKING_MEMORY_TAG` with the working
    memory (or the template while none is stored). Each step (``process_input_step``): offers the
    :data:`UPDATE_WORKING_MEMORY_TOOL` tool, unless ``read_only``. The update is saved with the turn by
    ``MessageHistory``, in the same transaction — so a turn stopped by a tripwire changes nothing.

    Args:
        storage: Where the working memory lives.
        scope: ``"resource"`` (default: shared by every thread of the user) or ``"thread"``.
        template: The Markdown template (ignored with ``schema``).
        schema: A pydantic model the working memory must fit; stored as its JSON.
        read_only: Show the working memory but offer no tool to change it.
        id: The processor id (default ``working-memory``).
    """

    def __init__(
        self,
        storage: MemoryStorage,
        *,
        scope: Scope = "resource",
        template: str = DEFAULT_WORKING_MEMORY_TEMPLATE,
        schema: type[BaseModel] | None = None,
        read_only: bool = False,
        id: str = WORKING_MEMORY_ID,
    ) -> None:
        if scope not in ("thread", "resource"):
            raise ConfigurationError(f"scope must be 'thread' or 'resource', got {scope!r}")
        if schema is not None and not (isinstance(schema, type) and issubclass(schema, BaseModel)):
            raise ConfigurationError("schema must be a pydantic model class")
        self.id = id
        self.storage = storage
        self.scope: Scope = scope
        self.template = template
        self.schema = schema
        self.read_only = read_only
        self.tool = self._tool()

    def __repr__(self) -> str:
        return f"WorkingMemory(scope={self.scope!r}, read_only={self.read_only})"

    def key(self, context: RequestContext) -> str:
        """The thread id or resource id the working memory is stored under for this request."""
        thread = thread_of(context, self.id)
        if self.scope == "thread":
            return thread
        resource = resource_of(context)
        if resource is None:
            raise ConfigurationError(
                f"{self.id}: scope 'resource' needs a resource id; call generate()/stream() with "
                "memory={'thread': ..., 'resource': 'USER_ID'} or use scope='thread'"
            )
        return resource

    async def process_input(self, args: ProcessInputArgs) -> None:
        """Add the tagged system message with the stored working memory (or the template)."""
        stored = await self.storage.get_working_memory(self.scope, self.key(args.request_context))
        if stored is None:
            stored = self.template if self.schema is None else "{}"
        shape = "" if self.schema is None else " as JSON fitting its schema"
        text = _INSTRUCTIONS.format(tool=UPDATE_WORKING_MEMORY_TOOL, shape=shape)
        args.message_list.clear_system_messages(tag=WORKING_MEMORY_TAG)
        args.message_list.add_system(
            f"{text}\n<working_memory>\n{stored}\n</working_memory>", tag=WORKING_MEMORY_TAG
        )

    def process_input_step(self, args: ProcessInputStepArgs) -> ProcessInputStepResult | None:
        """Offer the update tool for this step (not when read-only)."""
        if self.read_only:
            return None
        return ProcessInputStepResult(tools={**args.tools, UPDATE_WORKING_MEMORY_TOOL: self.tool})

    def _tool(self) -> Tool:
        memory_type: Any = str if self.schema is None else self.schema
        description = "The whole updated working memory" + (
            " in the template's Markdown" if self.schema is None else ""
        )
        model = create_model(
            "update_working_memory_args",
            __config__=ConfigDict(extra="forbid"),
            memory=(memory_type, Field(description=description)),
        )
        return Tool(
            name=UPDATE_WORKING_MEMORY_TOOL,
            description="Replace the working memory (what you keep about the user across conversations).",
            input_model=model,
            execute=self._update,
            wants_context=True,
            is_async=True,
        )

    async def _update(self, memory: Any, context: ToolContext) -> str:
        text = memory if isinstance(memory, str) else memory.model_dump_json()
        self.key(context.request_context)  # fails now, not at save time, when no key can be found
        pending_turn(context.request_context).working_memory = WorkingMemoryUpdate(self.scope, text)
        return "Working memory updated."

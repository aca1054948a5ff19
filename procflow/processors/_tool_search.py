"""ToolSearchProcessor: let the model search a large tool set and load only the tools it needs.

Instead of sending every tool's schema on every call, the processor gives the model two meta-tools,
``search_tools`` (BM25 over names and descriptions, with a boost for name matches) and ``load_tool``.
Loaded tools are offered from the next step on and stay loaded for the conversation thread
(``RequestContext.thread_id``) until ``ttl`` seconds pass without the thread being used; without a
thread id they last for the request.
"""

from __future__ import annotations

import dataclasses
import difflib
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from procflow._tools._tool import Tool
from procflow.errors import ConfigurationError
from procflow.processors._args import ProcessInputStepArgs, ProcessInputStepResult
from procflow.processors._base import ProcessorBase
from procflow.processors._bm25 import BM25Index

__all__ = ["DEFAULT_TOOL_SEARCH_INSTRUCTIONS", "LOAD_TOOL", "SEARCH_TOOLS", "ToolSearchProcessor"]

SEARCH_TOOLS = "search_tools"
"""Name of the search meta-tool."""

LOAD_TOOL = "load_tool"
"""Name of the load meta-tool."""

DEFAULT_TOOL_SEARCH_INSTRUCTIONS = (
    "More tools exist than you can see. To find one, call search_tools with a few keywords. "
    "Then call load_tool with the exact name (tool_name) or names (tool_names) from the results. "
    "A loaded tool can be called from your next step on."
)
"""The system message the processor adds on each step (pass ``instructions=`` to change it)."""

_DESCRIPTION_LIMIT = 150
_STATE_KEY = "loaded"


class _SearchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(description="Keywords for the capability you need, e.g. 'send email' or 'weather'.")


class _LoadArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool_name: str | None = Field(default=None, description="The exact name of one tool to load.")
    tool_names: list[str] | None = Field(default=None, description="Exact names of several tools to load.")


@dataclasses.dataclass(slots=True)
class _ThreadEntry:
    names: dict[str, None]
    touched: float


class _ThreadStore:
    """Loaded tool names per thread; an entry expires ``ttl`` seconds after its last use."""

    __slots__ = ("_clock", "_entries", "_ttl")

    def __init__(self, ttl: float | None, clock: Callable[[], float]) -> None:
        self._ttl = ttl
        self._clock = clock
        # Insertion order is last-use order, so expired entries are always at the front.
        self._entries: dict[str, _ThreadEntry] = {}

    def _sweep(self, now: float) -> None:
        if self._ttl is None:
            return
        while self._entries:
            thread_id, entry = next(iter(self._entries.items()))
            if now - entry.touched <= self._ttl:
                return
            del self._entries[thread_id]

    def names(self, thread_id: str) -> dict[str, None]:
        """The thread's loaded names (a live dict), marking the thread as used now."""
        now = self._clock()
        self._sweep(now)
        entry = self._entries.pop(thread_id, None) or _ThreadEntry({}, now)
        entry.touched = now
        self._entries[thread_id] = entry
        return entry.names

    def peek(self, thread_id: str) -> list[str]:
        """The thread's loaded names, without marking it as used."""
        self._sweep(self._clock())
        entry = self._entries.get(thread_id)
        return list(entry.names) if entry else []

    def clear(self, thread_id: str | None) -> None:
        if thread_id is None:
            self._entries.clear()
        else:
            self._entries.pop(thread_id, None)

    def __len__(self) -> int:
        self._sweep(self._clock())
        return len(self._entries)


def _catalog(tools: Mapping[str, Tool] | Iterable[Tool]) -> dict[str, Tool]:
    catalog: dict[str, Tool] = {}
    items = tools.items() if isinstance(tools, Mapping) else ((t.name, t) for t in tools)
    for name, item in items:
        if not isinstance(item, Tool):
            raise ConfigurationError(
                f"ToolSearchProcessor: {name!r} is a {type(item).__name__}, not a Tool; wrap functions with "
                "procflow._tools._tool(...)"
            )
        if name in (SEARCH_TOOLS, LOAD_TOOL):
            raise ConfigurationError(
                f"ToolSearchProcessor: a searchable tool may not be named {name!r} (reserved for the "
                "meta-tool); rename it"
            )
        if name in catalog:
            raise ConfigurationError(
                f"ToolSearchProcessor: two tools are named {name!r}; names must be unique"
            )
        catalog[name] = item if item.name == name else dataclasses.replace(item, name=name)
    return catalog


def _short(text: str) -> str:
    return text if len(text) <= _DESCRIPTION_LIMIT else text[: _DESCRIPTION_LIMIT - 1].rstrip() + "…"


class ToolSearchProcessor(ProcessorBase):
    """Offer ``search_tools`` and ``load_tool`` instead of a large tool set (id ``tool-search``).

    Use it as an input processor (it implements ``process_input_step``). The agent's own tools stay
    available as they are; the searchable tools are offered only once loaded.

    Args:
        tools: The searchable tools, as a mapping (keys are the names the model uses) or a list.
        top_k: Most results ``search_tools`` returns.
        min_score: Results must score above this (BM25 plus name boost; 0 keeps every match).
        ttl: Seconds a thread's loaded tools survive without the thread being used (``None``: forever).
        instructions: System message telling the model how to use the meta-tools (``None``: none).
        clock: Monotonic clock in seconds, for the TTL (injectable for tests).
        id: Processor id, to have two in one pipeline.
    """

    name = "Tool search"
    description = "Lets the model search and load tools on demand instead of receiving all of them."

    def __init__(
        self,
        tools: Mapping[str, Tool] | Iterable[Tool],
        *,
        top_k: int = 5,
        min_score: float = 0.0,
        ttl: float | None = 3600.0,
        instructions: str | None = DEFAULT_TOOL_SEARCH_INSTRUCTIONS,
        clock: Callable[[], float] = time.monotonic,
        id: str = "tool-search",
    ) -> None:
        if top_k < 1:
            raise ConfigurationError(f"ToolSearchProcessor: top_k must be at least 1, got {top_k}")
        if min_score < 0:
            raise ConfigurationError(f"ToolSearchProcessor: min_score must be >= 0, got {min_score}")
        if ttl is not None and ttl <= 0:
            raise ConfigurationError(f"ToolSearchProcessor: ttl must be positive or None, got {ttl}")
        self.id = id
        self.top_k = top_k
        self.min_score = min_score
        self.instructions = instructions
        self._tools = _catalog(tools)
        self._index = BM25Index()
        for name, item in self._tools.items():
            self._index.add(name, name, item.description)
        self._threads = _ThreadStore(ttl, clock)

    # -- public helpers ------------------------------------------------------------------------------

    @property
    def tool_names(self) -> list[str]:
        """The names of the searchable tools, in the order given."""
        return list(self._tools)

    def search(self, query: str) -> list[dict[str, Any]]:
        """Rank the searchable tools for ``query``: ``[{"name", "description", "score"}]``, best first."""
        results: list[dict[str, Any]] = []
        for hit in self._index.search(query):
            if hit.score <= self.min_score:
                break
            description = _short(self._tools[hit.key].description)
            results.append({"name": hit.key, "description": description, "score": round(hit.score, 2)})
            if len(results) == self.top_k:
                break
        return results

    def loaded_tools(self, thread_id: str) -> list[str]:
        """The tools loaded in ``thread_id`` and not expired, in load order."""
        return self._threads.peek(thread_id)

    def clear_loaded(self, thread_id: str | None = None) -> None:
        """Forget the tools loaded in ``thread_id``, or in every thread."""
        self._threads.clear(thread_id)

    @property
    def thread_count(self) -> int:
        """How many threads currently hold loaded tools (expired ones are dropped first)."""
        return len(self._threads)

    # -- the hook ------------------------------------------------------------------------------------

    def process_input_step(self, args: ProcessInputStepArgs) -> ProcessInputStepResult:
        """Offer the meta-tools plus every loaded tool; keep the agent's own tools."""
        for reserved in (SEARCH_TOOLS, LOAD_TOOL):
            if reserved in args.tools:
                raise ConfigurationError(
                    f"ToolSearchProcessor: the agent already has a tool named {reserved!r}; rename it, or "
                    "do not use ToolSearchProcessor with it"
                )
        thread_id = args.request_context.thread_id
        if thread_id is not None:
            loaded = self._threads.names(thread_id)
        else:
            loaded = args.state.setdefault(_STATE_KEY, {})
        if self.instructions:
            args.message_list.clear_system_messages(tag=self.id)
            args.message_list.add_system(self.instructions, tag=self.id)
        tools: dict[str, Tool] = {
            SEARCH_TOOLS: self._search_tool(),
            LOAD_TOOL: self._load_tool(loaded, frozenset(args.tools)),
        }
        tools.update(args.tools)
        for name in loaded:
            tools.setdefault(name, self._tools[name])
        return ProcessInputStepResult(tools=tools)

    # -- the meta-tools ------------------------------------------------------------------------------

    def _search_tool(self) -> Tool:
        async def search_tools(query: str) -> dict[str, Any]:
            if not query.strip():
                return {"results": [], "message": "Give a few keywords, e.g. 'send email'."}
            results = self.search(query)
            if not results:
                return {
                    "results": [],
                    "message": f"No tools match {query!r}. Try other or fewer keywords.",
                }
            return {
                "results": results,
                "message": f"Found {len(results)} tool(s). Load one with load_tool and its exact name.",
            }

        return Tool(
            name=SEARCH_TOOLS,
            description=(
                "Search the available tools by keyword when you need a capability you do not have. "
                "Returns names and descriptions; then load a tool with load_tool."
            ),
            input_model=_SearchArgs,
            execute=search_tools,
            is_async=True,
        )

    def _load_tool(self, loaded: dict[str, None], own: frozenset[str]) -> Tool:
        async def load_tool(
            tool_name: str | None = None, tool_names: list[str] | None = None
        ) -> dict[str, Any]:
            wanted = list(dict.fromkeys([*(tool_names or []), *([tool_name] if tool_name else [])]))
            if not wanted:
                return {"success": False, "message": "Give tool_name (one name) or tool_names (a list)."}
            newly, already, unknown = [], [], []
            for name in wanted:
                if name in loaded or name in own:
                    already.append(name)
                elif name not in self._tools:
                    unknown.append(name)
                else:
                    loaded[name] = None
                    newly.append(name)
            return {
                "success": not unknown,
                "message": self._load_message(newly, already, unknown),
                "loaded": newly,
                "already_loaded": already,
                "not_found": unknown,
            }

        return Tool(
            name=LOAD_TOOL,
            description=(
                "Load tools found with search_tools, by exact name, so you can call them from your next "
                "step. Pass tool_name for one tool or tool_names for several."
            ),
            input_model=_LoadArgs,
            execute=load_tool,
            is_async=True,
        )

    def _load_message(self, newly: list[str], already: list[str], unknown: list[str]) -> str:
        parts: list[str] = []
        if newly:
            them = "them" if len(newly) > 1 else "it"
            parts.append(f"Loaded {', '.join(newly)}; you can call {them} from your next step.")
        if already:
            parts.append(
                f"Already loaded: {', '.join(already)}; call {'them' if len(already) > 1 else 'it'} directly."
            )
        for name in unknown:
            suggestions = self._suggest(name)
            hint = f" Did you mean {', '.join(suggestions)}?" if suggestions else ""
            parts.append(f"Unknown tool {name!r}.{hint} Use search_tools to find tool names.")
        return " ".join(parts)

    def _suggest(self, name: str) -> list[str]:
        wanted = _squash(name)
        close = [n for n in self._tools if wanted and (wanted in _squash(n) or _squash(n) in wanted)]
        squashed = {_squash(n): n for n in self._tools}
        for match in difflib.get_close_matches(wanted, list(squashed), n=3, cutoff=0.7):
            close.append(squashed[match])
        close.extend(r["name"] for r in self.search(name))
        return list(dict.fromkeys(close))[:3]


def _squash(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())

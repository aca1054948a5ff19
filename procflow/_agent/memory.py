"""The hook through which memory adds its processors around the agent's own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from procflow._messages.request_context import RequestContext

__all__ = ["MemoryProcessors"]


@runtime_checkable
class MemoryProcessors(Protocol):
    """What an agent asks its ``memory`` for on every request: processors to run around yours.

    Input order is ``[memory input processors] → [your input processors]`` (history is loaded before
    your processors see it); output order is ``[your output processors] → [memory output processors]``,
    so an output processor's tripwire stops the chain before memory saves anything. A processor of
    yours with the id of one of memory's replaces memory's own in that list.
    """

    def input_processors(self, request_context: RequestContext) -> Sequence[Any]:
        """Processors that load history (and the like) for this request."""
        ...

    def output_processors(self, request_context: RequestContext) -> Sequence[Any]:
        """Processors that save the conversation for this request."""
        ...

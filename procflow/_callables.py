"""One answer to "is this callable async?", shared by processors' hooks, workflow steps and tools."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["is_async_callable"]


def is_async_callable(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` returns a coroutine to await.

    True for ``async def`` functions and methods, ``functools.partial`` objects wrapping one, and
    objects whose ``__call__`` is ``async def`` (a plain :func:`inspect.iscoroutinefunction` misses
    those, so calling one without awaiting it would hand back an un-awaited coroutine).
    """
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - callable objects with an async __call__
    return call is not None and inspect.iscoroutinefunction(call)

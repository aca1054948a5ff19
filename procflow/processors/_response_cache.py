"""``ResponseCache``: answer a repeated model step from a :class:`~procflow.cache.ServerCache`.

The processor looks up in ``process_llm_request`` (after memory and earlier processors shaped the
prompt) and, on a hit, returns the stored chunks instead of calling the model; the agent streams them
through its output stream processors like the model's. A step's chunks (as its caller received them)
are noted in ``process_llm_response`` and written only when the whole run succeeded
(``commit_llm_run``, called by the agent once the final result passed every output processor),
together with the step's tool results as the tools returned them, so a replayed tool-loop step never
runs its tools again and the next step's prompt, hence its key, is the same as on the first run.
"""

from __future__ import annotations

import inspect
import marshal
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from enum import Enum
from operator import call
from typing import Any, TypeAlias

import anyio

from procflow._logging import is_tracing, log
from procflow._messages.chunk import Chunk
from procflow._messages.request_context import RequestContext
from procflow._messages.results import OutputResult, ToolResult
from procflow.cache import InMemoryServerCache, ServerCache
from procflow.errors import CacheError, ConfigurationError
from procflow.processors._args import ProcessLLMRequestArgs, ProcessLLMRequestResult, ProcessLLMResponseArgs
from procflow.processors._base import ViolationCallback
from procflow.processors._cache_key import (
    ModelIdentity,
    ModelParts,
    ResponseCacheKeyInputs,
    build_key,
    build_step_key,
)

__all__ = [
    "RESPONSE_CACHE_CONTEXT_KEY",
    "CacheKey",
    "KeyFunction",
    "ResponseCache",
    "build_response_cache_key",
]

RESPONSE_CACHE_CONTEXT_KEY = "procflow__response_cache"
"""Request-context key holding the per-call overrides set by :meth:`ResponseCache.context`."""

KeyFunction: TypeAlias = Callable[[ResponseCacheKeyInputs], "str | Awaitable[str]"]
"""A function of the key inputs returning the cache key (sync or async)."""

CacheKey: TypeAlias = str | KeyFunction
"""A fixed key for the request, or a function deriving one from the key inputs."""

_CACHEABLE = frozenset({"stop", "tool-calls"})
_FAILED_CHUNKS = frozenset({"error", "tripwire", "abort"})
_ENTRY_VERSION = 1


class _Unset(Enum):
    UNSET = 0


_UNSET = _Unset.UNSET


def build_response_cache_key(
    *,
    agent_id: str | None = None,
    step_number: int = 0,
    scope: str | None = None,
    model: ModelIdentity | Mapping[str, Any] | None = None,
    prompt: Any = (),
    **extra: Any,
) -> str:
    """The default, deterministic response-cache key for these inputs.

    Dict key order and procflow-internal keys (``procflow__…``) do not matter; files and images count
    by value (a URL by its full href, inline data by its contents). Any ``extra`` inputs are hashed
    too, so ``build_response_cache_key(**{**inputs, "scope": "global"})`` reuses the derivation while
    overriding one field.
    """
    inputs: dict[str, Any] = {
        "agent_id": agent_id,
        "step_number": step_number,
        "scope": scope,
        "model": dict(model or {}),
        "prompt": prompt,
        **extra,
    }
    return build_key(inputs)


@dataclass(frozen=True, slots=True)
class _Overrides:
    key: CacheKey | _Unset | None = _UNSET
    scope: str | _Unset | None = _UNSET
    bust: bool = False


_NO_OVERRIDES = _Overrides()


class ResponseCache:
    """Replays a model step's answer when the same resolved prompt comes again (an input processor).

    A hit skips the model call: the stored chunks pass the agent's output stream processors like the
    model's (a guard redacts, blocks or warns on them again), then ``generate()`` collects them and
    ``stream()`` yields them; text, usage, finish reason, tool calls **and tool results** come from
    the cache. **Tools are not executed again on a hit**, so do not cache agents whose tools have side
    effects (sending mail, payments): the replay reports the old result and nothing happens. The
    backend holds tool results as the tools returned them (the next step's key derives from them);
    output guards re-run on every replay.

    Each step of the agent's tool loop is cached separately. Nothing is written unless the run
    succeeds: an error, a tripwire or a finish other than ``stop``/``tool-calls`` writes no entry, nor
    does a step of more than the call's ``stream_history`` chunks (it kept only their tail). A
    cache that is down or slower than ``timeout`` is a logged miss, never a failed request.

    Args:
        cache: Any :class:`~procflow.cache.ServerCache` (default: a new in-memory cache).
        ttl: Seconds an entry lives (``None``: the backend's default, for the in-memory cache forever).
        agent_id: Part of the default key; set it when several agents share one backend.
        key: A fixed key, or a function of the key inputs; a function that raises (or returns no
            string) falls back to the default key. A fixed key is still kept apart per scope (pass
            ``scope=None`` too to share it); a function decides for itself (it gets ``scope``).
        scope: The tenant the entries belong to. By default, the request's resource id
            (``RequestContext.resource_id``, set by memory), so users never see each other's entries;
            a string for an explicit tenant; ``None`` to share entries between every caller.
        timeout: Seconds a cache read or write may take before it counts as a miss.
        id: The processor id (default ``"response-cache"``).
    """

    def __init__(
        self,
        *,
        cache: ServerCache | None = None,
        ttl: float | None = 300.0,
        agent_id: str | None = None,
        key: CacheKey | None = None,
        scope: str | _Unset | None = _UNSET,
        timeout: float = 0.5,
        id: str = "response-cache",
    ) -> None:
        if ttl is not None and (not isinstance(ttl, int | float) or isinstance(ttl, bool) or ttl <= 0):
            raise ConfigurationError(f"ttl must be a positive number of seconds or None, got {ttl!r}")
        if key is not None and not isinstance(key, str) and not callable(key):
            raise ConfigurationError("key must be a string or a function of the key inputs")
        if not isinstance(timeout, int | float) or timeout <= 0:
            raise ConfigurationError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.id = id
        self.cache: ServerCache = cache if cache is not None else InMemoryServerCache()
        self.ttl = ttl
        self.agent_id = agent_id
        self.key = key
        self.scope = scope
        self.timeout = float(timeout)
        self.on_violation: ViolationCallback | None = None

    # -- per-call overrides ------------------------------------------------------------------------

    @staticmethod
    def context(
        *, key: CacheKey | _Unset | None = _UNSET, scope: str | _Unset | None = _UNSET, bust: bool = False
    ) -> RequestContext:
        """A new :class:`RequestContext` carrying overrides for one call.

        Args:
            key: Replace the derived key for this request (a string or a function of the inputs).
            scope: Replace the tenant scope for this request; ``None`` shares the entry.
            bust: Skip the read but still write on success (a "refresh" button).
        """
        return ResponseCache.apply_context(RequestContext(), key=key, scope=scope, bust=bust)

    @staticmethod
    def apply_context(
        ctx: RequestContext,
        *,
        key: CacheKey | _Unset | None = _UNSET,
        scope: str | _Unset | None = _UNSET,
        bust: bool | _Unset = _UNSET,
    ) -> RequestContext:
        """Merge overrides into ``ctx`` (fields not given keep their earlier override); return ``ctx``."""
        current = ctx.get(RESPONSE_CACHE_CONTEXT_KEY)
        merged = current if isinstance(current, _Overrides) else _NO_OVERRIDES
        if key is not _UNSET:
            merged = replace(merged, key=key)
        if scope is not _UNSET:
            merged = replace(merged, scope=scope)
        if bust is not _UNSET:
            merged = replace(merged, bust=bool(bust))
        ctx.set(RESPONSE_CACHE_CONTEXT_KEY, merged)
        return ctx

    # -- hooks -------------------------------------------------------------------------------------

    async def process_llm_request(self, args: ProcessLLMRequestArgs) -> ProcessLLMRequestResult | None:
        """Derive this step's key; on a hit answer with the stored chunks instead of the model."""
        overrides = args.request_context.get(RESPONSE_CACHE_CONTEXT_KEY, _NO_OVERRIDES)
        if not isinstance(overrides, _Overrides):
            overrides = _NO_OVERRIDES
        scope = self._scope(args.request_context, overrides)
        custom = self.key if overrides.key is _UNSET else overrides.key
        if custom is None:  # the default key (nothing to await on this path, nor on the in-memory read)
            key = build_step_key(
                self.agent_id, args.step_number, scope, _model_parts(args.model), args.prompt
            )
        else:
            key = await self._custom_key(custom, args, scope)
        # A retried step (after a guard's feedback) is written under the step's first key: the next
        # identical request, which carries no feedback, then replays the answer that passed.
        args.state["attempt"] = args.state.setdefault("first_keys", {}).setdefault(args.step_number, key)
        if overrides.bust:
            return None
        cache = self.cache
        if type(cache) is InMemoryServerCache:  # no I/O, no timeout; the entry kept ready to replay
            plan = cache._view(key, _plan)
            chunks = None if plan is None else _replay(plan)
        else:
            chunks = _decode(await self._read(key))
        if is_tracing():
            event = "response_cache_miss" if chunks is None else "response_cache_hit"
            log.info(event, processor_id=self.id, step_number=args.step_number)
        return None if chunks is None else ProcessLLMRequestResult(chunks=chunks)

    def process_llm_response(self, args: ProcessLLMResponseArgs) -> None:
        """Note a finished step's chunks; they are written when the run succeeds."""
        key = args.state.pop("attempt", None)
        if args.from_cache or not isinstance(key, str):
            return
        pending: dict[int, tuple[str, list[dict[str, Any]]]] = args.state.setdefault("pending", {})
        if args.dropped_chunks:  # only the step's tail is left: a hit would replay part of the answer
            log.debug(
                "response_cache_not_stored",
                processor_id=self.id,
                step_number=args.step_number,
                reason="stream_history",
                dropped_chunks=args.dropped_chunks,
            )
            pending.pop(args.step_number, None)
            return
        if not _cacheable(args.chunks):  # a tripped, failed or cut-off answer
            pending.pop(args.step_number, None)
            return
        pending[args.step_number] = (key, [c.to_dict() for c in args.chunks])

    async def commit_llm_run(self, state: dict[str, Any], result: OutputResult) -> None:
        """The run succeeded: write each accepted, freshly computed step with its tool results."""
        pending: dict[int, tuple[str, list[dict[str, Any]]]] = state.pop("pending", None) or {}
        for step in result.steps:
            item = pending.get(step.step_number)
            if item is None or step.from_cache:
                continue
            key, chunks = item
            entry = {"v": _ENTRY_VERSION, "chunks": [*chunks, *map(_tool_result_dict, step.tool_results)]}
            await self._write(key, entry)

    # -- internals ---------------------------------------------------------------------------------

    async def _custom_key(self, custom: CacheKey, args: ProcessLLMRequestArgs, scope: str | None) -> str:
        if isinstance(custom, str):
            return _fixed_key(custom, args.step_number, scope)
        inputs = ResponseCacheKeyInputs(
            agent_id=self.agent_id,
            step_number=args.step_number,
            scope=scope,
            model=_identity(args.model),
            prompt=args.prompt,
        )
        try:
            made = custom(inputs)
            if inspect.isawaitable(made):
                made = await made
        except Exception as exc:
            log.warning("response_cache_key_failed", processor_id=self.id, error=type(exc).__name__)
        else:
            if isinstance(made, str) and made:
                return made
            log.warning("response_cache_key_failed", processor_id=self.id, error="not a string")
        return build_key(inputs)

    def _scope(self, context: RequestContext, overrides: _Overrides) -> str | None:
        if overrides.scope is not _UNSET:
            return overrides.scope
        if self.scope is not _UNSET:
            return self.scope
        return context.resource_id

    async def _read(self, key: str) -> Any | None:
        with anyio.move_on_after(self.timeout) as scope:
            try:
                return await self.cache.get(key)
            except CacheError as exc:
                log.warning("response_cache_unavailable", processor_id=self.id, error=type(exc).__name__)
                return None
        if scope.cancelled_caught:
            log.warning("response_cache_unavailable", processor_id=self.id, error="timeout")
        return None

    async def _write(self, key: str, entry: dict[str, Any]) -> None:
        cache = self.cache
        with anyio.move_on_after(self.timeout) as scope:
            try:
                if type(cache) is InMemoryServerCache:
                    cache._set_with_view(key, entry, self.ttl, _plan)
                else:
                    await cache.set(key, entry, self.ttl)
            except CacheError as exc:
                log.warning("response_cache_write_failed", processor_id=self.id, error=type(exc).__name__)
        if scope.cancelled_caught:
            log.warning("response_cache_write_failed", processor_id=self.id, error="timeout")


def _fixed_key(key: str, step_number: int, scope: str | None) -> str:
    """A string key names the request: later steps get ``#n``; a scope keeps tenants apart."""
    key = key if step_number == 0 else f"{key}#{step_number}"
    return key if scope is None else f"scope{len(scope)}:{scope}:{key}"


def _identity(model: Any) -> ModelIdentity:
    parts = _model_parts(model)
    if parts is None:
        return ModelIdentity()
    provider, model_id, version = parts
    return ModelIdentity(provider=provider, model_id=model_id, spec_version=version)


def _model_parts(model: Any) -> ModelParts | None:
    if model is None:
        return None
    version = getattr(model, "specification_version", None) or getattr(model, "spec_version", None)
    return (
        str(getattr(model, "provider", "")),
        str(getattr(model, "model_id", "")),
        None if version is None else str(version),
    )


def _cacheable(chunks: list[Chunk]) -> bool:
    finished = False
    for chunk in chunks:
        if chunk.type in _FAILED_CHUNKS:
            return False
        if chunk.type == "finish":
            finished = chunk.payload.get("finish_reason") in _CACHEABLE
    return finished


def _tool_result_dict(result: ToolResult) -> dict[str, Any]:
    payload = {
        "tool_call_id": result.tool_call_id,
        "tool_name": result.tool_name,
        "args": result.args,
        "result": result.result,
        "is_error": result.is_error,
    }
    model_output = getattr(result, "model_output", None)  # what the model was shown, when the tool says
    if model_output is not None:
        payload["model_output"] = model_output
    return {"type": "tool-result", "payload": payload}


def _decode(entry: Any) -> list[Chunk] | None:
    """The stored chunks, or ``None`` for anything that is not an entry this version wrote."""
    if not isinstance(entry, dict) or entry.get("v") != _ENTRY_VERSION:
        return None
    raw = entry.get("chunks")
    if not isinstance(raw, list):
        return None
    chunks = []
    try:
        for item in raw:
            kind = item["type"]
            payload = item["payload"]
            if type(kind) is not str or type(payload) is not dict:
                return None
            chunks.append(Chunk(kind, payload, item.get("transient", False)))
    except (TypeError, KeyError):
        return None
    return chunks


_Plan: TypeAlias = tuple[
    tuple[str, ...], tuple[Callable[[Any], dict[str, Any]], ...], tuple[Any, ...], tuple[bool, ...]
]
"""A stored entry ready to replay, one column per chunk field: types, payload copiers, payloads,
``transient`` flags."""


def _plan(entry: Any) -> _Plan | None:
    """The in-memory cache's view of an entry: the chunks :func:`_decode` would build, as templates.

    A hit must hand out objects nobody else holds (a consumer may edit a chunk's payload), so each
    replay copies: a payload of plain values (the text deltas) with ``dict.copy``, one holding lists
    or dicts (usage, tool arguments) from its marshal form, as deep as the original. The templates
    themselves never leave this module.
    """
    chunks = _decode(entry)
    if chunks is None:
        return None
    copiers: list[Callable[[Any], dict[str, Any]]] = []
    payloads: list[Any] = []
    for chunk in chunks:
        payload = chunk.payload
        if any(type(value) is dict or type(value) is list for value in payload.values()):
            copiers.append(marshal.loads)
            payloads.append(marshal.dumps(payload))
        else:
            copiers.append(dict.copy)
            payloads.append(payload)
    return (
        tuple(chunk.type for chunk in chunks),
        tuple(copiers),
        tuple(payloads),
        tuple(chunk.transient for chunk in chunks),
    )


def _replay(plan: _Plan) -> list[Chunk]:
    """Fresh chunks from a plan (``map`` drives the loop: no Python frame per chunk but the chunk's)."""
    kinds, copiers, payloads, transients = plan
    return list(map(Chunk, kinds, map(call, copiers, payloads), transients))

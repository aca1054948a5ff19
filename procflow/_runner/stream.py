"""The stream phase: every chunk through every ``process_output_stream`` hook, in order.

This is the hot path. Hooks and their args objects are prepared once per stream; each chunk then costs
one call per processor. Rules:

- ``None`` drops the chunk and stops the chain for it; a list of chunks emits each of them, and each
  runs through the *rest* of the chain in order (a processor flushing held-back text before a non-text
  chunk returns ``[flushed_text, chunk]``);
- ``data-*`` chunks reach only processors with ``process_data_parts = True`` and pass the others;
- a ``data-*`` chunk a stream processor writes (``writer.custom``) is pushed with ``start`` set past
  that processor, so it goes through the *later* processors only;
- a :class:`TripWire` propagates (after ``on_violation``); the caller emits the ``tripwire`` chunk;
- an attempt thrown away for a retry is ended with :meth:`StreamRunner.discard`: the flush hooks run
  so processors reset, and what they release is withheld;
- any other error is logged (processor id, hook and exception type only) and fails closed: the chunk
  is withheld and :class:`~procflow.errors.ProcessorFailedError` ends the call — unless the processor
  declares ``fail_open = True``, when the chunk passes that processor unchanged.

A processor that needs per-stream state of its own (a processor workflow: its compiled per-chunk
dispatch) defines ``open_output_stream(args)``: it is called once when the stream is prepared and returns
an :class:`OutputStreamSession` whose ``process`` and ``flush`` replace the processor's hooks for that
stream, so nothing of the kind has to live in the processor's ``state``. A session's ``process`` may be a
plain function that returns either its result or an awaitable of it: a processor that answers most
chunks at once (text held back or passed on) spares them a coroutine and awaits only when it must.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from inspect import isawaitable
from typing import Any, Protocol

from procflow._callables import is_async_callable
from procflow._logging import log
from procflow._messages.chunk import Chunk
from procflow._messages.tripwire import TripWire
from procflow._messages.writer import StreamWriter
from procflow._runner.context import RunContext, report_tripwire
from procflow._runner.pipeline import BoundHook, ProcessorPipeline
from procflow._runner.runner import hook_failed
from procflow.errors import ProcessorResultError
from procflow.processors._args import ProcessOutputStreamArgs

__all__ = ["OutputStreamSession", "StreamRunner"]


class OutputStreamSession(Protocol):
    """What ``open_output_stream(args)`` returns: one processor's hooks bound to one stream.

    ``process`` and ``flush`` may be ``def`` or ``async def`` (decided once per stream); a plain
    ``process`` may also return an awaitable, which the runner awaits for the result.
    """

    def process(self, args: ProcessOutputStreamArgs) -> Any:
        """Handle ``args.part`` (the same args object every chunk of this stream)."""
        ...

    def flush(self, args: ProcessOutputStreamArgs) -> Any:
        """End of stream: return what was held back."""
        ...


_Link = tuple[Callable[[Any], Any], bool, bool, bool, ProcessOutputStreamArgs, BoundHook]
"""One hook of the chain as the per-chunk loop reads it: ``(fn, is_async, defers, data_parts, args,
hook)``; ``defers``: a session's plain ``process`` whose result may be an awaitable."""

_PLAIN = (Chunk, list)
"""Results that are never awaitables (checked before the slower ``isawaitable``)."""


class StreamRunner:
    """Runs the stream phase of one pipeline for one stream (one request)."""

    __slots__ = ("_args", "_chain", "_history", "_hooks", "ctx", "stream_parts")

    def __init__(
        self,
        pipeline: ProcessorPipeline,
        ctx: RunContext,
        *,
        writer_for: Callable[[int], StreamWriter | None] | None = None,
        history: int | None = None,
    ) -> None:
        """Prepare the chain once per stream.

        Args:
            writer_for: Gives the i-th stream hook its own writer (default: ``ctx.writer`` for all).
            history: Keep at least this many recent chunks (at most twice as many) in
                ``stream_parts``; ``None`` keeps every chunk of the stream.
        """
        self.ctx = ctx
        self._hooks: tuple[BoundHook, ...] = pipeline.phase("process_output_stream")
        self.stream_parts: list[Chunk] = []
        self._history = history
        self._args: list[ProcessOutputStreamArgs] = [
            ProcessOutputStreamArgs(
                part=Chunk("start"),
                stream_parts=self.stream_parts,
                abort=hook.abort,
                state=ctx.state_for(hook.processor_id, hook.processor),
                retry_count=ctx.retry_count,
                request_context=ctx.request_context,
                message_list=ctx.message_list,
                writer=ctx.writer if writer_for is None else writer_for(index),
                send_signal=ctx.signal_sender(hook.processor_id),
                processor_id=hook.processor_id,
            )
            for index, hook in enumerate(self._hooks)
        ]
        hooks = list(self._hooks)
        defers = [False] * len(hooks)
        for index, hook in enumerate(hooks):
            opener = getattr(hook.processor, "open_output_stream", None)
            if callable(opener):
                session: OutputStreamSession = opener(self._args[index])
                flush = session.flush if hook.flush is not None else None
                is_async = is_async_callable(session.process)
                defers[index] = not is_async
                hooks[index] = replace(
                    hook,
                    fn=session.process,
                    is_async=is_async,
                    flush=flush,
                    flush_is_async=flush is not None and is_async_callable(flush),
                )
        self._hooks = tuple(hooks)
        self._chain: tuple[_Link, ...] = tuple(
            (hook.fn, hook.is_async, defer, hook.data_parts, args, hook)
            for hook, defer, args in zip(self._hooks, defers, self._args, strict=True)
        )

    @property
    def active(self) -> bool:
        """Whether any processor has a stream hook."""
        return bool(self._hooks)

    def set_retry_count(self, retry_count: int) -> None:
        """Update the retry count every stream hook sees (the agent calls this on a retried step)."""
        for args in self._args:
            args.retry_count = retry_count

    async def push(self, chunk: Chunk, *, start: int = 0) -> list[Chunk]:
        """Run one chunk through the chain (from stream hook ``start`` on); return what comes out."""
        parts = self.stream_parts
        parts.append(chunk)
        if self._history is not None and len(parts) > 2 * self._history:
            del parts[: len(parts) - self._history]  # in place: every hook's args share this list
        # One chunk through the chain while each hook answers with one chunk (or drops it): the same
        # steps as ``_cascade`` without its lists and its coroutine (the per-token path).
        chain = self._chain
        index = start
        kind = chunk.type
        data = kind != "text-delta" and kind.startswith("data-")
        while index < len(chain):
            fn, is_async, defers, data_parts, args, hook = chain[index]
            index += 1
            if data and not data_parts:
                continue
            args.part = chunk
            try:
                result: Any = await fn(args) if is_async else fn(args)
                if defers and result is not None and type(result) not in _PLAIN and isawaitable(result):
                    result = await result
            except TripWire as tripwire:
                await report_tripwire(hook.processor, hook.processor_id, tripwire)
                raise
            except Exception as exc:
                hook_failed(hook, "process_output_stream", exc)
                continue  # fail open: the chunk passes this processor unchanged
            if result is None:
                return []
            if type(result) is not Chunk:
                emitted = _as_chunks(result, hook)
                return await self._cascade(emitted, index) if emitted and index < len(chain) else emitted
            chunk = result
            kind = chunk.type
            data = kind != "text-delta" and kind.startswith("data-")
        return [chunk]

    async def flush(self) -> list[Chunk]:
        """End of stream: call each ``flush_output_stream`` hook, running its output through the rest."""
        out: list[Chunk] = []
        for index, hook in enumerate(self._hooks):
            if hook.flush is None:
                continue
            args = self._args[index]
            try:
                result = await hook.flush(args) if hook.flush_is_async else hook.flush(args)
            except TripWire as tripwire:
                await report_tripwire(hook.processor, hook.processor_id, tripwire)
                raise
            except Exception as exc:
                hook_failed(hook, "flush_output_stream", exc)
                continue  # fail open: what it held is lost, never released unchecked
            emitted = _as_chunks(result, hook)
            if emitted:
                out.extend(await self._cascade(emitted, index + 1))
        return out

    async def discard(self) -> int:
        """The current attempt is thrown away (a retried model call): end it, releasing nothing.

        Each ``flush_output_stream`` hook is called so the processor ends the attempt's stream (and
        resets what it held back), but what it returns is withheld: none of it reaches later processors
        or the consumer, processed or not. A tripwire raised there concerns text nobody will see, so it
        is dropped (and not reported). Returns how many chunks were withheld.
        """
        withheld = 0
        for index, hook in enumerate(self._hooks):
            if hook.flush is None:
                continue
            args = self._args[index]
            try:
                result = await hook.flush(args) if hook.flush_is_async else hook.flush(args)
            except TripWire:
                log.debug("stream_discard_tripwire", processor_id=hook.processor_id)
                continue
            except Exception as exc:
                hook_failed(hook, "flush_output_stream", exc)
                continue
            withheld += len(_as_chunks(result, hook))
        return withheld

    async def _cascade(self, items: list[Chunk], start: int) -> list[Chunk]:
        chain = self._chain
        for index in range(start, len(chain)):
            fn, is_async, defers, data_parts, args, hook = chain[index]
            produced: list[Chunk] = []
            for chunk in items:
                if not data_parts and chunk.type.startswith("data-"):
                    produced.append(chunk)
                    continue
                args.part = chunk
                try:
                    result: Any = await fn(args) if is_async else fn(args)
                    if defers and result is not None and type(result) not in _PLAIN and isawaitable(result):
                        result = await result
                except TripWire as tripwire:
                    await report_tripwire(hook.processor, hook.processor_id, tripwire)
                    raise
                except Exception as exc:
                    hook_failed(hook, "process_output_stream", exc)
                    produced.append(chunk)  # fail open: the chunk passes this processor unchanged
                    continue
                if result is None:
                    continue
                if type(result) is Chunk:
                    produced.append(result)
                else:
                    produced.extend(_as_chunks(result, hook))
            if not produced:
                return produced
            items = produced
        return items


def _as_chunks(result: Any, hook: BoundHook) -> list[Chunk]:
    if result is None:
        return []
    if isinstance(result, Chunk):
        return [result]
    if isinstance(result, Sequence) and not isinstance(result, str | bytes):
        chunks = list(result)
        if all(isinstance(c, Chunk) for c in chunks):
            return chunks
    raise ProcessorResultError(
        hook.processor_id,
        "process_output_stream",
        f"returned {type(result).__name__}; return the chunk, a changed Chunk, a list of Chunks, "
        "or None to drop it",
    )

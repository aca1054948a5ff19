"""Warming the bundled guard in the fork server of ``procflow run --workers N``.

Only the fork server imports this module (a preload, see :func:`procflow._scale._start.start_forkserver`):
importing it builds the bundled guard and runs one tiny conversation through it, so that one-off work
done on first use (loading the tokenizer, about half a second of CPU) happens once in the server rather
than in every worker, and before the parent has even loaded its own pipeline. The guard itself is then
dropped: each worker builds its own, as before. A failure here is ignored; the workers then do that
work themselves.
"""

from __future__ import annotations

__all__ = ["warm_default_pipeline"]

_CONVERSATION = {"messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]}


def warm_default_pipeline() -> bool:
    """Run one conversation through a fresh bundled guard; whether that worked."""
    try:
        import anyio

        from procflow._chat.format import parse_conversation
        from procflow._cli.loading import load_pipeline
        from procflow._cli.processing import ConversationProcessor

        processor = ConversationProcessor(load_pipeline(None), phase="auto")
        conversation = parse_conversation(_CONVERSATION, line=1)
        anyio.run(processor.process, conversation)
    except Exception:
        return False
    return True


warm_default_pipeline()

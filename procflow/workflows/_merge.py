"""Merging parallel branches' edits at part granularity, with a clear error on conflicting edits.

Each branch of a parallel block edited its own copy of the messages. Against the block's input, every
branch's changes are collected unit by unit — one message part, the text fallback, one metadata key,
one other message field, a message's whole part list when its length changed, a deletion, an added
message, the untagged system messages, one step setting — and applied together. Two branches changing
the same unit to different values is a :class:`BranchConflictError`; identical changes are fine.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from procflow._messages.message import Message
from procflow._messages.message_list import MessageList, Source
from procflow.errors import BranchConflictError, WorkflowRunError
from procflow.workflows._processor_data import ProcessorStepSchema

__all__ = ["merge_outputs"]

_GONE = object()
_FIX = "pick one branch with .map(select(...)), or make the branches edit different parts"


class _Edits:
    """Every branch's changes, keyed by unit, checked for conflicts as they are recorded."""

    def __init__(self, step_id: str) -> None:
        self.step_id = step_id
        self.units: dict[tuple[Any, ...], tuple[str, Any]] = {}
        self.kinds: dict[str, dict[str, set[str]]] = {}
        self.added: dict[str, tuple[Message, Source]] = {}

    def record(self, key: tuple[Any, ...], branch: str, value: Any, what: str) -> None:
        previous = self.units.get(key)
        if previous is None:
            self.units[key] = (branch, value)
        elif previous[1] != value:
            raise BranchConflictError(
                f"branches {previous[0]!r} and {branch!r} changed {what} differently; {_FIX}",
                step_id=self.step_id,
            )

    def touch(self, message_id: str, branch: str, kind: str) -> None:
        self.kinds.setdefault(message_id, {}).setdefault(branch, set()).add(kind)

    def check_structure(self) -> None:
        for message_id, by_branch in self.kinds.items():
            deleters = [b for b, kinds in by_branch.items() if "deleted" in kinds]
            editors = [b for b, kinds in by_branch.items() if "deleted" not in kinds]
            if deleters and editors:
                raise BranchConflictError(
                    f"branch {deleters[0]!r} removed message {message_id!r} while branch {editors[0]!r} "
                    f"edited it; {_FIX}",
                    step_id=self.step_id,
                )
            whole = [b for b, kinds in by_branch.items() if "parts" in kinds]
            single = [b for b, kinds in by_branch.items() if "part" in kinds and b not in whole]
            if whole and single:
                raise BranchConflictError(
                    f"branch {whole[0]!r} changed the number of parts of message {message_id!r} while branch "
                    f"{single[0]!r} edited one of them; {_FIX}",
                    step_id=self.step_id,
                )


def merge_outputs(
    base: ProcessorStepSchema, outputs: Mapping[str, Any], *, step_id: str
) -> ProcessorStepSchema:
    """Apply every branch's edits to ``base`` (the parallel block's input) and return it.

    Raises:
        BranchConflictError: two branches changed the same unit differently.
        WorkflowRunError: a branch's output is not processor step data.
    """
    branches: list[tuple[str, ProcessorStepSchema]] = []
    for branch, out in outputs.items():
        if not isinstance(out, ProcessorStepSchema):
            raise WorkflowRunError(
                f"merge_branches() merges processor steps' outputs, but branch {branch!r} returned a "
                f"{type(out).__name__}; use a .map(...) function of your own for other steps",
                step_id=step_id,
            )
        if out is not base:
            branches.append((branch, out))
    if not branches:
        return base
    if base.phase == "output_stream":
        base.chunks = _merge_field(base, branches, "chunks", "the chunk", step_id)
        return base
    for name, what in _PHASE_FIELDS.get(base.phase, ()):
        setattr(base, name, _merge_field(base, branches, name, what, step_id))
    edits = _Edits(step_id)
    for branch, out in branches:
        _diff_messages(base.message_list, out.message_list, branch, edits)
        if out.system_messages != base.system_messages:
            edits.record(("system",), branch, out.system_messages, "the system messages")
        if base.settings is not None and out.settings is not None:
            _diff_settings(base, out, branch, edits)
    edits.check_structure()
    _apply(base, edits)
    return base


_PHASE_FIELDS: dict[str, tuple[tuple[str, str], ...]] = {
    "llm_request": (("prompt", "the prompt"), ("answer", "the answer"), ("answered_by", "the answer")),
    "api_error": (("retry_by", "the retry decision"),),
}
"""Per phase, the phase's own fields a branch may change as a whole (besides messages and settings)."""


def _merge_field(
    base: ProcessorStepSchema,
    branches: list[tuple[str, ProcessorStepSchema]],
    name: str,
    what: str,
    step_id: str,
) -> Any:
    """The one branch's new value of field ``name``; the same change twice is fine, two are a conflict."""
    original = getattr(base, name)
    chosen: tuple[str, Any] | None = None
    for branch, out in branches:
        value = getattr(out, name)
        if value == original:
            continue
        if chosen is not None and chosen[1] != value:
            raise BranchConflictError(
                f"branches {chosen[0]!r} and {branch!r} changed {what} differently; {_FIX}",
                step_id=step_id,
            )
        chosen = (branch, value)
    return original if chosen is None else chosen[1]


def _diff_messages(base: MessageList, other: MessageList, branch: str, edits: _Edits) -> None:
    base_ids = set()
    for message in base.all:
        base_ids.add(message.id)
        changed = other.get(message.id)
        if changed is None:
            edits.touch(message.id, branch, "deleted")
            edits.record(("deleted", message.id), branch, True, f"message {message.id!r}")
        elif changed != message:
            _diff_message(message, changed, branch, edits)
    for message in other.all:
        if message.id not in base_ids:
            edits.record(("added", message.id), branch, message, f"the added message {message.id!r}")
            edits.added.setdefault(message.id, (message, other.source_of(message.id) or "input"))


def _diff_message(old: Message, new: Message, branch: str, edits: _Edits) -> None:
    mid = old.id
    for name in type(old).model_fields:
        if name not in ("id", "content") and getattr(new, name) != getattr(old, name):
            edits.touch(mid, branch, "other")
            edits.record(("field", mid, name), branch, getattr(new, name), f"{name!r} of message {mid!r}")
    for name in set(old.__pydantic_extra__ or {}) | set(new.__pydantic_extra__ or {}):
        value = (new.__pydantic_extra__ or {}).get(name, _GONE)
        if value != (old.__pydantic_extra__ or {}).get(name, _GONE):
            edits.touch(mid, branch, "other")
            edits.record(("field", mid, name), branch, value, f"{name!r} of message {mid!r}")
    old_c, new_c = old.content, new.content
    if new_c.content != old_c.content:
        edits.touch(mid, branch, "other")
        edits.record(("content", mid), branch, new_c.content, f"the text fallback of message {mid!r}")
    for key in set(old_c.metadata) | set(new_c.metadata):
        value = new_c.metadata.get(key, _GONE)
        if value != old_c.metadata.get(key, _GONE):
            edits.touch(mid, branch, "other")
            edits.record(("meta", mid, key), branch, value, f"metadata {key!r} of message {mid!r}")
    if len(new_c.parts) != len(old_c.parts):
        edits.touch(mid, branch, "parts")
        edits.record(("parts", mid), branch, list(new_c.parts), f"the parts of message {mid!r}")
        return
    for index, (before, after) in enumerate(zip(old_c.parts, new_c.parts, strict=True)):
        if after != before:
            edits.touch(mid, branch, "part")
            edits.record(("part", mid, index), branch, after, f"part #{index} of message {mid!r}")


def _diff_settings(base: ProcessorStepSchema, out: ProcessorStepSchema, branch: str, edits: _Edits) -> None:
    old, new = base.settings, out.settings
    assert old is not None
    assert new is not None
    for name in ("model", "tool_choice"):
        if getattr(new, name) != getattr(old, name):
            edits.record(("setting", name), branch, getattr(new, name), f"the step setting {name!r}")
    for field_name in ("tools", "provider_options"):
        before: dict[str, Any] = getattr(old, field_name)
        after: dict[str, Any] = getattr(new, field_name)
        for key in set(before) | set(after):
            value = after.get(key, _GONE)
            if value != before.get(key, _GONE):
                edits.record((field_name, key), branch, value, f"{field_name} entry {key!r}")


def _apply(base: ProcessorStepSchema, edits: _Edits) -> None:
    ml = base.message_list
    per_message: dict[str, list[tuple[tuple[Any, ...], Any]]] = {}
    for key, (_, value) in edits.units.items():
        if key[0] in ("field", "content", "meta", "parts", "part"):
            per_message.setdefault(key[1], []).append((key, value))
    ml.remove_by_ids([key[1] for key in edits.units if key[0] == "deleted"])
    for message_id, changes in per_message.items():
        message = ml.get(message_id)
        if message is not None:
            ml.replace(_rebuilt(message, changes))
    for message, source in edits.added.values():
        ml.add(message, source=source)
    system = edits.units.get(("system",))
    if system is not None:
        ml.set_system_messages(system[1])
    settings = base.settings
    if settings is not None:
        for key, (_, value) in edits.units.items():
            if key[0] == "setting":
                setattr(settings, key[1], value)
            elif key[0] in ("tools", "provider_options"):
                target: dict[str, Any] = getattr(settings, key[0])
                if value is _GONE:
                    target.pop(key[1], None)
                else:
                    target[key[1]] = value


def _rebuilt(message: Message, changes: list[tuple[tuple[Any, ...], Any]]) -> Message:
    content = message.content
    parts = list(content.parts)
    metadata = dict(content.metadata)
    fallback = content.content
    fields: dict[str, Any] = {}
    for key, value in changes:
        kind = key[0]
        if kind == "parts":
            parts = list(value)
        elif kind == "part":
            parts[key[2]] = value
        elif kind == "content":
            fallback = value
        elif kind == "meta":
            if value is _GONE:
                metadata.pop(key[2], None)
            else:
                metadata[key[2]] = value
        elif value is not _GONE:
            fields[key[2]] = value
    new_content = content.model_copy(update={"parts": parts, "metadata": metadata, "content": fallback})
    return message.model_copy(update={"content": new_content, **fields})

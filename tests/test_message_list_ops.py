"""MessageList operations agree with a plain-list model of them for any sequence: the id index stays true."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from procflow import Message, MessageList

IDS = [f"m{i}" for i in range(8)]
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.sampled_from(IDS), st.sampled_from(["input", "memory", "response"])),
        st.tuples(st.just("remove"), st.lists(st.sampled_from(IDS), max_size=3)),
        st.tuples(st.just("replace"), st.sampled_from(IDS)),
        st.tuples(st.just("authoritative"), st.lists(st.sampled_from(IDS), max_size=5, unique=True)),
    ),
    max_size=30,
)


@settings(max_examples=300)
@given(ops=OPS)
def test_operations_match_a_plain_list_model(ops: list[tuple]) -> None:  # type: ignore[type-arg]
    """add / remove_by_ids / replace / replace_messages keep order, sources and lookups as a list would."""
    ml = MessageList()
    model: list[tuple[str, str, str]] = []  # (id, source, text)
    for step, op in enumerate(ops):
        text = f"t{step}"
        if op[0] == "add":
            _, mid, source = op
            ml.add(Message.user(text, id=mid), source=source)
            existing = [i for i, (m, _, _) in enumerate(model) if m == mid]
            if existing:
                model[existing[0]] = (mid, model[existing[0]][1], text)
            elif source == "memory":
                at = sum(1 for _, s, _ in model if s == "memory")
                model.insert(at, (mid, source, text))
            else:
                model.append((mid, source, text))
        elif op[0] == "remove":
            ml.remove_by_ids(op[1])
            model = [entry for entry in model if entry[0] not in op[1]]
        elif op[0] == "replace":
            found = ml.replace(Message.user(text, id=op[1]))
            assert found == any(m == op[1] for m, _, _ in model)
            model = [(m, s, text if m == op[1] else t) for m, s, t in model]
        else:
            scope = ml.input
            returned = [Message.user(text, id=mid) for mid in op[1]]
            ml.replace_messages(returned, scope=scope)
            scope_ids = {m.id for m in scope}
            model = [e for e in model if e[0] not in scope_ids or e[0] in op[1]]
            for mid in op[1]:
                existing = [i for i, (m, _, _) in enumerate(model) if m == mid]
                if existing:
                    model[existing[0]] = (mid, model[existing[0]][1], text)
                else:
                    model.append((mid, "input", text))
        assert [(m.id, ml.source_of(m.id), m.text) for m in ml.all] == model
        for mid in IDS:
            stored = ml.get(mid)
            assert (stored.text if stored else None) == next((t for m, _, t in model if m == mid), None)

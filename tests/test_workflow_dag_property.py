"""Property: on random workflow DAGs every step starts after all its predecessors ended, exactly once."""

from __future__ import annotations

import itertools
from typing import Any

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from procflow.workflows import StepContext, Workflow, create_step, create_workflow

Shape = list[Any]

_leaf = st.integers(min_value=0, max_value=3)
_stage = st.deferred(
    lambda: st.one_of(
        st.tuples(st.just("then"), _leaf),
        st.tuples(
            st.just("parallel"),
            st.lists(st.one_of(_leaf, st.lists(_stage, min_size=1, max_size=3)), min_size=1, max_size=4),
        ),
    )
)
_shape = st.lists(_stage, min_size=1, max_size=5)


class _Recorder:
    def __init__(self) -> None:
        self.log: list[tuple[str, str]] = []
        self.ids = itertools.count()
        self.leaves: list[str] = []
        self.workflows: list[Workflow] = []

    def leaf(self, pauses: int) -> Any:
        step_id = f"s{next(self.ids)}"
        self.leaves.append(step_id)

        async def execute(ctx: StepContext[Any]) -> str:
            self.log.append(("start", step_id))
            for _ in range(pauses):
                await anyio.lowlevel.checkpoint()
            self.log.append(("end", step_id))
            return step_id

        return create_step(id=step_id, execute=execute)

    def build(self, shape: Shape) -> Workflow:
        builder = create_workflow(id=f"w{next(self.ids)}")
        for kind, body in shape:
            if kind == "then":
                builder.then(self.leaf(body))
            else:
                builder.parallel(
                    [self.leaf(item) if isinstance(item, int) else self.build(item) for item in body]
                )
        workflow = builder.commit()
        self.workflows.append(workflow)
        return workflow


def _spans(workflow: Workflow, order: dict[tuple[str, str], int]) -> dict[str, tuple[int, int]]:
    spans: dict[str, tuple[int, int]] = {}
    for stage in workflow.plan.stages:
        for node in stage.nodes:
            if node.subplan is not None:
                inner = _spans(node.source, order)
                spans[node.id] = (min(s for s, _ in inner.values()), max(e for _, e in inner.values()))
                spans.update(inner)
            else:
                spans[node.id] = (order[("start", node.id)], order[("end", node.id)])
    return spans


@settings(max_examples=60, deadline=None)
@given(shape=_shape)
async def test_every_step_runs_once_after_its_predecessors(shape: Shape) -> None:
    """Each step starts once, after every predecessor in its graph has ended."""
    recorder = _Recorder()
    workflow = recorder.build(shape)
    result = await workflow.run(None)
    assert result.status == "success"
    assert sorted(recorder.log) == sorted(
        [("start", s) for s in recorder.leaves] + [("end", s) for s in recorder.leaves]
    )
    order = {event: index for index, event in enumerate(recorder.log)}
    spans = _spans(workflow, order)
    for level in recorder.workflows:
        graph = level.graph
        for node in graph.nodes:
            for predecessor in graph.predecessors(node):
                assert spans[predecessor][1] < spans[node][0], (predecessor, node)

"""procflow vs LangGraph, same process: a 10-step chain and a 4-way fan-out of trivial async steps.

LangGraph comes from the ``bench`` extra (``make bench`` installs it). Both sides run plain async
functions that return at once, so the numbers are the engines' own overhead per run.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from bench._harness import Row, time_async
from procflow.workflows import StepContext, create_step, create_workflow

SIZES = {"full": (300, 7), "tiny": (5, 2)}


class _State(TypedDict):
    n: int
    out: Annotated[list[int], operator.add]


def _procflow_chain() -> Any:
    builder = create_workflow(id="chain", input_schema=int, output_schema=int)
    for i in range(10):

        async def bump(ctx: StepContext[int]) -> int:
            return ctx.input_data + 1

        builder = builder.then(create_step(id=f"n{i}", input_schema=int, output_schema=int, execute=bump))
    return builder.commit()


def _procflow_fan() -> Any:
    def branch(i: int) -> Any:
        async def execute(ctx: StepContext[int]) -> int:
            return i

        return create_step(id=f"b{i}", input_schema=int, output_schema=int, execute=execute)

    return create_workflow(id="fan", input_schema=int).parallel([branch(i) for i in range(4)]).commit()


def _langgraph_chain() -> Any:
    from langgraph.graph import END, START, StateGraph

    graph = StateGraph(_State)
    previous = START
    for i in range(10):

        async def bump(state: _State) -> dict[str, int]:
            return {"n": state["n"] + 1}

        graph.add_node(f"n{i}", bump)
        graph.add_edge(previous, f"n{i}")
        previous = f"n{i}"
    graph.add_edge(previous, END)
    return graph.compile()


def _langgraph_fan() -> Any:
    from langgraph.graph import END, START, StateGraph

    graph = StateGraph(_State)
    for i in range(4):

        async def branch(state: _State, i: int = i) -> dict[str, list[int]]:
            return {"out": [i]}

        graph.add_node(f"b{i}", branch)
        graph.add_edge(START, f"b{i}")
        graph.add_edge(f"b{i}", END)
    return graph.compile()


async def run(size: str = "full") -> list[Row]:
    """procflow / LangGraph ratios for the chain and the fan-out."""
    number, repeat = SIZES[size]
    pf_chain, pf_fan = _procflow_chain(), _procflow_fan()
    lg_chain, lg_fan = _langgraph_chain(), _langgraph_fan()
    assert (await pf_chain.run(0)).output == 10
    assert (await lg_chain.ainvoke({"n": 0, "out": []}))["n"] == 10
    rows = []
    cases = [
        ("10-step chain", lambda: pf_chain.run(0), lambda: lg_chain.ainvoke({"n": 0, "out": []})),
        ("4-way fan-out", lambda: pf_fan.run(0), lambda: lg_fan.ainvoke({"n": 0, "out": []})),
    ]
    for label, procflow_call, langgraph_call in cases:
        peer = await time_async(langgraph_call, number=number, repeat=repeat)
        ours = await time_async(procflow_call, number=number, repeat=repeat)
        ratio = ours.median / peer.median
        rows.append(
            Row(
                "langgraph_peer",
                f"{label}: procflow workflow.run()",
                ours.median * 1e6,
                "µs",
                baseline=peer.median * 1e6,
                baseline_name="LangGraph ainvoke (µs)",
                ratio=ratio,
                budget="procflow / LangGraph < 1",
                passed=ratio < 1.0,
                spread=ours.spread,
            )
        )
    return rows

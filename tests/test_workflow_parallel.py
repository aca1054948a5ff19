"""Parallel blocks of plain-def processor hooks run without a task group: same results and statuses."""

from __future__ import annotations

from typing import Any

from workflow_support import Blocker, captured_logs

from procflow.processors import ProcessInputArgs
from procflow.workflows import ProcessorStepSchema, RetryPolicy, create_workflow, select


class Recorder:
    def __init__(self, pid: str, calls: list[str], *, fail: bool = False) -> None:
        self.id = pid
        self.calls = calls
        self.fail = fail

    def process_input(self, args: ProcessInputArgs) -> None:
        self.calls.append(self.id)
        if self.fail:
            raise RuntimeError(f"{self.id} broke")


def _block(*processors: Any, cancel: bool = True, retry: RetryPolicy | None = None) -> Any:
    return (
        create_workflow(
            id="block",
            input_schema=ProcessorStepSchema,
            output_schema=ProcessorStepSchema,
            cancel_on_tripwire=cancel,
            retry=retry,
        )
        .parallel(list(processors))
        .map(select(f"processor:{processors[0].id}"))
        .commit()
    )


async def test_a_tripwire_cancels_the_branches_not_yet_run() -> None:
    """The branches after a tripping one never run and are recorded as canceled."""
    calls: list[str] = []
    workflow = _block(Recorder("first", calls), Blocker("gate", "stop"), Recorder("last", calls))
    result = await workflow.run(["stop here"])
    assert result.status == "tripwire"
    assert calls == ["first"]
    assert result.steps["processor:last"].status == "canceled"
    assert result.steps["processor:first"].status == "success"


async def test_without_cancellation_every_branch_runs() -> None:
    """With cancel_on_tripwire=False the later branches still run."""
    calls: list[str] = []
    workflow = _block(
        Recorder("first", calls), Blocker("gate", "stop"), Recorder("last", calls), cancel=False
    )
    result = await workflow.run(["stop here"])
    assert result.status == "tripwire"
    assert calls == ["first", "last"]


async def test_a_failure_stops_the_block() -> None:
    """A branch raising fails the run; later branches do not run."""
    calls: list[str] = []
    workflow = _block(Recorder("first", calls, fail=True), Recorder("last", calls))
    result = await workflow.run(["x"])
    assert result.status == "failed"
    assert calls == ["first"]


async def test_retry_delays_use_the_task_group() -> None:
    """Steps whose retries wait take the task-group path, with the same outcome."""
    calls: list[str] = []
    workflow = _block(
        Recorder("a", calls), Recorder("b", calls), retry=RetryPolicy(attempts=2, initial_delay=0.01)
    )
    result = await workflow.run(["x"])
    assert result.status == "success"
    assert sorted(calls) == ["a", "b"]


async def test_tracing_logs_each_step_and_the_run_with_durations() -> None:
    """With tracing on, step_finished and workflow_finished events carry durations (no message text)."""
    with captured_logs() as logs:
        await _block(Recorder("a", []), Recorder("b", [])).run(["secret 123"])
    steps = [e for e in logs if e["event"] == "step_finished"]
    assert [e["step_id"] for e in steps] == ["processor:a", "processor:b", "map:1"]
    assert all("duration_ms" in e for e in steps)
    finished = next(e for e in logs if e["event"] == "workflow_finished")
    assert finished["status"] == "success"
    assert "secret" not in repr(logs)

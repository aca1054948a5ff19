"""``procflow check``: validate a pipeline and print each problem with its fix (in-process)."""

from __future__ import annotations

from cli_support import PIPELINES, WORKFLOWS, procflow


def test_a_valid_workflow_passes_and_lists_its_processors() -> None:
    """A valid workflow exits 0 and lists its steps' processors with their hooks."""
    done = procflow("check", f"{WORKFLOWS}:guards")
    assert done.returncode == 0, done.stdout
    assert "workflow 'guards' (4 steps)" in done.stdout
    assert "    email-redactor  EmailRedactor  input, output_result" in done.stdout
    assert "no errors" in done.stdout


def test_a_definition_error_fails_with_the_fix() -> None:
    """A workflow that cannot compile exits 1, printing the problem and its fix on separate lines."""
    done = procflow("check", f"{WORKFLOWS}:unselected")
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0].startswith("error: calling unselected(): step 'parallel:0': the parallel block")
    assert lines[1].startswith("  fix: add .map(select('processor:email-redactor'))")


def test_duplicate_ids_fail_with_the_fix() -> None:
    """Two processors sharing an id are an error whose fix is to give one its own id."""
    done = procflow("check", f"{PIPELINES}:duplicates")
    assert done.returncode == 1
    assert "error: step 'processor:email-redactor': the id is used twice" in done.stdout
    assert "fix: give one of the two processors its own id" in done.stdout


def test_a_bad_reference_fails_naming_what_was_looked_for() -> None:
    """A reference to a missing object is a usage error (2), as everywhere, naming what was looked for."""
    done = procflow("check", f"{PIPELINES}:guard")
    assert done.returncode == 2
    assert "has no attribute 'guard'" in done.stdout


def test_warnings_do_not_fail_the_check() -> None:
    """An agent whose model id is unknown gets a warning with a fix; the check still passes."""
    done = procflow("check", f"{WORKFLOWS}:agent")
    assert done.returncode == 0
    assert "warning: the agent's model 'nowhere/model-x' cannot be used here" in done.stdout
    assert "--model scripted" in done.stdout


def test_the_bundled_guard_checks_clean() -> None:
    """Without a reference the bundled guard is checked: four processors, no errors."""
    done = procflow("check")
    assert done.returncode == 0, done.stdout
    assert "the bundled guard: 4 processors, run in sequence" in done.stdout
    for pid in ("unicode-normalizer", "redact-pii-secrets", "injection-guard"):
        assert f"  {pid}" in done.stdout


def test_a_processor_run_would_not_call_is_a_warning() -> None:
    """A stream-only processor passes the check with a warning that `procflow run` leaves it idle."""
    done = procflow("check", f"{PIPELINES}:idle")
    assert done.returncode == 0
    assert (
        "warning: processor 'stream-only' has neither process_input nor process_output_result" in done.stdout
    )
    assert "no errors, 1 warning(s)" in done.stdout


def test_agents_with_usable_models_check_clean() -> None:
    """An agent with a model object, or a model id that resolves here, has no model warning."""
    for name in ("offline_agent", "local_agent"):
        done = procflow("check", f"{WORKFLOWS}:{name}")
        assert done.returncode == 0, done.stdout
        assert "warning" not in done.stdout
        assert "(1 input, 0 output processors)" in done.stdout


def test_nested_workflows_list_their_processors_indented() -> None:
    """Processors inside a nested workflow are listed under it."""
    done = procflow("check", f"{WORKFLOWS}:nested")
    assert done.returncode == 0, done.stdout
    assert "workflow 'nested' (2 steps)" in done.stdout
    assert "    email-redactor  EmailRedactor" in done.stdout

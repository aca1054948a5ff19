"""Pipeline references (``FILE.py:NAME`` / ``MODULE:NAME``) and their errors (in-process)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import PIPELINES, WORKFLOWS, chat, jsonl, procflow, write_jsonl


def _run(tmp_path: Path, reference: str) -> tuple[int, str, str]:
    source = write_jsonl(tmp_path / "in.jsonl", chat(("user", "mail z@example.com")))
    done = procflow("run", source, "-p", reference)
    return done.returncode, done.stdout, done.stderr


def test_missing_file_names_the_path_looked_for(tmp_path: Path) -> None:
    """A file reference to a missing file says which path was looked for."""
    code, _, err = _run(tmp_path, "pipelines/missing.py:guard")
    assert code == 2
    assert "cannot load pipeline 'pipelines/missing.py:guard'" in err
    assert "file 'pipelines/missing.py' does not exist" in err


def test_missing_attribute_names_it_and_suggests_close_names(tmp_path: Path) -> None:
    """A misspelt object name is named, with the close matches the file defines."""
    code, _, err = _run(tmp_path, f"{PIPELINES}:pipelin")
    assert code == 2
    assert "has no attribute 'pipelin'" in err
    assert "did you mean 'pipeline'" in err


def test_unknown_module_names_the_module(tmp_path: Path) -> None:
    """A module reference to an unknown module names the module looked for."""
    code, _, err = _run(tmp_path, "no_such_package.guards:pipeline")
    assert code == 2
    assert "no module named 'no_such_package'" in err
    assert "looked for module 'no_such_package.guards'" in err


def test_reference_without_name_looks_for_pipeline(tmp_path: Path) -> None:
    """Without :NAME the object called `pipeline` is used."""
    code, out, _ = _run(tmp_path, str(PIPELINES))
    assert code == 0
    assert jsonl(out)[0]["messages"][0]["content"] == "mail [EMAIL]"


def test_module_reference_and_factory_functions_load(tmp_path: Path) -> None:
    """`module:name` imports from the current directory; a zero-argument function is called."""
    (tmp_path / "guards_for_ref_test.py").write_text(
        "from cli_pipelines import EmailRedactor\n\ndef make():\n    return [EmailRedactor()]\n",
        encoding="utf-8",
    )
    source = write_jsonl(tmp_path / "in.jsonl", chat(("user", "mail z@example.com")))
    done = procflow("run", source, "-p", "guards_for_ref_test:make", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert jsonl(done.stdout)[0]["messages"][0]["content"] == "mail [EMAIL]"


def test_a_module_that_fails_to_import_names_the_line(tmp_path: Path) -> None:
    """A module raising while imported is a usage error naming the exception and where it was raised."""
    (tmp_path / "broken_for_ref_test.py").write_text("import json\njson.loads('{')\n", encoding="utf-8")
    (tmp_path / "missing_dep_for_ref_test.py").write_text("import no_such_dependency\n", encoding="utf-8")
    done = procflow("check", "broken_for_ref_test:pipeline", cwd=tmp_path)
    assert done.returncode == 2
    assert "module 'broken_for_ref_test'" in done.stdout
    assert "raised JSONDecodeError" in done.stdout
    missing = procflow("check", "missing_dep_for_ref_test:pipeline", cwd=tmp_path)
    assert missing.returncode == 2
    assert "raised ModuleNotFoundError: No module named 'no_such_dependency'" in missing.stdout


def test_object_of_the_wrong_kind_says_what_was_expected(tmp_path: Path) -> None:
    """Naming something that is not a pipeline says what it is and what is accepted."""
    code, _, err = _run(tmp_path, f"{PIPELINES}:not_a_pipeline")
    assert code == 2
    assert "it names a int, not a workflow, a processor, a list of processors or an agent" in err


def test_duplicate_processor_ids_are_rejected_with_a_fix(tmp_path: Path) -> None:
    """Two processors with one id fail before any conversation is read, saying how to fix it."""
    code, out, err = _run(tmp_path, f"{PIPELINES}:duplicates")
    assert code == 2
    assert out == ""
    assert "share the id 'email-redactor'" in err


def test_a_reference_without_a_module_says_how_to_write_one(tmp_path: Path) -> None:
    """`-p :name` names no module or file: a usage error that shows the two forms."""
    code, _, err = _run(tmp_path, ":pipeline")
    assert code == 2
    assert "the reference names no module or file. Write it as FILE.py:NAME or MODULE:NAME" in err


def test_a_path_that_is_not_python_cannot_be_imported(tmp_path: Path) -> None:
    """A file reference to a non-Python file says it cannot be imported."""
    (tmp_path / "guards.txt").write_text("nothing", encoding="utf-8")
    code, _, err = _run(tmp_path, f"{tmp_path}/guards.txt:pipeline")
    assert code == 2
    assert "cannot be imported as a Python module" in err


def test_a_syntax_error_names_the_file_and_line(tmp_path: Path) -> None:
    """A pipeline file that does not parse names its own line, not the importer's."""
    (tmp_path / "typo.py").write_text("pipeline = [\n  1,\n  2 3]\n", encoding="utf-8")
    code, _, err = _run(tmp_path, f"{tmp_path}/typo.py:pipeline")
    assert code == 2
    assert "typo.py:3 raised SyntaxError" in err


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("mixed", "the list holds items that are not processors: #1 (str), #2 (int)"),
        ("os", "it names the module 'os', not a workflow"),
        ("EmailRedactor", "it names the class EmailRedactor (create an instance: EmailRedactor(...))"),
        ("needs_arguments", "it names the function needs_arguments() which needs arguments ['level']"),
        ("EmailRedactor.nope", "'EmailRedactor' has no attribute 'nope'"),
    ],
)
def test_objects_that_are_not_pipelines_are_described(name: str, said: str, tmp_path: Path) -> None:
    """What the reference names is described by kind, with what would be accepted."""
    code, _, err = _run(tmp_path, f"{PIPELINES}:{name}")
    assert code == 2
    assert said in " ".join(err.split())


def test_an_agent_with_processor_factories_cannot_run_stored_conversations(tmp_path: Path) -> None:
    """An agent whose processors are a function of the request context is refused, saying what to do."""
    code, _, err = _run(tmp_path, f"{WORKFLOWS}:dynamic_agent")
    assert code == 2
    assert "the agent's input_processors is a function of the request context" in err

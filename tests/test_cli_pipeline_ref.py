"""Pipeline references (``FILE.py:NAME`` / ``MODULE:NAME``) and their errors (in-process)."""

from __future__ import annotations

from pathlib import Path

from cli_support import ROOT, chat, jsonl, procflow, write_jsonl

PIPELINES = ROOT / "tests" / "fixtures" / "cli_pipelines.py"


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

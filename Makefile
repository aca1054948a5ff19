# The two commands from README: `make run` (the main job) and `make test` (lint, types, tests).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint types pytest bench docs fmt clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[cli,dev]"
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/procflow run examples/data/conversations.jsonl -o out/conversations.jsonl --report out/report.json
	@echo "Processed conversations: out/conversations.jsonl   summary as JSON: out/report.json"
	$(BIN)/procflow graph examples/pipeline.py:pipeline --format svg -o out/pipeline.svg
	@echo "Example workflow drawn: out/pipeline.svg (Mermaid text: procflow graph examples/pipeline.py:pipeline)"

lint: $(STAMP)
	$(BIN)/ruff format --check procflow tests bench examples
	$(BIN)/ruff check procflow tests bench examples

types: $(STAMP)
	$(BIN)/mypy
	$(BIN)/mypy --strict tests/typing

pytest: $(STAMP)
	$(BIN)/python -m coverage run -m pytest -q
	$(BIN)/python -m coverage report --include='procflow/_messages/*,procflow/_engine/*,procflow/processors/*' --skip-covered --sort=cover | tail -n 15

test: lint types pytest

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[dev,bench]"
	$(BIN)/python -m bench

# The documentation site, offline: docs/ and the API reference from the docstrings, into site/.
docs: $(STAMP)
	$(BIN)/mkdocs build --strict --site-dir site
	@echo "Documentation built: site/index.html"

fmt: $(STAMP)
	$(BIN)/ruff format procflow tests bench examples
	$(BIN)/ruff check --fix procflow tests bench examples

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .coverage site

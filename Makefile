# The two commands from README: `make run` (the main job) and `make test` (lint, types, tests).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint types pytest bench fmt clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python examples/quickstart.py

lint: $(STAMP)
	$(BIN)/ruff format --check procflow tests bench examples
	$(BIN)/ruff check procflow tests bench examples

types: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/python -m pytest -q

test: lint types pytest

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[dev,bench]"
	$(BIN)/python -m bench

fmt: $(STAMP)
	$(BIN)/ruff format procflow tests bench examples
	$(BIN)/ruff check --fix procflow tests bench examples

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .coverage

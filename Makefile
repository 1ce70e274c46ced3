PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LINT_STAMP := $(VENV)/.installed-lint
# files already in ruff format's style; the format check grows to the whole tree after one reformat commit
FORMATTED := guard/__main__.py tests/test_cli_entry.py

.PHONY: demo test fuzz bench lint typecheck clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

$(LINT_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[lint]'
	touch $(LINT_STAMP)

demo: $(STAMP)
	$(BIN)/guard demo

# GUARD_TEST_BACKENDS (e.g. sqlite) and GUARD_TEST_DB_TAG reach pytest through the environment
test: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q

fuzz: $(STAMP)
	$(BIN)/python -m pytest -q -m fuzz -p no:randomly tests/adversarial

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

lint: $(LINT_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check $(FORMATTED)

typecheck: $(LINT_STAMP)
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache

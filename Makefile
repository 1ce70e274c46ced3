PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LINT_STAMP := $(VENV)/.installed-lint
# files in ruff format's style; the check grows to the whole tree with one reformat commit after the
# parallel branches of #14 merge (reformatting their files now would conflict with every one of them)
FORMATTED := guard/__main__.py guard/_resources.py guard/demo guard/cli/main.py guard/cli/grammars.py \
	guard/cli/schema.py guard/cli/demo.py guard/cli/train.py guard/cli/classify.py guard/shapes/__init__.py \
	guard/shapes/export.py guard/shapes/library.py guard/shapes/shapes.py guard/shapes/text.py tests/shapes \
	tests/test_cli_entry.py benchmarks/_common.py benchmarks/run_all.py benchmarks/bench_templates.py \
	benchmarks/bench_monitor.py benchmarks/eval_challenge.py

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

# both checks run, so one report shows every finding; either failing fails the target
lint: $(LINT_STAMP)
	status=0; $(BIN)/ruff check . || status=1; $(BIN)/ruff format --check $(FORMATTED) || status=1; exit $$status

typecheck: $(LINT_STAMP)
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache

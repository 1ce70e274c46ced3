PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo
LINT_STAMP := $(VENV)/.installed-lint
# the Python the formatter keeps (markdown code blocks in READMEs are left to their authors)
FORMATTED := guard tests benchmarks

.PHONY: demo test promtool fuzz bench lint typecheck clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

# the demo needs guard alone, not the test extras
$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $(DEMO_STAMP)

$(LINT_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[lint]'
	touch $(LINT_STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/guard demo

# promtool checks the shipped alert rules and the metric names (tests/observe); Debian's prometheus package has
# it. As root with apt-get it is installed here; otherwise the one extra step is said, and those tests skip.
PROMTOOL_HINT := promtool is missing: apt-get install prometheus (or put promtool from a Prometheus release on PATH)
promtool:
	@command -v promtool >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    { apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus >/dev/null; } \
	      || echo "make: $(PROMTOOL_HINT)" >&2; \
	  else echo "make: $(PROMTOOL_HINT); the two promtool tests skip without it" >&2; fi; }

# GUARD_TEST_BACKENDS (e.g. sqlite) and GUARD_TEST_DB_TAG reach pytest through the environment; the 25 slowest
# tests are listed, so a suite that grows slower says where
test: $(STAMP) promtool
	$(BIN)/python -m pytest -n 2 -q --durations=25

fuzz: $(STAMP)
	$(BIN)/python -m pytest -q -m fuzz -p no:randomly tests/adversarial

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

# both checks run, so one report shows every finding; either failing fails the target
lint: $(LINT_STAMP)
	status=0; $(BIN)/ruff check . || status=1; $(BIN)/ruff format --check $(FORMATTED) || status=1; exit $$status

# the test extra brings the optional imports (matplotlib, dask, llguidance), so mypy sees their types
typecheck: $(STAMP) $(LINT_STAMP)
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache

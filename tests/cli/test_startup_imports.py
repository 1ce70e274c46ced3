"""Start-up: what each command imports, counted in a fresh interpreter (the time is in benchmarks/bench_startup.py).

A command imports only the libraries its work needs; a module-level import of spaCy, scikit-learn or
SQLAlchemy in a module that ``guard lint`` reaches costs every lint a second or more. The lists below are
allowlists: a new third-party import on these paths fails the test until it is made lazy or added here on
purpose.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

#: typer and what typer 0.29 imports for itself (pydantic for its parameter adapters).
CLI = {"typer", "annotated_doc", "shellingham", "pydantic", "pydantic_core", "annotated_types"}
CLI |= {"typing_extensions", "typing_inspection", "cython_runtime"}
#: The format, shape and ratio stages: the sentence library (lark), the slot scanner (regex), sidecars (yaml).
LINT = CLI | {"guard", "lark", "regex", "yaml"}
#: The shipped classifier: numpy arrays, its joblib file read without joblib (guard.freetext._modelfile: joblib's
#: parallel machinery cost each load 85 ms); never spaCy or sklearn.
CLASSIFIER = LINT | {"numpy"}
NEVER_IN_LINT = {"spacy", "sklearn", "scipy", "sqlalchemy", "rich", "jinja2", "babel", "pathspec", "uvicorn"}

PROBE = """
import json, sys
from guard.cli.main import main
code = main(sys.argv[1:])
mods = {m.split('.')[0] for m in sys.modules if not m.startswith('_')} - set(sys.stdlib_module_names)
ours = sorted(m for m in sys.modules if m.startswith('guard.'))
print(json.dumps({"code": code, "modules": sorted(mods), "guard": ours}), file=sys.stderr)
"""


def imported(args: list[str], cwd: Path, ours: bool = False) -> set[str]:
    """Third-party top-level packages (or, with ``ours``, guard's modules) imported by one ``guard`` command
    run in a new interpreter."""
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=cwd, capture_output=True, text=True, check=True)
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    assert report["code"] == 0, proc.stderr
    return set(report["guard" if ours else "modules"])


@pytest.fixture
def template(tmp_path: Path) -> Path:
    (tmp_path / "t.txt").write_text("Your order {order_id} shipped on {ship_date}.\n", encoding="utf-8")
    (tmp_path / "t.txt.slots.yaml").write_text("order_id: identifier\nship_date: date\n", encoding="utf-8")
    return tmp_path


def test_help_imports_the_cli_framework_only(tmp_path: Path) -> None:
    mods = imported(["--help"], tmp_path)
    assert mods <= CLI | {"guard"}, mods - CLI
    assert "lark" not in mods and "pydantic" not in mods


def test_lint_without_the_classifier_imports_no_model_database_or_report_library(template: Path) -> None:
    mods = imported(["lint", "t.txt", "--domain", "orders", "--isolated", "--no-freetext"], template)
    assert mods <= LINT, f"imported beyond the lint stages' needs: {sorted(mods - LINT)}"
    assert not mods & (NEVER_IN_LINT | {"numpy", "joblib"})
    assert {"lark", "guard"} <= mods  # the probe saw the shape stage run


def test_lint_with_the_classifier_imports_what_the_model_needs_and_not_spacy(template: Path) -> None:
    mods = imported(["lint", "t.txt", "--domain", "orders", "--isolated", "--freetext"], template)
    assert mods <= CLASSIFIER, f"imported beyond the classifier's needs: {sorted(mods - CLASSIFIER)}"
    assert not mods & (NEVER_IN_LINT | {"joblib"})
    assert "numpy" in mods  # the model was loaded


def test_lint_of_a_template_builds_no_payload_model_and_loads_no_database_code(template: Path) -> None:
    ours = imported(["lint", "t.txt", "--domain", "orders", "--isolated", "--no-freetext"], template, ours=True)
    assert "guard.linting.shapes" in ours and "guard.payload.slots" in ours
    assert not ours & {"guard.payload.model", "guard.records.store", "guard.pipeline", "guard.freetext.model"}


def test_a_named_command_registers_that_command_only(template: Path) -> None:
    """typer reads the signature of every registered command on each run: ``guard lint`` registers lint alone."""
    from guard.cli.main import COMMANDS

    ours = imported(["lint", "t.txt", "--domain", "orders", "--isolated", "--no-freetext"], template, ours=True)
    assert "guard.cli.lint" in ours
    assert not ours & (set(COMMANDS.values()) - {"guard.cli.lint"})
    every = imported(["--help"], template, ours=True)
    assert set(COMMANDS.values()) <= every


def test_the_rule_catalogue_reads_the_same_with_the_fast_loader():
    """guard reads its rule catalogue with libyaml's safe loader when PyYAML has it: the same documents as the
    pure-Python safe loader, the reference."""
    from importlib import resources

    import yaml

    from guard.findings import _RULES, _fast_loader

    text = (resources.files("guard") / _RULES).read_text(encoding="utf-8")
    assert yaml.load(text, Loader=_fast_loader()) == yaml.safe_load(text)  # noqa: S506
    assert _fast_loader() is getattr(yaml, "CSafeLoader", yaml.SafeLoader)


PLUGINS = """
import json, os, sys
from guard.cli.main import main
code = main(sys.argv[1:])
from pydantic.plugin import _loader
print(json.dumps({"code": code, "scanned": _loader._plugins is not None,
                  "left": os.environ.get("PYDANTIC_DISABLE_PLUGINS")}), file=sys.stderr)
"""

JSON = """
import sys
from guard.cli.main import main
code = main(sys.argv[1:])
print(code, "json" in sys.modules, file=sys.stderr)
"""


def test_lint_builds_its_models_without_scanning_for_pydantic_plugins(template: Path) -> None:
    """The plugin scan reads every installed distribution's entry points; lint's models need no plugin."""
    args = ["lint", "t.txt", "--domain", "orders", "--isolated", "--no-freetext"]
    proc = subprocess.run([sys.executable, "-c", PLUGINS, *args], cwd=template, capture_output=True, text=True)
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    assert report == {"code": 0, "scanned": False, "left": None}


def test_pydantic_plugins_off_restores_the_environment_and_keeps_the_users_choice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import os

    from guard.cli._common import pydantic_plugins_off

    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
    with pydantic_plugins_off():
        assert os.environ["PYDANTIC_DISABLE_PLUGINS"] == "__all__"
    assert "PYDANTIC_DISABLE_PLUGINS" not in os.environ
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "logfire")
    with pydantic_plugins_off():
        assert os.environ["PYDANTIC_DISABLE_PLUGINS"] == "logfire"
    assert os.environ["PYDANTIC_DISABLE_PLUGINS"] == "logfire"


@pytest.mark.parametrize(("fmt", "loaded"), [("text", False), ("json", True)])
def test_a_text_lint_does_not_import_json(template: Path, fmt: str, loaded: bool) -> None:
    args = ["lint", "t.txt", "--domain", "orders", "--isolated", "--no-freetext", "--format", fmt]
    proc = subprocess.run([sys.executable, "-c", JSON, *args], cwd=template, capture_output=True, text=True)
    assert proc.stderr.strip().splitlines()[-1] == f"0 {loaded}"


def test_classify_imports_neither_joblib_nor_scikit_learn(tmp_path: Path) -> None:
    """``guard classify`` reads its joblib file without joblib and predicts with numpy alone."""
    (tmp_path / "in.txt").write_text("It arrived faster than usual.\n", encoding="utf-8")
    mods = imported(["classify", "in.txt", "--format", "jsonl"], tmp_path)
    assert {"numpy", "spacy"} <= mods
    assert not mods & {"joblib", "sklearn", "scipy", "cloudpickle", "psutil"}  # rich: spaCy imports it

"""The curated facade: what ``import guard`` offers, and that it names itself guard."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import guard


def test_stage_functions_are_functions_not_modules():
    for name in ("lint", "check", "verify", "decide"):
        obj = getattr(guard, name)
        assert inspect.isfunction(obj), name
    for module in ("guard.linting", "guard.pipeline", "guard.records.checker", "guard.decision"):
        importlib.import_module(module)  # importing a subpackage must not replace a facade function

    assert inspect.isfunction(guard.lint) and inspect.isfunction(guard.check)


def test_every_export_resolves_and_reports_module_guard():
    for name in guard.__all__:
        obj = getattr(guard, name)
        if name != "__version__":
            assert obj.__module__ == "guard", name
    assert {"Action", "Severity", "Mode", "Guard", "verify", "lint", "check", "ConfigError"} <= set(guard.__all__)


def test_import_guard_is_light():
    code = (
        "import sys, guard; heavy = [m for m in ('spacy', 'sqlalchemy', 'lark', 'sklearn', 'pydantic') "
        "if m in sys.modules]; print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_unknown_name_is_an_attribute_error():
    try:
        guard.nothing_here  # noqa: B018
    except AttributeError as exc:
        assert "nothing_here" in str(exc)
    else:
        raise AssertionError("expected AttributeError")

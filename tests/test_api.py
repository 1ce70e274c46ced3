"""The public facade: cheap to import, every name resolves, none is shadowed by a submodule."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import guard


def test_import_is_cheap():
    code = "import guard, sys; print(any(m in sys.modules for m in ('spacy', 'sqlalchemy', 'lark', 'sklearn')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_every_export_resolves_and_no_submodule_shadows_one():
    submodules = {m.name for m in pkgutil.iter_modules(guard.__path__)}
    for name in guard.__all__:
        assert name not in submodules, f"guard.{name} would be replaced by the submodule guard/{name}.py"
        assert getattr(guard, name) is not None
    for m in submodules:
        importlib.import_module(f"guard.{m}")
    for name in guard.__all__:
        assert not isinstance(getattr(guard, name), type(guard)), name


def test_errors_form_one_tree():
    for name in ("PayloadError", "PolicyError", "StoreUnavailable", "GrammarError", "ModelError", "CorpusError"):
        assert issubclass(getattr(guard, name), guard.GuardError)

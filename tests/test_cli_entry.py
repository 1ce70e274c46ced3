"""The ways in: ``python -m guard`` and ``guard --version`` run this tree, and the version has one source."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import guard
from guard._version import __version__

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "guard", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_version_flag_prints_the_package_version() -> None:
    proc = _run("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"guard {__version__}"
    assert re.fullmatch(r"\d+\.\d+\.\d+(\S*)", __version__)


def test_python_m_guard_is_the_command_line() -> None:
    proc = _run("--help")
    assert proc.returncode == 0, proc.stderr
    for command in ("check", "lint", "demo", "schema"):
        assert command in proc.stdout


def test_python_m_guard_reports_a_usage_error_with_its_exit_code() -> None:
    proc = _run("no-such-command")
    assert proc.returncode == 2
    assert "no-such-command" in proc.stderr


def test_the_version_is_written_in_one_place() -> None:
    assert guard.__version__ == __version__
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["hatch"]["version"]["path"] == "guard/_version.py"


def test_the_package_declares_its_type_information() -> None:
    assert (ROOT / "guard" / "py.typed").is_file()

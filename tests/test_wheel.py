"""`pip install .` works: the wheel carries grammars, models and demo data, and runs from a fresh venv."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src")
    # build from a clean copy of the tracked tree, as a user's `pip install .` of a clone would
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        if (ROOT / rel).is_file():
            dest = src / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest)
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    (whl,) = out.glob("guard-*.whl")
    return whl


def test_wheel_contains_package_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "guard/demo/policy.yaml" in names
    assert {"guard/server/static/page.html", "guard/server/static/playground.js"} <= names, "the playground"
    assert "guard/observe/templates/report.html.j2" in names  # the monitor's HTML report
    assert {"guard/py.typed", "guard/__main__.py"} <= names, "type checkers and `python -m guard` need these"
    tracked = subprocess.run(
        ["git", "ls-files", "grammars", "models"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert tracked, "grammars/ and models/ are tracked"
    for rel in tracked:
        assert f"guard/_data/{rel}" in names, rel
    assert not any(n.startswith(("tests/", "corpora/")) for n in names)


def test_installed_wheel_runs_without_the_source_tree(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # dependencies come from the test environment; guard itself only from the wheel
    deps = sysconfig.get_paths()["purelib"]
    Path(site, "zz_deps.pth").write_text(deps + "\n")
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    run_dir = tmp_path / "elsewhere"
    run_dir.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "COLUMNS": "200"}
    code = (
        "import guard, guard._resources as r, sys; "
        "assert guard.__file__.startswith(sys.argv[1]), guard.__file__; "
        "print(r.data_path('grammars')); print(r.data_path('models'))"
    )
    proc = subprocess.run(
        [str(py), "-c", code, site], cwd=run_dir, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    grammars, models = proc.stdout.split()
    assert grammars.startswith(site) and models.startswith(site)
    proc = subprocess.run(
        [str(py), "-m", "guard.cli.main", "demo", "--orders", "100", "--db", f"sqlite:///{tmp_path / 'demo.db'}"],
        cwd=run_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "regenerate_from_facts" in proc.stdout

"""Which files ``guard lint DIR`` reads: templates and payloads only, never tool folders or ignored paths."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import regex
import yaml

from guard.linting.files import find_templates, is_template
from tests.cli.conftest import BAD, BAD_TYPES, PAYLOAD, Run, template

ROOT = Path(__file__).resolve().parents[2]


def _repo(root: Path) -> Path:
    """A repository as a user has one: templates beside the files every project carries."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    template(root / "templates" / "shipped.txt")
    template(root / "templates" / "shipped.tmpl")
    (root / "payloads").mkdir()
    (root / "payloads" / "p.json").write_text(json.dumps(PAYLOAD))
    for name in ("LICENSE.txt", "requirements.txt", "requirements-dev.txt", "README.txt", "package.json"):
        (root / name).write_text('{"name": "x"}\n' if name.endswith(".json") else "not a template at all\n")
    for tool in (".venv/lib/python3.11/site-packages/pkg", "node_modules/left-pad", ".git/info", ".tox/py"):
        (root / tool).mkdir(parents=True, exist_ok=True)
        (root / tool / "LICENSE.txt").write_text("MIT\n")
        (root / tool / "notes.txt").write_text("Nothing here is approved.\n")
    (root / "env2").mkdir()
    (root / "env2" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (root / "env2" / "notes.txt").write_text("a virtual environment under another name\n")
    (root / ".gitignore").write_text("generated/\n*.draft.txt\n")
    template(root / "generated" / "x.txt", BAD, BAD_TYPES)
    template(root / "templates" / "wip.draft.txt", BAD, BAD_TYPES)
    (root / "templates" / "keep").mkdir()
    (root / "templates" / "keep" / ".gitignore").write_text("!special.draft.txt\n")
    template(root / "templates" / "keep" / "special.draft.txt")
    return root


def _names(root: Path, files: list[Path]) -> set[str]:
    return {Path(f).resolve().relative_to(root.resolve()).as_posix() for f in files}


def test_a_repository_walk_reads_only_templates_and_payloads(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    assert _names(root, find_templates([root], root=root)) == {
        "templates/shipped.txt",
        "templates/shipped.tmpl",
        "templates/keep/special.draft.txt",  # a nested .gitignore re-includes it
        "payloads/p.json",
    }


def test_lint_dot_with_a_domain_is_clean(cli: Run, tmp_path: Path) -> None:
    root = _repo(tmp_path)
    code, out, err = cli("lint", ".", "--domain", "orders", "--isolated", "--no-freetext", cwd=root)
    assert code == 0, out + err
    assert out.strip() == "4 files checked: 0 findings (0 errors, 0 warnings) in 0 files"


def test_exclude_patterns_and_gitignore_can_be_switched(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    assert _names(root, find_templates([root], root=root, exclude=["templates/*.tmpl", "payloads/"])) == {
        "templates/shipped.txt",
        "templates/keep/special.draft.txt",
    }
    found = _names(root, find_templates([root], root=root, respect_gitignore=False))
    assert {"generated/x.txt", "templates/wip.draft.txt"} <= found
    assert not any(n.startswith((".venv", "node_modules", ".git/", ".tox", "env2")) for n in found)


def test_named_files_are_linted_unless_force_exclude(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    named = [root / "requirements.txt", root / "generated" / "x.txt", root / "templates" / "shipped.txt"]
    assert len(find_templates(named, root=root)) == 3
    assert _names(root, find_templates(named, root=root, force_exclude=True)) == {"templates/shipped.txt"}


def test_pre_commit_passing_only_non_templates_is_clean(cli: Run, tmp_path: Path) -> None:
    root = _repo(tmp_path)
    code, out, err = cli("lint", "requirements.txt", "-d", "orders", "--force-exclude", "--isolated", cwd=root)
    assert (code, out, err) == (0, "", "")


def test_which_file_names_are_templates(tmp_path: Path) -> None:
    for name in ("a.txt", "a.tmpl", "a.template", "Welcome.TXT"):
        assert is_template(tmp_path / name), name
    for name in (
        "LICENSE.txt",
        "licence.txt",
        "requirements.txt",
        "dev-requirements.txt",
        "CMakeLists.txt",
        "a.txt.slots.yaml",
        "a.py",
        "robots.txt",
        "CHANGELOG.txt",
    ):
        assert not is_template(tmp_path / name), name
    (tmp_path / "package.json").write_text('{"name": "x", "version": "1.0.0"}')
    (tmp_path / "p.json").write_text(json.dumps(PAYLOAD, indent=2))
    (tmp_path / "broken.json").write_text('{"answer_template": "Hi {x}.", ')
    assert not is_template(tmp_path / "package.json")
    assert is_template(tmp_path / "p.json") and is_template(tmp_path / "broken.json")


def test_pre_commit_hook_takes_templates_not_project_files_and_runs_once() -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    (hook,) = [h for h in hooks if h["id"] == "guard-lint"]
    assert {"id", "name", "entry", "language", "files"} <= set(hook) and hook["language"] == "python"
    assert hook["require_serial"] is True  # one process: one summary, the model loaded once
    assert hook["entry"] == "guard lint --force-exclude" and "args" not in hook  # a user's args keep it

    def takes(path: str) -> bool:
        return bool(regex.search(hook["files"], path)) and not regex.search(hook["exclude"], path)

    for path in ("templates/shipped.txt", "a/b.tmpl", "x.template", "notes.txt"):
        assert takes(path), path
    for path in (
        "requirements.txt",
        "sub/requirements-dev.txt",
        "LICENSE.txt",
        "package.json",
        "a.txt.slots.yaml",
        "constraints.txt",
        "README.txt",
    ):
        assert not takes(path), path

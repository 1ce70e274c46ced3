"""``guard lint`` reads ``[tool.guard]`` or ``.guard.yaml`` above the linted path; options override it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from guard.errors import ConfigError
from guard.linting.config import KEYS, find_config, load_config, parse_settings
from tests.cli.conftest import BAD, BAD_TYPES, Run, template

PYPROJECT = """
[project]
name = "shop"

[tool.guard]
domain = "orders"
paths = ["templates"]
freetext = false
select = ["S"]
slot-types = {total = "money"}
"""


def test_pyproject_table_is_found_walking_up_from_the_linted_file(cli: Run, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    t = template(tmp_path / "templates" / "deep" / "bad.txt", BAD, "name: string\norder_id: identifier\n")
    code, out, err = cli("lint", t, "-f", "json")  # no --domain: the table gives it
    assert code == 1, err
    doc = json.loads(out)
    codes = {f["code"] for f in doc["files"][0]["findings"]}
    assert codes == {"S201", "S202"}  # select = ["S"] drops the classifier, total typed money by the table


def test_no_paths_lints_the_configured_ones(cli: Run, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    template(tmp_path / "templates" / "a.txt")
    template(tmp_path / "other" / "b.txt", BAD, BAD_TYPES)  # not configured, so not linted
    code, out, err = cli("lint", cwd=tmp_path)
    assert code == 0, out + err
    assert out.strip() == "1 file checked: 0 findings (0 errors, 0 warnings) in 0 files"


def test_guard_yaml_wins_over_pyproject_in_the_same_directory(cli: Run, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.guard]\ndomain = "billing"\n')
    (tmp_path / ".guard.yaml").write_text("domain: orders\nfreetext: false\n")
    code, out, err = cli("lint", template(tmp_path / "a.txt"))
    assert code == 0, out + err


def test_command_line_options_override_the_file(cli: Run, tmp_path: Path) -> None:
    (tmp_path / ".guard.yaml").write_text("domain: billing\nfreetext: false\nmax-prose-per-slot: 1\n")
    t = template(tmp_path / "a.txt")
    code, out, _ = cli("lint", t, "--domain", "orders", "-f", "json")
    assert [f["code"] for f in json.loads(out)["files"][0]["findings"]] == ["R401"]  # threshold from the file
    assert code == 0  # a warning does not fail by default
    code, out, _ = cli("lint", t, "--domain", "orders", "--max-prose-per-slot", "8")
    assert code == 0 and "0 findings" in out


def test_paths_in_the_file_are_relative_to_it(cli: Run, tmp_path: Path, lockers_dir: Path) -> None:
    (tmp_path / ".guard.yaml").write_text(
        f"domain: lockers\ngrammar-dir: {lockers_dir.name}\nfreetext: false\nslot-types: {{ref: identifier, d: date}}\n"
    )
    t = tmp_path / "sub" / "t.txt"
    t.parent.mkdir()
    t.write_text("Your locker {ref} was opened on {d}.\n")
    code, out, err = cli("lint", t, cwd=tmp_path / "sub")
    assert code == 0, out + err


def test_an_unknown_key_is_named_with_the_key_it_was_meant_to_be(cli: Run, tmp_path: Path) -> None:
    (tmp_path / ".guard.yaml").write_text("domian: orders\n")
    code, out, err = cli("lint", template(tmp_path / "a.txt"), "--domain", "orders")
    assert code == 1 and out == ""
    assert "unknown key 'domian' (did you mean 'domain'?)" in err


def test_a_wrong_value_names_its_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="max-prose-per-slot"):
        parse_settings({"max-prose-per-slot": -3}, "x.yaml")
    with pytest.raises(ConfigError, match="fail-on"):
        parse_settings({"fail-on": "sometimes"}, "x.yaml")
    with pytest.raises(ConfigError, match="keys are"):
        parse_settings({"zzzzzz": 1}, "x.yaml")
    (tmp_path / "pyproject.toml").write_text("[tool.guard\n")
    with pytest.raises(ConfigError, match="cannot read"):
        find_config(tmp_path)


def test_a_pyproject_without_the_table_is_passed_over(tmp_path: Path) -> None:
    (tmp_path / ".guard.yaml").write_text("domain: orders\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "pyproject.toml").write_text('[project]\nname = "x"\n')
    cfg = find_config(tmp_path / "pkg")
    assert cfg.source == tmp_path / ".guard.yaml" and cfg.settings.domain == "orders"
    assert cfg.root == tmp_path.resolve()
    with pytest.raises(ConfigError, match="no \\[tool.guard\\] table"):
        load_config(tmp_path / "pkg" / "pyproject.toml")
    assert "per-file-ignores" in KEYS and "grammar-dir" in KEYS


def test_settings_and_isolated_options(cli: Run, tmp_path: Path) -> None:
    (tmp_path / ".guard.yaml").write_text("domain: nope\n")
    (tmp_path / "elsewhere.yaml").write_text("domain: orders\nfreetext: false\n")
    t = template(tmp_path / "a.txt")
    assert cli("lint", t)[0] == 2  # the discovered file names an unknown domain: a usage error
    assert cli("lint", t, "--settings", tmp_path / "elsewhere.yaml")[0] == 0
    assert cli("lint", t, "--isolated")[0] == 2  # no domain at all
    assert cli("lint", t, "--isolated", "--domain", "orders", "--no-freetext")[0] == 0

"""Choosing findings by code: ``--select``, ``--ignore``, ``per-file-ignores`` and inline header lines."""

from __future__ import annotations

import json
from pathlib import Path

from guard.linting.files import inline_disables
from tests.cli.conftest import BAD, BAD_TYPES, Run, template


def _codes(out: str) -> list[list[str]]:
    return [[f["code"] for f in item["findings"]] for item in json.loads(out)["files"]]


def test_select_and_ignore_take_codes_and_prefixes(cli: Run, tmp_path: Path) -> None:
    t = template(tmp_path / "bad.txt", BAD, BAD_TYPES)
    _, out, _ = cli("lint", t, "-d", "orders", "-f", "json", "--isolated")
    assert _codes(out) == [["S202", "T301", "S201"]]
    code, out, _ = cli("lint", t, "-d", "orders", "-f", "json", "--isolated", "--select", "s2")
    assert code == 1 and _codes(out) == [["S202", "S201"]]
    code, out, _ = cli("lint", t, "-d", "orders", "-f", "json", "--isolated", "--ignore", "S201,T301")
    assert code == 1 and _codes(out) == [["S202"]]
    code, out, _ = cli("lint", t, "-d", "orders", "--isolated", "--select", "S2", "--ignore", "S")
    assert code == 0 and "0 findings" in out


def test_an_unknown_code_is_a_usage_error_with_a_suggestion(cli: Run, tmp_path: Path) -> None:
    t = template(tmp_path / "a.txt")
    code, out, err = cli("lint", t, "-d", "orders", "--isolated", "--ignore", "S2011")
    assert code == 2 and out == ""
    assert "--ignore: no finding code starts with 'S2011' (did you mean 'S201'?)" in err


def test_per_file_ignores_match_paths_below_the_configuration(cli: Run, tmp_path: Path) -> None:
    (tmp_path / ".guard.yaml").write_text(
        "domain: orders\nfreetext: false\nper-file-ignores:\n  'legacy/*.txt': [S201, S202]\n"
    )
    template(tmp_path / "legacy" / "old.txt", BAD, BAD_TYPES)
    template(tmp_path / "new" / "new.txt", BAD, BAD_TYPES)
    code, out, _ = cli("lint", tmp_path, "-f", "json", cwd=tmp_path / "new")
    by = {Path(f["path"]).name: [x["code"] for x in f["findings"]] for f in json.loads(out)["files"]}
    assert by == {"old.txt": [], "new.txt": ["S202", "S201"]}
    assert code == 1


def test_inline_disable_header_is_not_linted_and_locations_still_point_into_the_file(cli: Run, tmp_path: Path) -> None:
    t = template(tmp_path / "bad.txt", "# guard: disable=T301\n" + BAD, BAD_TYPES)
    code, out, _ = cli("lint", t, "-d", "orders", "-f", "json", "--isolated")
    (item,) = json.loads(out)["files"]
    assert [f["code"] for f in item["findings"]] == ["S202", "S201"]
    s202 = item["findings"][0]
    assert (s202["line"], s202["column"]) == (3, 34)  # one line lower than without the header
    _, text, _ = cli("lint", t, "-d", "orders", "--isolated")
    assert f"{t}:3:34: error S202" in text and "    Your order {order_id} shipped on {total}." in text


def test_inline_disables_parse_only_leading_header_lines() -> None:
    assert inline_disables("# guard: disable=R401, s2\n// guard: disable = T\nHello.\n") == (
        frozenset({"R401", "S2", "T"}),
        len("# guard: disable=R401, s2\n// guard: disable = T\n"),
    )
    assert inline_disables("Hello.\n# guard: disable=R401\n") == (frozenset(), 0)
    assert inline_disables("#guard:disable=R401") == (frozenset({"R401"}), len("#guard:disable=R401"))

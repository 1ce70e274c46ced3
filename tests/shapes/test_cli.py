"""``guard lint`` and ``guard grammars`` through typer's CliRunner: output formats and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from guard.cli import grammars as grammars_cli
from guard.cli import lint as lint_cli
from tests.cli.conftest import BAD, BAD_TYPES, PAYLOAD, template

ROOT = Path(__file__).resolve().parents[2]
SEED = (
    "Your order {order_id} shipped on {ship_date} and is expected to arrive on {eta}. It contains {item_count} items.\n"
)
SEED_TYPES = "order_id: identifier\nship_date: date\neta: date\nitem_count: integer\n"


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    a = typer.Typer()
    lint_cli.register(a)
    grammars_cli.register(a)
    return a


@pytest.fixture
def run(app):
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, [str(a) for a in args])

    return invoke


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    template(tmp_path / "good.txt", SEED, SEED_TYPES)
    template(tmp_path / "bad.txt", BAD, BAD_TYPES)
    return tmp_path


def test_clean_file_exits_0(run, tree: Path) -> None:
    r = run("lint", tree / "good.txt", "--domain", "orders")
    assert r.exit_code == 0, r.output
    assert "0 findings" in r.output


def test_slot_types_from_command_line(run, tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_text(SEED)
    assert run("lint", tmp_path / "t.txt", "-d", "orders").exit_code == 1
    r = run(
        "lint",
        tmp_path / "t.txt",
        "-d",
        "orders",
        "-s",
        "order_id=identifier",
        "-s",
        "ship_date=date",
        "-s",
        "eta=date",
        "-s",
        "item_count=integer",
    )
    assert r.exit_code == 0, r.output


def test_findings_exit_1_with_caret_under_the_fault(run, tree: Path) -> None:
    r = run("lint", tree, "--domain", "orders")
    assert r.exit_code == 1
    lines = r.output.splitlines()
    i = next(k for k, ln in enumerate(lines) if "S202" in ln)
    assert lines[i].startswith(f"{tree / 'bad.txt'}:2:34: error S202 shape.slot_type")
    assert lines[i + 1].strip() == BAD.splitlines()[1]
    caret = lines[i + 2]
    assert caret.index("^") - 4 == 33 and caret.count("^") == len("{total}")
    assert "a DATE slot" in lines[i] and "a TIMESTAMP slot" in lines[i]
    assert "S201" in r.output and "'This'" in r.output


def test_json_format(run, tree: Path) -> None:
    r = run("lint", tree, "-d", "orders", "--format", "json")
    assert r.exit_code == 1
    doc = json.loads(r.output)
    assert doc["ok"] is False and doc["summary"]["files"] == 2
    by = {Path(f["path"]).name: f for f in doc["files"]}
    assert by["good.txt"]["ok"] and [s["shape"] for s in by["good.txt"]["sentences"]] == ["statement", "statement"]
    codes = [f["code"] for f in by["bad.txt"]["findings"]]
    assert codes == ["S202", "T301", "S201"]  # the shipped classifier flags "This is unusual for orders of this size"
    f = by["bad.txt"]["findings"][0]
    assert {"code", "name", "message", "severity", "sentence", "start", "end", "line", "column", "data"} <= set(f)


def _check_sarif(doc: dict) -> None:
    assert doc["version"] == "2.1.0" and doc["$schema"].endswith("sarif-2.1.0.json")
    (run,) = doc["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "guard" and "version" in driver
    ids = [r["id"] for r in driver["rules"]]
    for rule in driver["rules"]:
        assert {"id", "name", "shortDescription"} <= set(rule) and rule["shortDescription"]["text"]
    for res in run["results"]:
        assert {"ruleId", "ruleIndex", "level", "message", "locations"} <= set(res)
        assert ids[res["ruleIndex"]] == res["ruleId"]
        assert res["level"] in {"error", "warning", "note"}
        assert res["message"]["text"]
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"]
        region = loc["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1
        assert (region["endLine"], region["endColumn"]) >= (region["startLine"], region["startColumn"])


def test_sarif_format(run, tree: Path) -> None:
    r = run("lint", tree, "-d", "orders", "-f", "sarif")
    assert r.exit_code == 1
    doc = json.loads(r.output)
    _check_sarif(doc)
    results = doc["runs"][0]["results"]
    assert {res["ruleId"] for res in results} == {"S201", "S202", "T301"}
    s202 = next(res for res in results if res["ruleId"] == "S202")
    assert s202["locations"][0]["physicalLocation"]["region"]["startLine"] == 2
    assert s202["locations"][0]["physicalLocation"]["region"]["startColumn"] == 34


def test_payload_file_points_into_the_json(run, tmp_path: Path) -> None:
    text = json.dumps(
        {
            "claims": PAYLOAD["claims"],
            "answer_template": "Your order {order_id} shipped on {ship_date}.\nIt is unusually quick \u2014 nice.",
        },
        indent=1,
    )
    p = tmp_path / "payload.json"
    p.write_text(text)
    r = run("lint", p, "-d", "orders", "-f", "sarif")
    assert r.exit_code == 1
    doc = json.loads(r.output)
    _check_sarif(doc)
    region = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]
    line = text.splitlines()[region["startLine"] - 1]
    start, end = region["startColumn"] - 1, region["endColumn"] - 1
    assert line[start:end] == "unusually"


def test_usage_errors_exit_2_and_input_errors_exit_1(run, tree: Path, tmp_path: Path) -> None:
    assert run("lint", tree / "good.txt", "-d", "nope").exit_code == 2
    assert run("lint", tree / "good.txt", "-d", "orders", "-f", "xml").exit_code == 2
    assert run("lint", tree / "good.txt", "-d", "orders", "-s", "oops").exit_code == 2
    assert run("lint", tree / "good.txt").exit_code == 2
    # files that are missing, unreadable or malformed are invalid input: 1, as in guard check
    r = run("lint", tree / "missing.txt", tree / "good.txt", "-d", "orders")
    assert r.exit_code == 1 and "missing.txt" in r.output
    (tmp_path / "broken.json").write_text("{not json")
    assert run("lint", tmp_path / "broken.json", "-d", "orders").exit_code == 1
    (tmp_path / "s.txt").write_text(SEED)
    (tmp_path / "s.txt.slots.yaml").write_text("- not a mapping\n")
    assert run("lint", tmp_path / "s.txt", "-d", "orders").exit_code == 1
    (tmp_path / "empty").mkdir()
    assert run("lint", tmp_path / "empty", "-d", "orders").exit_code == 2


def test_user_grammar_dir(run, tmp_path: Path, lockers_dir: Path) -> None:
    (tmp_path / "t.txt").write_text("Hi {name},\nYour locker {ref} was opened on {d}.\nThanks!\n")
    types = ("-s", "ref=identifier", "-s", "d=date", "-s", "name=string")
    r = run("lint", tmp_path / "t.txt", "-d", "lockers", "--grammar-dir", lockers_dir, *types)
    assert r.exit_code == 0, r.output
    (tmp_path / "u.txt").write_text("Your locker {ref} was opened on {d}, as usual.\n")
    r = run("lint", tmp_path / "u.txt", "-d", "lockers", "--grammar-dir", lockers_dir, *types)
    assert r.exit_code == 1 and "S201" in r.output
    r = run("grammars", "list", "--grammar-dir", lockers_dir)
    assert r.exit_code == 0 and "lockers" in r.output and "orders" in r.output


def test_a_hand_written_lark_library_is_an_error_not_a_silent_skip(run, tmp_path: Path) -> None:
    (tmp_path / "legacy.lark").write_text('sentence: "Hello."\n')
    (tmp_path / "t.txt").write_text("Hello.\n")
    r = run("lint", tmp_path / "t.txt", "-d", "legacy", "--grammar-dir", tmp_path)
    assert r.exit_code == 1 and "lexicon" in r.output  # the library cannot be read: invalid input


def test_grammars_list_show_export(run, tmp_path: Path) -> None:
    r = run("grammars", "list")
    assert r.exit_code == 0
    assert {ln.split()[0] for ln in r.output.splitlines()} >= {"orders"}
    r = run("grammars", "show", "orders")
    assert r.exit_code == 0
    assert "Patterns" in r.output and "<ship_verb> on {date}" in r.output
    assert "order.status = cancelled" in r.output
    doc = json.loads(run("grammars", "show", "orders", "-f", "json").output)
    assert doc["domain"] == "orders" and "order" in doc["entities"] and doc["sentence_classes"]["courtesy"]
    r = run("grammars", "export", "orders", "--format", "regex")
    assert r.exit_code == 2 and "--format lark" in r.output
    out = tmp_path / "orders.lark"
    r = run("grammars", "export", "orders", "--format", "lark", "-o", out)
    assert r.exit_code == 0 and out.read_text().startswith("// The approved sentences of guard domain 'orders'")
    assert run("grammars", "show", "nope").exit_code == 2
    assert run("grammars", "export", "orders", "-f", "ebnf").exit_code == 2


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from guard.cli.formatters import json_string_offsets  # noqa: E402


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40), st.booleans(), st.integers(0, 2))
def test_json_string_offsets_map_every_character(s: str, ascii_only: bool, indent: int) -> None:
    text = json.dumps({"claims": [], "answer_template": s}, ensure_ascii=ascii_only, indent=indent or None)
    offs = json_string_offsets(text, "answer_template")
    assert offs is not None and len(offs) == len(s) + 1
    for i, ch in enumerate(s):
        assert json.loads('"' + text[offs[i] : offs[i + 1]] + '"') == ch


def test_grammars_check_finds_lexicon_errors_without_building(run, lockers_dir: Path) -> None:
    r = run("grammars", "check", "lockers", "--grammar-dir", lockers_dir)
    assert r.exit_code == 0 and r.output.startswith("lockers: ok,") and "1 predicate" in r.output
    assert "LALR" not in r.output
    r = run("grammars", "check", "lockers", "--grammar-dir", lockers_dir, "--full")
    assert r.exit_code == 0 and "LALR(1) tables built" in r.output
    lexicon = lockers_dir / "lockers.yaml"
    early = ', "was opened early on {date}"'
    lexicon.write_text(lexicon.read_text().replace('opened on {date}"', 'opened on {date}"' + early))
    r = run("grammars", "check", "lockers", "--grammar-dir", lockers_dir)
    assert r.exit_code == 2 and "lockers.yaml:predicates[0]" in r.output and "'early'" in r.output
    assert "Traceback" not in r.output
    lexicon.write_text(lexicon.read_text().replace(early, ""))
    (lockers_dir / "compose.lark").write_text('start: "a"\n')
    r = run("grammars", "check", "lockers", "--grammar-dir", lockers_dir)
    assert r.exit_code == 2 and "could not be compiled" in r.output and "used but not defined" in r.output
    assert run("grammars", "check", "Lockers", "--grammar-dir", lockers_dir).exit_code == 2

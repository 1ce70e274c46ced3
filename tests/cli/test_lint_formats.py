"""Report formats: GitHub workflow annotations, ``--fail-on``, and SARIF ready for code scanning, validated
against the official SARIF 2.1.0 schema (``tests/data``)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from guard.cli.formatters import FileReport, format_github, format_text, sarif
from guard.cli.rules import _md, rule_markdown, rule_text
from guard.findings import Finding, Severity
from tests.cli.conftest import BAD, BAD_TYPES, SHIPPED, Run, template

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "data" / "sarif-schema-2.1.0.json").read_text())
VALIDATOR = jsonschema.Draft4Validator(SCHEMA, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


def valid_sarif(text: str) -> dict:
    doc = json.loads(text)
    errors = sorted(VALIDATOR.iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]
    return doc


def _payload(tmp_path: Path) -> Path:
    claims = [
        {"key": "order_id", "type": "identifier", "entity": "order", "entity_id": "o1", "field": "id", "value": "o1"},
        {"key": "d", "type": "date", "entity": "order", "entity_id": "o1", "field": "shipped_at", "value": "2026-1-2"},
    ]
    p = tmp_path / "payloads" / "p.json"
    p.parent.mkdir()
    p.write_text(json.dumps({"answer_template": "Your order {order_id} shipped on {d}. Sadly late.", "claims": claims}))
    return p


@pytest.mark.parametrize(
    "case",
    ["findings", "clean", "payload", "unreadable", "stdin", "outside", "no-findings-at-all"],
)
def test_every_sarif_log_validates_against_the_2_1_0_schema(
    cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    root = tmp_path / "repo dir"  # a space: the URI must be encoded
    root.mkdir()
    args: list[object] = ["-d", "orders", "-f", "sarif", "--isolated", "--no-freetext"]
    if case == "findings":
        args += [template(root / "t" / "bad.txt", BAD, BAD_TYPES), template(root / "t" / "good.txt")]
    elif case == "clean" or case == "no-findings-at-all":
        args += [template(root / "good.txt")]
    elif case == "payload":
        args += [_payload(root)]
    elif case == "unreadable":
        (root / "broken.json").write_text('{"answer_template": ')
        args += [root / "broken.json", template(root / "good.txt")]
    elif case == "stdin":
        monkeypatch.setattr("sys.stdin", io.StringIO(BAD))
        args += ["-", "-s", "total=money", "-s", "order_id=identifier", "-s", "name=string"]
    elif case == "outside":
        args += [template(tmp_path / "elsewhere.txt", BAD, BAD_TYPES)]
    code, out, _ = cli("lint", *args, cwd=root)
    doc = valid_sarif(out)
    (run,) = doc["runs"]
    assert run["columnKind"] == "unicodeCodePoints"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == root.resolve().as_uri() + "/"
    assert code == (0 if case in ("clean", "no-findings-at-all") else 1)
    if case == "findings":
        loc = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
        assert loc == {"uri": "t/bad.txt", "uriBaseId": "%SRCROOT%"}
    if case == "outside":
        loc = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
        assert loc == {"uri": (tmp_path / "elsewhere.txt").resolve().as_uri()}
    if case == "unreadable":
        assert run["invocations"][0]["executionSuccessful"] is False


def test_sarif_rules_carry_descriptions_and_the_rules_page(cli: Run, tmp_path: Path) -> None:
    t = template(tmp_path / "bad.txt", BAD, BAD_TYPES)
    _, out, _ = cli("lint", t, "-d", "orders", "-f", "sarif", "--isolated", cwd=tmp_path)
    rules = {r["id"]: r for r in valid_sarif(out)["runs"][0]["tool"]["driver"]["rules"]}
    assert set(rules) == {"S201", "S202", "T301"}
    for code, rule in rules.items():
        assert rule["help"]["text"] == rule_text(code)  # what `guard rules CODE` prints
        assert rule["fullDescription"]["text"] and rule["fullDescription"]["text"] != rule["shortDescription"]["text"]


def test_fingerprints_survive_an_edit_above_and_tell_twins_apart(cli: Run, tmp_path: Path) -> None:
    t = template(tmp_path / "bad.txt", BAD + BAD.splitlines()[1] + "\n", BAD_TYPES)
    args = ("lint", t, "-d", "orders", "-f", "sarif", "--isolated", "--no-freetext")

    def prints() -> list[tuple[str, int, str]]:
        _, out, _ = cli(*args, cwd=tmp_path)
        results = valid_sarif(out)["runs"][0]["results"]
        return [
            (
                r["ruleId"],
                r["locations"][0]["physicalLocation"]["region"]["startLine"],
                r["partialFingerprints"]["guardFinding/v1"],
            )
            for r in results
        ]

    before = prints()
    fps = [fp for _, _, fp in before]
    assert len(set(fps)) == len(fps)  # the same sentence twice gets two fingerprints
    t.write_text("Thank you for your order.\n" + t.read_text())  # an approved line: no finding of its own
    after = prints()
    assert [fp for _, _, fp in after] == fps
    assert [line for _, line, _ in after] == [line + 1 for _, line, _ in before]


def test_github_annotations(cli: Run, tmp_path: Path) -> None:
    t = template(tmp_path / "bad.txt", BAD, BAD_TYPES)
    code, out, _ = cli("lint", "bad.txt", "-d", "orders", "-f", "github", "--isolated", "--no-freetext", cwd=tmp_path)
    assert code == 1 and t.is_file()
    lines = out.splitlines()
    assert lines[0] == (
        "::error file=bad.txt,line=2,col=34,endLine=2,endColumn=41,title=S202 shape.slot_type::sentence 2: slot "
        "{total} is MONEY, but here the approved sentences take a DATE slot or a TIMESTAMP slot"
    )
    assert lines[-1].startswith("1 file checked: 2 findings")


def test_github_annotations_escape_what_the_runner_would_read_as_syntax() -> None:
    f = Finding("R401", "50% of it\nis prose: a, b", severity=Severity.WARNING, start=0, end=4)
    r = FileReport("dir/we,ird:name.txt", SHIPPED, [f])
    line = format_github([r]).splitlines()[0]
    assert line.startswith("::warning file=dir/we%2Cird%3Aname.txt,line=1,col=1,endLine=1,endColumn=5,")
    assert line.endswith("::50%25 of it%0Ais prose: a, b")
    err = format_github([FileReport("x.txt", error="cannot read x.txt")]).splitlines()[0]
    assert err == "::error file=x.txt,title=guard%3A file not checked::cannot read x.txt"


def test_fail_on_warning(cli: Run, tmp_path: Path) -> None:
    t = template(tmp_path / "a.txt")
    args = ("lint", t, "-d", "orders", "--isolated", "--no-freetext", "--max-prose-per-slot", "1")
    code, out, _ = cli(*args)
    assert code == 0 and "1 finding (0 errors, 1 warning)" in out
    assert cli(*args, "--fail-on", "warning")[0] == 1
    assert cli(*args, "--fail-on", "error")[0] == 0
    code, _, err = cli(*args, "--fail-on", "info")
    assert code == 2 and "--fail-on must be error or warning" in err


def test_sarif_in_python_keeps_relative_locations_under_the_root(tmp_path: Path) -> None:
    f = Finding("S201", "no", start=0, end=4)
    doc = sarif([FileReport(str(tmp_path / "a b" / "t.txt"), SHIPPED, [f])], root=tmp_path)
    VALIDATOR.validate(doc)
    art = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert art == {"uri": "a%20b/t.txt", "uriBaseId": "%SRCROOT%"}


@pytest.mark.parametrize(
    "before, span, pad",
    [("Your order ", "{total}", 11), ("注文 ", "{total}", 5), ("Cafe\u0301 ", "{total}", 5), ("👍 ", "{total}", 3)],
)
def test_the_caret_sits_under_the_span_in_terminal_columns(before: str, span: str, pad: int) -> None:
    text = f"{before}{span} is due.\n"
    f = Finding("S201", "not approved", start=len(before), end=len(before) + len(span))
    lines = format_text([FileReport("t.txt", text, [f])]).splitlines()
    assert lines[1] == f"    {text.rstrip()}"
    assert lines[2] == "    " + " " * pad + "^" * len(span)


@pytest.mark.parametrize("where", ["option", "config"])
def test_help_uri_points_each_rule_at_its_page(cli: Run, tmp_path: Path, where: str) -> None:
    t = template(tmp_path / "bad.txt", BAD, BAD_TYPES)
    uri = "https://docs.example.org/guard/rules/{code}.md"
    if where == "config":
        (tmp_path / ".guard.yaml").write_text(f"help-uri: {uri}\n")
        _, out, _ = cli("lint", t, "-d", "orders", "-f", "sarif", cwd=tmp_path)
    else:
        _, out, _ = cli("lint", t, "-d", "orders", "-f", "sarif", "--isolated", "--help-uri", uri, cwd=tmp_path)
    rules = valid_sarif(out)["runs"][0]["tool"]["driver"]["rules"]
    assert rules and all(r["helpUri"] == f"https://docs.example.org/guard/rules/{r['id']}.md" for r in rules)
    assert all(r["help"]["markdown"] == rule_markdown(r["id"]) for r in rules)


def test_without_a_help_uri_no_rule_claims_one(cli: Run, tmp_path: Path) -> None:
    t = template(tmp_path / "bad.txt", BAD, BAD_TYPES)
    _, out, _ = cli("lint", t, "-d", "orders", "-f", "sarif", "--isolated", cwd=tmp_path)
    rules = valid_sarif(out)["runs"][0]["tool"]["driver"]["rules"]
    assert rules and not any("helpUri" in r for r in rules)


@pytest.mark.parametrize("bad", ["rules/{code}.md", "/docs/{code}.md", "https:///{code}", "https://x.org/a b/{code}"])
def test_a_help_uri_that_is_not_absolute_is_refused_where_it_was_given(cli: Run, tmp_path: Path, bad: str) -> None:
    t = template(tmp_path / "bad.txt", BAD, BAD_TYPES)
    code, out, err = cli("lint", t, "-d", "orders", "-f", "sarif", "--isolated", "--help-uri", bad, cwd=tmp_path)
    assert code == 2 and out == "" and "--help-uri" in err and "absolute URI" in err
    (tmp_path / ".guard.yaml").write_text(json.dumps({"help-uri": bad}))
    code, out, err = cli("lint", t, "-d", "orders", "-f", "sarif", cwd=tmp_path)
    assert code == 1 and out == "" and "help-uri" in err and "Traceback" not in err


def test_write_docs_writes_a_page_per_code_that_sarif_help_carries(cli: Run, tmp_path: Path) -> None:
    from guard.findings import CATALOGUE

    code, out, _ = cli("rules", "--write-docs", str(tmp_path / "docs"))
    assert code == 0 and f"wrote {len(CATALOGUE)} rule pages" in out
    pages = sorted(p.stem for p in (tmp_path / "docs").glob("*.md"))
    assert pages == sorted(CATALOGUE)
    for c in pages:
        text = (tmp_path / "docs" / f"{c}.md").read_text(encoding="utf-8")
        assert text == rule_markdown(c) and text.startswith(f"# {c} ")
    (tmp_path / "file").write_text("x")
    code, _, err = cli("rules", "--write-docs", str(tmp_path / "file"))
    assert code == 1 and "cannot write" in err


@given(st.text(max_size=60))
def test_markdown_escaping_keeps_the_text_and_leaves_no_syntax(text: str) -> None:
    escaped = _md(text)
    out, i = [], 0
    while i < len(escaped):
        if escaped[i] == "\\":
            i += 1
        out.append(escaped[i])
        i += 1
    assert "".join(out) == text
    for c in "`*_[]<>#|":
        assert escaped.count(c) == escaped.count("\\" + c)

"""Issue 18 #21: hostile values in lint payloads and training corpora, and output paths that cannot be written,
give findings or one ``guard: error:`` line, never a traceback.

Everything runs through :func:`guard.cli.main.main` (the command line as a user types it) or the public
functions behind it, on real files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from guard.cli.main import main
from guard.errors import CorpusError
from guard.freetext.corpus import read_corpus, split_of
from guard.linting.runner import lint_payload

GOOD_CLAIM = {"key": "a", "type": "date", "entity": "order", "entity_id": "x", "field": "shipped_at", "value": "v"}


def one_line_error(capsys, code: int, *args: str) -> str:
    assert main(list(args)) == code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and captured.err.startswith("guard: error:"), captured.err
    assert len(captured.err.strip().splitlines()) == 1
    return captured.err


# -- lint payloads whose claims are the wrong JSON types ------------------------------------------------------
@pytest.mark.parametrize(
    "claims",
    [
        5,
        "claims",
        {"a": 1},
        [{**GOOD_CLAIM, "type": ["date"]}],
        [{**GOOD_CLAIM, "type": {"date": 1}}],
        [{**GOOD_CLAIM, "key": ["a"]}],
        [5, None, [1]],
    ],
    ids=["int", "str", "object", "type-list", "type-object", "key-list", "items"],
)
def test_lint_payload_with_claims_of_the_wrong_json_type_is_linted(tmp_path, capsys, claims):
    body = {"answer_template": "Your order shipped on {a}.", "claims": claims}
    result = lint_payload(json.dumps(body), domain="orders")
    assert "F107" in {f.code for f in result.findings}  # the slot no readable claim names
    f = tmp_path / "p.json"
    f.write_text(json.dumps(body), encoding="utf-8")
    assert main(["lint", "--domain", "orders", str(f), "--format", "json"]) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "F107" in captured.out


# -- output paths ---------------------------------------------------------------------------------------------
@pytest.fixture()
def template(tmp_path: Path) -> Path:
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"answer_template": "Your order {a} shipped.", "claims": []}), encoding="utf-8")
    return f


@pytest.mark.parametrize("where", ["missing/x.json", "."], ids=["missing-folder", "a-folder"])
def test_lint_output_that_cannot_be_written_is_one_line(tmp_path, capsys, template, where):
    out = tmp_path / where
    err = one_line_error(capsys, 1, "lint", "--domain", "orders", str(template), "--output", str(out))
    assert str(out) in err


@pytest.mark.parametrize("where", ["missing/x.lark", "."], ids=["missing-folder", "a-folder"])
def test_grammar_export_output_that_cannot_be_written_is_one_line(tmp_path, capsys, where):
    out = tmp_path / where
    err = one_line_error(capsys, 1, "grammars", "export", "orders", "--output", str(out))
    assert str(out) in err


def test_train_out_that_cannot_be_written_fails_before_training(tmp_path, capsys):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "orders.jsonl").write_text("", encoding="utf-8")
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    err = one_line_error(capsys, 1, "train", "--corpus", str(corpus), "--out", str(blocker / "m.joblib"))
    assert "m.joblib" in err and "corpus" not in err.split(":", 2)[-1].split()[0]


# -- training corpora ---------------------------------------------------------------------------------------
def row(text: str, **over: Any) -> dict[str, Any]:
    d = {"text": text, "labels": [], "domain": "orders", "split": split_of(text), "hard": False, "register": "formal"}
    d.update(over)
    return d


def write_corpus(tmp_path: Path, *lines: str) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir(exist_ok=True)
    (folder / "orders.jsonl").write_bytes(("\n".join(lines) + "\n").encode("utf-8"))
    return folder


@pytest.mark.parametrize(
    "over",
    [
        {"register": []},
        {"register": {"a": 1}},
        {"split": ["train"]},
        {"domain": ["orders"]},
        {"hard": []},
        {"labels": [["causal"]]},
    ],
    ids=["register-list", "register-object", "split-list", "domain-list", "hard-list", "labels-nested"],
)
def test_corpus_field_of_the_wrong_json_type_is_a_corpus_problem_at_its_line(tmp_path, capsys, over):
    good = json.dumps(row("It shipped."))
    bad = json.dumps(row("It arrived.", **over))
    folder = write_corpus(tmp_path, good, bad)
    with pytest.raises(CorpusError) as info:
        read_corpus(folder)
    assert [str(p.location) for p in info.value.problems] == [f"{folder / 'orders.jsonl'}:2"]
    assert main(["train", "--corpus", str(folder), "--out", str(tmp_path / "m.joblib"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("guard: error:") and "orders.jsonl:2" in err


def test_corpus_line_nested_too_deeply_is_a_corpus_problem(tmp_path):
    folder = write_corpus(tmp_path, json.dumps(row("It shipped.")), "[" * 100_000)
    with pytest.raises(CorpusError) as info:
        read_corpus(folder)
    assert [str(p.location) for p in info.value.problems] == [f"{folder / 'orders.jsonl'}:2"]
    assert "nested" in info.value.problems[0].message


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\x85", "\x0c", "\x1e", "\r"])
def test_corpus_line_holding_a_raw_separator_is_one_line(tmp_path, sep):
    """JSON allows these raw inside a string; a corpus is split on line feeds only, so line numbers stay true."""
    text = f"It was{sep}late."
    first = json.dumps(row(text), ensure_ascii=False)
    folder = write_corpus(tmp_path, first, "{bad")
    with pytest.raises(CorpusError) as info:
        read_corpus(folder)
    assert [str(p.location) for p in info.value.problems] == [f"{folder / 'orders.jsonl'}:2"]


def test_monitor_window_beyond_any_duration_is_one_line(tmp_path, capsys):
    log = tmp_path / "guard.jsonl"
    log.write_text('{"ts":"2026-07-01T00:00:00+00:00","event":"decision","action":"answer"}\n', encoding="utf-8")
    err = one_line_error(capsys, 2, "monitor", str(log), "--window", "99999999999999d")
    assert "--window" in err

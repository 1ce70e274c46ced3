"""`guard train` and `guard classify` from the command line."""

from __future__ import annotations

import io
import json

import pytest

from guard.cli.main import main
from guard.freetext import LABELS

LINES = [
    "Your parcel is late because of a storm at the hub.",
    "It contains {item_count} items.",
    "",
    "Most customers choose express at checkout.",
    "Thanks for your patience.",
]


@pytest.fixture(scope="module")
def trained(tiny_corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("model") / "tiny.joblib"
    import contextlib

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["train", "--corpus", str(tiny_corpus), "--out", str(out), "--folds", "2", "--no-progress"])
    assert rc == 0
    return out, buf.getvalue()


def test_train_writes_model_and_card_and_reports_baselines(trained):
    out, report = trained
    card = json.loads(out.with_suffix(".json").read_text())
    assert out.is_file() and card["labels"] == list(LABELS)
    assert card["corpus"]["summary"]["n"] < 600
    assert card["training"]["cv"]["folds"] == 2
    for word in ("keyword F1", "bag-of-words F1", "dev", "test", "thresholds", "cross-validation"):
        assert word in report, word
    for lab in LABELS:
        assert lab in report


def test_classify_text_json_and_jsonl(trained, tmp_path, capsys):
    model, _ = trained
    f = tmp_path / "in.txt"
    f.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    assert main(["classify", str(f), "--format", "jsonl", "--model", str(model)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["text"] for r in rows] == LINES
    for r in rows:
        assert set(r) == {"text", "labels", "scores", "spans"} and set(r["scores"]) == set(LABELS)
    assert main(["classify", str(f), "--format", "json", "--model", str(model)]) == 0
    assert [r["text"] for r in json.loads(capsys.readouterr().out)] == LINES
    assert main(["classify", str(f), "--model", str(model)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == len(LINES) and out[1].startswith("-\t")


def test_classify_reads_stdin_with_the_shipped_model(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("It contains 3 items.\nThanks for waiting.\n"))
    assert main(["classify", "-", "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows[0]["labels"] == ["quantity"] and rows[0]["spans"]["quantity"][0]["text"] == "3 items"
    assert rows[1]["labels"] == []


def test_classify_and_train_errors_are_messages(tmp_path, capsys):
    assert main(["classify", str(tmp_path / "missing.txt")]) == 1
    assert "cannot read" in capsys.readouterr().err
    assert main(["classify", "-", "--format", "xml"]) == 2  # a usage error
    assert "--format" in capsys.readouterr().err
    (tmp_path / "in.txt").write_text("hello\n")
    assert main(["classify", str(tmp_path / "in.txt"), "--model", str(tmp_path / "none.joblib")]) == 1
    err = capsys.readouterr().err
    assert "not found" in err and "Traceback" not in err
    (tmp_path / "corp").mkdir()
    (tmp_path / "corp" / "orders.jsonl").write_text("{broken\n")
    assert (
        main(["train", "--corpus", str(tmp_path / "corp"), "--out", str(tmp_path / "m.joblib"), "--no-progress"]) == 1
    )
    err = capsys.readouterr().err
    assert "orders.jsonl:1" in err and "Traceback" not in err

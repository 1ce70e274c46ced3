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


def test_classify_as_its_own_process_prints_every_line_before_it_ends(tmp_path, capsys):
    """A process that is ``guard classify`` ends without tearing its caches down (skip_teardown): all of
    its output still arrives, through a pipe, and equals the in-process run's; errors keep their exit code."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    lines = [f"Order {i} arrived {i % 7} days later than the {i}th." for i in range(5000)] + ["", "Thanks."]
    f = tmp_path / "in.txt"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["classify", str(f), "--format", "jsonl"]) == 0
    expected = capsys.readouterr().out
    env = {**os.environ, "PYTHONPATH": str(root)}
    run = [sys.executable, "-m", "guard", "classify"]
    proc = subprocess.run([*run, str(f), "--format", "jsonl"], capture_output=True, text=True, env=env, cwd=root)
    assert proc.returncode == 0 and proc.stderr == "" and proc.stdout == expected and len(expected) > 100_000
    proc = subprocess.run([*run, str(tmp_path / "missing.txt")], capture_output=True, text=True, env=env, cwd=root)
    assert proc.returncode == 1 and proc.stderr.startswith("guard: error: cannot read") and proc.stdout == ""


def test_skip_teardown_is_only_for_the_process_that_is_the_command(tmp_path, capsys):
    """Called in process (``main([...])``), a command that skips its teardown returns normally and keeps
    nothing alive after main returns."""
    from guard.cli import main as cli_main

    f = tmp_path / "in.txt"
    f.write_text("Faster than usual.\n", encoding="utf-8")
    assert main(["classify", str(f)]) == 0
    assert cli_main._KEPT == [] and cli_main._TEARDOWN == ["skip"]
    assert capsys.readouterr().out.startswith("comparative\t")


@pytest.mark.parametrize("fmt", ["jsonl", "json", "text"])
def test_classify_prints_byte_for_byte_what_the_joblib_read_model_prints(corpus_examples, tmp_path, capsys, fmt):
    """The shipped file is read without joblib (guard.freetext._modelfile); the same model in a file only
    joblib reads (lzma-compressed, so the lean reader declines it) prints the very same bytes."""
    import shutil

    import joblib

    from guard.freetext.model import card_path, default_model_path, file_sha256

    shipped = default_model_path()
    other = tmp_path / "lzma.joblib"
    joblib.dump(joblib.load(shipped), other, compress=("lzma", 3))
    card = json.loads(card_path(shipped).read_text(encoding="utf-8"))
    card["model_file"]["sha256"] = file_sha256(other)
    card_path(other).write_text(json.dumps(card), encoding="utf-8")
    f = tmp_path / "in.txt"
    lines = [e.text for e in corpus_examples[::3]] + ["It arrived lаter thаn usual.", "Ｆａｓｔｅｒ 🚚 by Friday"]
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["classify", str(f), "--format", fmt]) == 0
    lean = capsys.readouterr().out
    assert main(["classify", str(f), "--format", fmt, "--model", str(other)]) == 0
    assert capsys.readouterr().out == lean and lean.count("\n") >= len(lines)
    shutil.rmtree(tmp_path)

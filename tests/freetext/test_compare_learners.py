"""benchmarks/compare_learners.py: the spaCy textcat candidate and the card's capacity merge, on a tiny corpus."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys

import numpy as np
import pytest

from guard.freetext.corpus import LABELS, corpus_sha256, read_corpus
from guard.freetext.featurize import SLOT_CHAR

from .conftest import ROOT


@pytest.fixture(scope="module")
def compare():
    spec = importlib.util.spec_from_file_location("compare_learners", ROOT / "benchmarks" / "compare_learners.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["compare_learners"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def corpus_with_challenge(tiny_corpus, tmp_path_factory):
    """The tiny corpus plus a challenge split (blind2) made of its test lines in two domains."""
    out = tmp_path_factory.mktemp("compare_corpus")
    (out / "challenge" / "blind2").mkdir(parents=True)
    for f in sorted(tiny_corpus.glob("*.jsonl")):
        shutil.copy(f, out / f.name)
        if f.stem in ("orders", "reviews"):
            rows = [r for r in f.read_text(encoding="utf-8").splitlines() if json.loads(r)["split"] == "test"]
            (out / "challenge" / "blind2" / f.name).write_text("\n".join(rows) + "\n", encoding="utf-8")
    return out


def test_textcat_reads_prepared_text_and_gives_one_probability_per_label(compare, tiny_corpus):
    sets = compare.load_sets(tiny_corpus)
    tc = compare.TextcatLearner("ensemble", max_epochs=1, seed=0)
    tc.fit(sets["train"][0], sets["train"][1], sets["dev"][0], sets["dev"][1])
    # what the shipped classifier reads: the slot is one masked token, the Cyrillic "а" folded
    words = [t.text for t in tc.docs(["Order {order_id} came l\u0430ter than promised"])[0]]
    assert words == ["Order", SLOT_CHAR, "came", "later", "than", "promised"]
    P = tc.predict_proba(sets["dev"][0])
    assert P.shape == (len(sets["dev"][0]), len(LABELS))
    assert np.isfinite(P).all() and (P >= 0).all() and (P <= 1).all()
    assert tc.predict_proba([]).shape == (0, len(LABELS))
    info = tc.info()
    assert info["arch"] == "spacy.TextCatEnsemble.v2" and info["best_epoch"] == 1 and len(info["epochs"]) == 1


def test_a_textcat_run_merges_into_the_card_and_keeps_the_learners_not_rerun(compare, corpus_with_challenge, tmp_path):
    card_file = tmp_path / "card.json"
    old_hgb = {"thresholds": [0.5] * 4, "f1": {"test": {"macro": 0.9}}, "sentences_per_s": 123, "fit_seconds": 868.2}
    old_linear = {"thresholds": [0.4] * 4, "f1": {"test": {"macro": 0.91}}, "sentences_per_s": 1485, "fit_seconds": 5.7}
    card = {
        "name": "freetext",
        "capacity": {"learners": {"linear": old_linear, "hgb": old_hgb}, "hgb": {"columns": 2000}, "corpus_n": 5930},
    }
    card_file.write_text(json.dumps(card), encoding="utf-8")
    argv = ["--corpus", str(corpus_with_challenge), "--learners", "textcat,linear+textcat"]
    compare.main(
        [*argv, "--textcat-epochs", "1", "--bench-seconds", "0.2", "--bench-rounds", "1", "--card", str(card_file)]
    )

    got = json.loads(card_file.read_text(encoding="utf-8"))
    assert got["name"] == "freetext"
    capacity = got["capacity"]
    assert list(capacity["learners"]) == ["linear", "hgb", "textcat", "linear+textcat"]
    # not rerun (linear was fitted only as a part of the mean): kept, with the old section's corpus size
    assert capacity["learners"]["hgb"] == {**old_hgb, "corpus": {"sha256": None, "n": 5930}}
    assert capacity["learners"]["linear"] == {**old_linear, "corpus": {"sha256": None, "n": 5930}}
    assert capacity["hgb"] == {"columns": 2000} and "corpus_n" not in capacity
    n = len(read_corpus(corpus_with_challenge))
    for name in ("textcat", "linear+textcat"):
        entry = capacity["learners"][name]
        assert entry["corpus"] == {"sha256": corpus_sha256(corpus_with_challenge), "n": n}
        assert len(entry["thresholds"]) == len(LABELS)
        assert set(entry["f1"]) == {"test", "blind2"}
        for split in entry["f1"].values():
            assert set(split) == {*LABELS, "macro"} and all(0 <= v <= 1 for v in split.values())
        assert entry["sentences_per_s"] > 0 and entry["vs_shipped_predict"] > 0
    assert capacity["learners"]["linear+textcat"]["fit_seconds"] >= capacity["learners"]["textcat"]["fit_seconds"]
    assert capacity["textcat"]["arch"] == "spacy.TextCatEnsemble.v2"


def test_a_learner_measured_again_replaces_its_entry_and_the_rest_of_the_section_stays(compare):
    old = {"learners": {"textcat": {"f1": 0.1}, "hgb": {"f1": 0.2, "corpus": {"sha256": "a", "n": 3}}}, "hgb": {"x": 1}}
    new = {"learners": {"textcat": {"f1": 0.3}, "linear": {"f1": 0.4}}, "textcat": {"best_epoch": 2}}
    got = compare.merge_capacity(old, new)
    assert got["learners"] == {
        "linear": {"f1": 0.4},
        "hgb": {"f1": 0.2, "corpus": {"sha256": "a", "n": 3}},
        "textcat": {"f1": 0.3},
    }
    assert list(got["learners"]) == ["linear", "hgb", "textcat"]
    assert got["hgb"] == {"x": 1} and got["textcat"] == {"best_epoch": 2}
    assert compare.merge_capacity(None, new)["learners"] == new["learners"]


def test_unknown_learners_are_refused(compare):
    with pytest.raises(SystemExit, match="unknown learner"):
        compare.parse_learners("linear,forest")
    assert compare.parse_learners("linear+textcat,linear") == ["linear", "linear+textcat"]

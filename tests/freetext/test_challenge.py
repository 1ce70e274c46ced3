"""The out-of-domain challenge set is valid, held out from training, and scored by a correct evaluator.

Nothing here asserts a model's score: the set exists to measure, not to pass.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from guard.errors import CorpusError
from guard.freetext.corpus import FIELDS, LABELS, corpus_files, corpus_sha256, read_corpus
from guard.freetext.evaluation import evaluate_challenge, read_challenge

from .conftest import CORPUS

CHALLENGE = CORPUS / "challenge"
FRESH = CHALLENGE / "fresh"
BLIND = CHALLENGE / "blind"
BLIND2 = CHALLENGE / "blind2"
BLIND3 = CHALLENGE / "blind3"
BLIND4 = CHALLENGE / "blind4"
DEV3 = CHALLENGE / "dev3"
DOMAINS = {"reviews", "science", "debates", "support"}


def _rows():
    """Every line of the challenge sets (the main one, fresh/, blind*/ and dev3/), with its file and line."""
    parts = (FRESH, BLIND, BLIND2, BLIND3, BLIND4, DEV3)
    files = [*CHALLENGE.glob("*.jsonl"), *(f for d in parts for f in d.glob("*.jsonl"))]
    for f in sorted(files):
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                yield f, n, json.loads(line)


def _norm(text: str) -> str:
    """Lower-cased words only: catches copies that differ in punctuation or spacing."""
    return " ".join(re.findall(r"[a-z0-9{}_']+", text.lower()))


def test_challenge_files_follow_the_schema():
    for directory in (CHALLENGE, FRESH):
        assert {f.stem for f in directory.glob("*.jsonl")} == DOMAINS, directory
    assert {f.stem for f in BLIND.glob("*.jsonl")} == DOMAINS | {"shop_email", "long"}
    assert {f.stem for f in BLIND2.glob("*.jsonl")} == DOMAINS | {"shop_email", "sms"}
    assert {f.stem for f in BLIND3.glob("*.jsonl")} == {"shop_email", "science", "reviews", "debates"}
    assert {f.stem for f in DEV3.glob("*.jsonl")} == {"shop_email", "science", "reviews", "debates"}
    assert {f.stem for f in BLIND4.glob("*.jsonl")} == {"shop_email", "science", "reviews"}
    for f, n, d in _rows():
        where = f"{f.parent.name}/{f.name}:{n}"
        assert tuple(sorted(d)) == tuple(sorted(FIELDS)), where
        assert d["domain"] == f.stem and d["split"] == "test", where
        assert d["labels"] == sorted(set(d["labels"])) and set(d["labels"]) <= set(LABELS), where
        assert isinstance(d["hard"], bool) and d["register"] in {"formal", "casual", "terse", "apologetic"}, where
        assert 3 <= len(d["text"].split()) <= 45, where
    examples = read_challenge(CHALLENGE)  # the reader's own checks, duplicates included
    assert len(examples) >= 600
    assert len(read_challenge(FRESH)) >= 100
    assert len(read_challenge(BLIND)) >= 250
    assert len(read_challenge(BLIND2)) >= 300
    assert len(read_challenge(BLIND3)) >= 400
    assert len(read_challenge(DEV3)) > len(read_challenge(BLIND3))
    assert len(read_challenge(BLIND4)) >= 200


def test_challenge_covers_every_label_domain_and_hard_cases():
    examples = read_challenge(CHALLENGE)
    for dom in DOMAINS:
        exs = [e for e in examples if e.domain == dom]
        assert len(exs) >= 150, dom
        assert sum(1 for e in exs if not e.labels and e.hard) >= 20, f"{dom}: too few hard negatives"
        for lab in ("causal", "comparative", "quantity"):
            assert sum(lab in e.labels for e in exs) >= 25, f"{dom}: too few {lab}"


def test_blind_set_has_long_sentences_temporal_cases_and_clean_shop_mail():
    """The blind split (issue 16): written before any tuning, in other registers, with long sentences."""
    examples = read_challenge(BLIND)
    assert sum(len(e.text.split()) >= 25 for e in examples) >= 30
    assert sum("temporal" in e.labels for e in examples) >= 30
    assert sum(1 for e in examples if "temporal" not in e.labels and "{" in e.text) >= 10  # slot-supplied times
    shop = [e for e in examples if e.domain == "shop_email"]
    assert sum(not e.labels for e in shop) >= 30
    for lab in LABELS:
        assert sum(lab in e.labels for e in examples) >= 25, lab


def test_second_blind_set_covers_registers_long_sentences_and_the_hard_cases():
    """blind2/ (issue 16, second session): six registers, written and committed before any scoring."""
    examples = read_challenge(BLIND2)
    assert sum(len(e.text.split()) >= 25 for e in examples) >= 25
    assert sum(1 for e in examples if "temporal" not in e.labels and "{" in e.text) >= 20  # slot-supplied values
    for dom in DOMAINS | {"shop_email", "sms"}:
        exs = [e for e in examples if e.domain == dom]
        assert len(exs) >= 50 and sum(not e.labels for e in exs) >= 8, dom
    for lab in LABELS:
        assert sum(lab in e.labels for e in examples) >= 40, lab


def test_third_blind_set_weighs_shop_mail_and_the_out_of_domain_registers():
    """blind3/ (issue 16, fourth session): mostly clean shop mail, findings, reviews, debate claims."""
    examples = read_challenge(BLIND3)
    shop = [e for e in examples if e.domain == "shop_email"]
    assert len(shop) >= 150 and sum(not e.labels for e in shop) >= 120
    for dom, lab, n in (("science", "causal", 40), ("reviews", "comparative", 30), ("debates", "quantity", 10)):
        exs = [e for e in examples if e.domain == dom]
        assert sum(lab in e.labels for e in exs) >= n, dom
        assert sum(not e.labels and e.hard for e in exs) >= 15, dom


def test_fourth_blind_set_weighs_hedged_shop_mail_and_hedged_findings():
    """blind4/ (issue 16, fifth session): clean shop mail with modal courtesy, hedged causal findings."""
    examples = read_challenge(BLIND4)
    shop = [e for e in examples if e.domain == "shop_email"]
    assert len(shop) >= 120 and sum(not e.labels for e in shop) >= 90
    modal = ("may ", "might ", "could ")
    assert sum(not e.labels and any(m in e.text.lower() for m in modal) for e in shop) >= 50
    assert sum(bool(e.labels) and any(m in e.text.lower() for m in modal) for e in shop) >= 10
    science = [e for e in examples if e.domain == "science"]
    assert sum("causal" in e.labels and any(m in e.text.lower() for m in modal) for e in science) >= 20
    assert sum(not e.labels and e.hard for e in science) >= 10
    reviews = [e for e in examples if e.domain == "reviews"]
    assert sum("comparative" in e.labels for e in reviews) >= 10


def test_challenge_has_no_duplicates_and_no_overlap_with_the_main_corpus():
    seen: dict[str, str] = {}
    for f, n, d in _rows():
        key = _norm(d["text"])
        assert key not in seen, f"{f.parent.name}/{f.name}:{n} duplicates {seen.get(key)}"
        seen[key] = f"{f.parent.name}/{f.name}:{n}"
    main = {_norm(e.text): e.source for e in read_corpus(CORPUS)}
    overlap = sorted(set(seen) & set(main))
    assert not overlap, [(seen[k], main[k]) for k in overlap[:5]]


def test_training_reader_and_corpus_hash_ignore_the_challenge_set(corpus_examples):
    assert all(f.parent == CORPUS for f in corpus_files(CORPUS))
    assert not any("challenge" in e.source for e in corpus_examples)
    card = json.loads((CORPUS.parent / "models" / "freetext.json").read_text(encoding="utf-8"))
    if card["corpus"]["sha256"] != corpus_sha256(CORPUS):
        pytest.skip("the main corpus changed since the shipped model was trained")
    # the shipped model's card hashes exactly the files the reader reads
    assert card["corpus"]["summary"]["n"] == len(corpus_examples)


def test_read_challenge_rejects_lines_outside_the_test_split(tmp_path):
    good = {
        "text": "Cheaper than the old one.",
        "labels": ["comparative"],
        "domain": "reviews",
        "split": "test",
        "hard": False,
        "register": "terse",
    }
    bad = dict(good, text="It lasts two days.", labels=["quantity"], split="train")
    (tmp_path / "reviews.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="not in the test split"):
        read_challenge(tmp_path)


def test_evaluate_challenge_counts_per_label_and_domain():
    examples = read_challenge(CHALLENGE)
    gold = np.array([[lab in e.labels for lab in LABELS] for e in examples], dtype=np.int8)
    by_text = {e.text: row for e, row in zip(examples, gold)}
    result = evaluate_challenge(
        examples,
        {
            "oracle": lambda texts: np.array([by_text[t] for t in texts]),
            "silent": lambda texts: np.zeros((len(texts), len(LABELS)), dtype=np.int8),
        },
    )
    oracle, silent = result["systems"]["oracle"], result["systems"]["silent"]
    assert set(result["domains"]) == DOMAINS and sum(result["domains"].values()) == len(examples)
    for lab in LABELS:
        assert oracle["labels"][lab]["f1"] == 1.0 and oracle["labels"][lab]["fp"] == 0
        assert silent["labels"][lab]["f1"] == 0.0 and silent["labels"][lab]["fn"] == oracle["labels"][lab]["support"]
        assert sum(oracle["domains"][d][lab]["support"] for d in DOMAINS) == oracle["labels"][lab]["support"]

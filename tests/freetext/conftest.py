"""Fixtures for the free-text classifier tests: the real corpus, the shipped model, a tiny corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpora"


@pytest.fixture(scope="session")
def corpus_examples():
    from guard.freetext.corpus import read_corpus

    return read_corpus(CORPUS)


@pytest.fixture(scope="session")
def shipped():
    from guard.freetext import load

    return load()


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory, corpus_examples):
    """About 400 real corpus lines (every split and label set), written as a corpus directory."""
    from guard.freetext.training import _stratified_sample

    picked = _stratified_sample(corpus_examples, 400, seed=1)
    out = tmp_path_factory.mktemp("tiny_corpus")
    by_domain: dict[str, list[str]] = {}
    for e in picked:
        row = {
            "text": e.text,
            "labels": list(e.labels),
            "domain": e.domain,
            "split": e.split,
            "hard": e.hard,
            "register": e.register,
        }
        by_domain.setdefault(e.domain, []).append(json.dumps(row))
    for dom, rows in by_domain.items():
        (out / f"{dom}.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return out

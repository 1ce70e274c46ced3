"""Every shipped domain on the template corpus (corpora/templates), through the same check lint runs: no
unverified sentence accepted in any split or in the challenge set, and clean acceptance no lower than when the
floors were last raised (targets: 90%; the figures per kind are in the issue notes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from guard.shapes.coverage import CLEAN_KINDS, measure, read_records
from guard.shapes.sentences import list_domains

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpora" / "templates"
ALL = ("train", "dev", "test")
FLOORS = {"orders": 0.84, "billing": 0.66, "account": 0.68, "travel": 0.82, "subscriptions": 0.61}
"""Clean acceptance on train+dev, per domain, a little under what was measured when last raised (86%, 68%, 70%,
85%, 64%): a floor against regressions. The test split is reported in the issue notes, never tuned on."""


def _rows(domain: str, splits=ALL) -> list[dict]:
    rows = list(read_records([CORPUS / f"{domain}.jsonl"], splits))
    challenge = read_records([CORPUS / "challenge_unverified.jsonl"], splits)
    return rows + [r for r in challenge if r["domain"] == domain]


DOMAINS = sorted(d for d in list_domains() if (CORPUS / f"{d}.jsonl").is_file())


def test_every_corpus_domain_ships_a_library():
    corpus = sorted(p.stem for p in CORPUS.glob("*.jsonl") if not p.stem.startswith("challenge"))
    assert corpus == DOMAINS


def test_at_least_300_unverified_sentences_are_all_rejected():
    total, accepted = 0, []
    for domain in DOMAINS:
        rows = [r for r in _rows(domain) if r["kind"] == "unverified"]
        total += len(rows)
        cov = measure(domain, rows)
        accepted += [text for _, text in cov.misses]
    assert total >= 300
    assert accepted == []


@pytest.mark.parametrize("domain", DOMAINS)
def test_clean_sentences_are_accepted_at_least_at_the_floor(domain):
    rows = [r for r in _rows(domain, ("train", "dev")) if r["kind"] in CLEAN_KINDS]
    cov = measure(domain, rows)
    accepted, total = cov.clean
    assert total >= 150
    assert accepted / total >= FLOORS.get(domain, 0.0), cov.table()


DEV2 = CORPUS / "dev2"


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_second_development_set_rejects_every_unverified_sentence(domain):
    rows = list(read_records([DEV2 / f"{domain}.jsonl"], ALL))
    unverified = [r for r in rows if r["kind"] == "unverified"]
    assert len(rows) == 120 and len(unverified) == 20
    assert measure(domain, unverified).misses == []

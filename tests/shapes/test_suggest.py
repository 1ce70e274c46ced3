"""``guard shapes suggest``: proposals for rejected sentences, vetted against claim-bearing words (never
admitted), compiled before they are offered, and written only with --write."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guard.cli.main import main
from guard.shapes import check_template, load_domain
from guard.shapes.compiler import claim_words
from guard.shapes.lexicon import read_lexicon
from guard.shapes.sentences import shipped_lexicons
from guard.shapes.suggest import Sample, suggest
from tests.conftest import LOCKERS


def lockers_with_a_site() -> str:
    """The shared lockers lexicon with a second noun and a site attribute, for proposals to build on (edited as
    text: ``--write`` appends to the file in its own flow style)."""
    text = LOCKERS.read_text(encoding="utf-8")
    text = text.replace("nouns: [locker]", "nouns: [locker, box]")
    text = text.replace(
        "    id: locker.id\n",
        "    id: locker.id\n    attributes:\n      - {type: string, field: locker.site, names: [site]}\n",
    )
    assert "box" in text and "locker.site" in text
    return text


BANNED = sorted(claim_words(read_lexicon(shipped_lexicons() / "core.yaml")))
FRAMES = [
    "Your locker {id} was opened on {d}, {w}.",
    "Your locker {id} {w} opened.",
    "{w} lockers are available.",
    "Your locker {id} was left with {site} {w}.",
]


@pytest.fixture(scope="module")
def lockers(tmp_path_factory):
    d = tmp_path_factory.mktemp("lockers")
    (d / "lockers.yaml").write_text(lockers_with_a_site())
    return load_domain("lockers", d)


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(FRAMES), st.sampled_from(BANNED))
def test_a_suggestion_never_admits_a_claim_bearing_word(lockers, frame, word):
    text = frame.replace("{w}", word)
    found = suggest([Sample(text, {"id": "identifier", "d": "date", "site": "string"})], lockers)
    for p in found.proposals:
        assert word not in str(p.entry).split(), p
    if not check_template(text, lockers, {"id": "identifier", "d": "date", "site": "string"}).ok:
        assert [r.sentence for r in found.refused] == [text]


def test_proposals_compile_are_accepted_afterwards_and_are_written_only_with_write(tmp_path, capsys):
    (tmp_path / "lockers.yaml").write_text(lockers_with_a_site())
    (tmp_path / "a.json").write_text(
        '{"answer_template": "Your locker {id} was emptied on {d}. Lockers are cleaned every night.",'
        ' "claims": [{"key": "id", "type": "identifier", "entity": "locker", "entity_id": "l1", "field": "id",'
        ' "value": "l1"}, {"key": "d", "type": "date", "entity": "locker", "entity_id": "l1",'
        ' "field": "emptied_at", "value": "2026-01-02"}]}'
    )
    before = (tmp_path / "lockers.yaml").read_text()
    args = ["shapes", "suggest", str(tmp_path / "a.json"), "-d", "lockers", "--grammar-dir", str(tmp_path)]
    assert main([*args, "--no-freetext"]) in (0, None)
    out = capsys.readouterr().out
    assert "was emptied on {date:locker.emptied_at}" in out
    assert "refused" in out and "'every' carries a claim" in out
    assert (tmp_path / "lockers.yaml").read_text() == before
    assert main([*args, "--no-freetext", "--write"]) in (0, None)
    capsys.readouterr()
    lib = load_domain("lockers", Path(tmp_path))
    assert check_template("Your locker {id} was emptied on {d}.", lib, {"id": "identifier", "d": "date"}).ok
    assert not check_template("Lockers are cleaned every night.", lib, {}).ok

"""The labelled corpus is valid, large and varied enough, and the reader reports bad lines precisely."""

from __future__ import annotations

import json

import pytest

from guard.errors import CorpusError
from guard.freetext.corpus import GUARD_DOMAINS, LABELS, agreement, corpus_files, read_corpus, split_of, summary

from .conftest import CORPUS

DOMAINS = GUARD_DOMAINS
#: Text beyond guard's domains (issue 16): other registers the classifier must read.
BEYOND = {"reviews", "science", "debates", "support_chat"}


def test_corpus_meets_the_issue(corpus_examples):
    s = summary(corpus_examples)
    print(
        f"\n{s['n']} sentences; splits {s['splits']}; labels {s['labels']}; clean {s['clean']}; multi-label "
        f"{s['multi_label']}"
    )
    print(f"slots {s['with_slots']:.1%}; hard {s['hard']:.1%}; registers {s['registers']}")
    for dom, counts in s["labels_by_domain"].items():
        print(f"  {dom:14s} {s['domains'][dom]:4d}  " + "  ".join(f"{lab} {n}" for lab, n in counts.items()))
    assert s["n"] >= 3000
    assert set(s["domains"]) >= DOMAINS, DOMAINS - set(s["domains"])
    # slots belong to guard's own answer templates; the text beyond them (reviews, science...) carries few
    own = [e for e in corpus_examples if e.domain in GUARD_DOMAINS]
    assert sum(e.has_slot for e in own) / len(own) >= 0.35
    assert s["hard"] >= 0.30
    for lab in LABELS:
        assert s["labels"][lab] >= 300, lab
    assert set(s["registers"]) == {"formal", "casual", "terse", "apologetic"}
    lengths = [len(e.text.split()) for e in corpus_examples]
    assert min(lengths) >= 3 and max(lengths) <= 45, "GUIDELINES.md: 3 to 45 words"
    assert sum(n >= 25 for n in lengths) >= 100, "GUIDELINES.md: long multi-clause sentences too"
    assert s["labels"]["temporal"] >= 300


def test_every_file_is_one_domain_and_every_split_follows_the_hash():
    for f in corpus_files(CORPUS):
        assert f.stem in DOMAINS | BEYOND, f.name
    # read_corpus already checks these; check independently from the raw lines too
    seen: dict[str, str] = {}
    for f in corpus_files(CORPUS):
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            d = json.loads(line)
            assert d["split"] == split_of(d["text"]), f"{f.name}:{n}"
            assert d["labels"] == sorted(set(d["labels"])) and set(d["labels"]) <= set(LABELS), f"{f.name}:{n}"
            key = d["text"].strip().lower()
            assert key not in seen, f"{f.name}:{n} duplicates {seen.get(key)}"
            seen[key] = f"{f.name}:{n}"


def test_no_leakage_across_splits(corpus_examples):
    by_split: dict[str, set[str]] = {}
    for e in corpus_examples:
        by_split.setdefault(e.split, set()).add(e.text.strip().lower())
    assert set(by_split) == {"train", "dev", "test"}
    assert not by_split["train"] & by_split["dev"]
    assert not by_split["train"] & by_split["test"]
    assert not by_split["dev"] & by_split["test"]


def _line(text, labels=(), split=None, **kw):
    row = {
        "text": text,
        "labels": list(labels),
        "domain": kw.pop("domain", "orders"),
        "split": split or split_of(text),
        "hard": False,
        "register": "formal",
    }
    row.update(kw)
    return json.dumps(row)


def test_reader_reports_file_and_line(tmp_path):
    good = _line("Your order shipped on {ship_date}.")
    (tmp_path / "orders.jsonl").write_text(
        "\n".join(
            [
                good,
                "{not json",
                _line("It arrived faster than usual.", ["comparative", "causal"]),
                _line("Three items are missing.", ["number"]),
                _line("Some text here.", split="dev" if split_of("Some text here.") != "dev" else "test"),
                _line("YOUR ORDER SHIPPED ON {ship_date}."),
                _line("Wrong domain line here.", domain="billing"),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    with pytest.raises(CorpusError) as err:
        read_corpus(tmp_path)
    where = [str(p.location) for p in err.value.problems]
    codes = [p.code for p in err.value.problems]
    f = str(tmp_path / "orders.jsonl")
    assert where == [f"{f}:{n}" for n in (2, 3, 4, 5, 6, 7)]
    assert codes == [
        "corpus.json",
        "corpus.labels",
        "corpus.labels",
        "corpus.split",
        "corpus.duplicate",
        "corpus.domain",
    ]
    assert f"{f}:2" in str(err.value)


def test_reader_accepts_a_byte_order_mark(tmp_path):
    (tmp_path / "orders.jsonl").write_text(
        "\ufeff" + _line("Your order shipped on {ship_date}.") + "\n", encoding="utf-8"
    )
    assert read_corpus(tmp_path)[0].text == "Your order shipped on {ship_date}."


def test_reader_rejects_missing_and_empty(tmp_path):
    with pytest.raises(CorpusError, match="not found"):
        read_corpus(tmp_path / "nope")
    with pytest.raises(CorpusError, match="no \\*.jsonl"):
        read_corpus(tmp_path)
    (tmp_path / "orders.jsonl").write_text(json.dumps({"text": "x"}) + "\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="missing field"):
        read_corpus(tmp_path)


def test_split_formula_is_stable_and_case_insensitive():
    assert split_of("Hello there.") == split_of("  hello THERE.  ")
    counts = {s: 0 for s in ("train", "dev", "test")}
    for i in range(2000):
        counts[split_of(f"sentence {i}")] += 1
    assert 0.65 < counts["train"] / 2000 < 0.75 and 0.10 < counts["dev"] / 2000 < 0.20


def test_second_annotation_is_a_corpus_sample_whose_resolved_labels_the_corpus_carries(corpus_examples):
    """corpora/agreement/: the kappa figures in corpora/README.md are computed from these rows."""
    rows = [json.loads(x) for x in (CORPUS / "agreement" / "second_annotation.jsonl").read_text("utf-8").splitlines()]
    labels = {e.text: list(e.labels) for e in corpus_examples}
    assert len(rows) >= 200 and len({r["text"] for r in rows}) == len(rows)
    for r in rows:
        assert r["text"] in labels, r["text"]
        assert r["resolved"] == labels[r["text"]], r["text"]
        for key in ("first", "second", "resolved"):
            assert r[key] == sorted(set(r[key])) and set(r[key]) <= set(LABELS), r
    for lab in LABELS:  # the sample is stratified: every label has positives in both annotations
        assert sum(lab in r["first"] for r in rows) >= 40 and sum(lab in r["second"] for r in rows) >= 40, lab


def _agreement_rows(tmp_path, rows):
    d = tmp_path / "agreement"
    d.mkdir()
    (d / "second_annotation.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return tmp_path


def test_agreement_is_cohens_kappa_per_label(tmp_path):
    rows = [
        {"text": "a", "first": ["causal"], "second": ["causal"]},
        {"text": "b", "first": ["causal"], "second": []},
        {"text": "c", "first": [], "second": []},
        {"text": "d", "first": [], "second": []},
    ]
    got = agreement(_agreement_rows(tmp_path, rows))
    # observed 3/4, chance 1/2 * 1/4 + 1/2 * 3/4 = 1/2: kappa (0.75 - 0.5) / (1 - 0.5)
    assert got["labels"]["causal"] == {"kappa": 0.5, "agree": 3, "first": 2, "second": 1}
    assert got["labels"]["temporal"]["kappa"] == 1.0 and got["n"] == 4 and got["identical"] == 3


def test_agreement_names_a_bad_row_and_is_none_without_a_file(tmp_path):
    assert agreement(tmp_path) is None
    root = _agreement_rows(tmp_path, [{"text": "a", "first": ["causal"]}])
    with pytest.raises(CorpusError, match=r"second_annotation.jsonl:1"):
        agreement(root)


def test_the_shipped_card_carries_the_corpus_agreement():
    card = json.loads((CORPUS.parent / "models" / "freetext.json").read_text(encoding="utf-8"))
    assert card["agreement"]["labels"] == agreement(CORPUS)["labels"]
    assert card["agreement"]["n"] >= 500

"""Out-of-domain evaluation: the shipped model and both baselines on a held-out challenge set.

The challenge set (``corpora/challenge/<domain>.jsonl``) follows GUIDELINES.md
but is written in styles the training corpus lacks (product reviews, science
findings, political claims, other support text). It is never trained on: the
training reader globs only ``corpora/*.jsonl``, and every line carries
``split: "test"``, so the hash formula for splits does not apply to it.

:func:`evaluate_challenge` scores the systems per label and per domain with
the same :func:`~guard.freetext.training.label_metrics` that ``guard train``
reports; :func:`model_errors` lists what the model gets wrong, with the
lexicon patterns that fired, for error analysis.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from guard.errors import CorpusError
from guard.freetext.corpus import LABELS, Example, label_matrix, read_corpus

#: Systems compared, in report order.
SYSTEMS = ("model", "keyword", "bag_of_words")


def read_challenge(path: str | Path) -> list[Example]:
    """The challenge set: validated like a corpus, except that every line must be in the test split."""
    examples = read_corpus(path, check_splits=False)
    stray = [e.source for e in examples if e.split != "test"]
    if stray:
        raise CorpusError(f"challenge set {path}: {len(stray)} line(s) not in the test split", location=stray[0])
    return examples


def baseline_predictors(corpus: str | Path) -> dict[str, Callable[[list[str]], np.ndarray]]:
    """The keyword rule and the bag-of-words model, fitted as ``guard train`` fits them (train+dev)."""
    from guard.freetext.baselines import KeywordBaseline, bag_of_words
    from guard.freetext.lexicon import default_lexicon

    examples = [e for e in read_corpus(corpus) if e.split in ("train", "dev")]
    bow = bag_of_words().fit([e.text for e in examples], label_matrix(examples))
    kw = KeywordBaseline(default_lexicon()["keywords"], LABELS)
    return {"keyword": kw.predict, "bag_of_words": bow.predict}


def model_predictor(clf: Any) -> Callable[[list[str]], np.ndarray]:
    """Decisions of a FreeTextClassifier as an (n, n_labels) indicator matrix in LABELS order."""

    def predict(texts: list[str]) -> np.ndarray:
        preds = clf.predict(texts, spans=False)
        return np.array([[lab in p.labels for lab in LABELS] for p in preds], dtype=np.int8).reshape(
            len(preds), len(LABELS)
        )

    return predict


def evaluate_challenge(
    examples: Sequence[Example], predictors: dict[str, Callable[[list[str]], np.ndarray]]
) -> dict[str, Any]:
    """Per system: metrics per label overall and per label within each domain (plus macro-F1)."""
    from guard.freetext.training import label_metrics

    exs = list(examples)
    texts = [e.text for e in exs]
    Y = label_matrix(exs)
    domains = sorted({e.domain for e in exs})
    out: dict[str, Any] = {
        "n": len(exs),
        "domains": {d: sum(e.domain == d for e in exs) for d in domains},
        "systems": {},
    }
    for name, predict in predictors.items():
        P = np.asarray(predict(texts))
        overall = label_metrics(Y, P)
        by_domain = {}
        for d in domains:
            idx = np.array([e.domain == d for e in exs])
            by_domain[d] = label_metrics(Y[idx], P[idx])
        out["systems"][name] = {
            "labels": overall,
            "macro_f1": round(float(np.mean([m["f1"] for m in overall.values()])), 4),
            "domains": by_domain,
            "domain_macro_f1": {d: round(float(np.mean([m["f1"] for m in by_domain[d].values()])), 4) for d in domains},
        }
    return out


def model_errors(examples: Sequence[Example], clf: Any) -> list[dict[str, Any]]:
    """Every false negative and false positive of the model, one row per (text, label).

    Each row names the lexicon patterns that fired in the text (``p=...``
    features), the label's score and the three features that pushed it most
    (up for a false positive, down for a false negative), which is what an
    error analysis sorts by.
    """
    exs = list(examples)
    texts = [e.text for e in exs]
    P = model_predictor(clf)(texts)
    probs = clf.predict_proba(texts)
    rows = []
    for i, e in enumerate(exs):
        for j, lab in enumerate(LABELS):
            gold, pred = lab in e.labels, bool(P[i, j])
            if gold == pred:
                continue
            feats = clf.explain(e.text)
            sign = 1.0 if pred else -1.0
            top = sorted(feats, key=lambda f: -sign * f[2][lab])[:3]
            rows.append(
                {
                    "kind": "FP" if pred else "FN",
                    "label": lab,
                    "text": e.text,
                    "domain": e.domain,
                    "gold": list(e.labels),
                    "score": round(float(probs[i, clf.labels.index(lab)]), 3),
                    "patterns": sorted({f[0][2:] for f in feats if f[0].startswith("p=")}),
                    "top_features": [(f[0], f[1], round(f[2][lab], 2)) for f in top],
                }
            )
    return rows


def report_tables(result: dict[str, Any]):
    """Two rich Tables: F1 (P/R) per label and system, and F1 per domain, label and system."""
    from rich.table import Table

    systems = [s for s in SYSTEMS if s in result["systems"]] + [s for s in result["systems"] if s not in SYSTEMS]
    by_label = Table(title=f"challenge set ({result['n']} sentences): precision / recall / F1 per label")
    by_label.add_column("label")
    by_label.add_column("support", justify="right")
    for s in systems:
        by_label.add_column(f"{s} P/R/F1", justify="right")
    first = result["systems"][systems[0]]["labels"]
    for lab in LABELS:
        cells = [
            f"{m['precision']:.2f}/{m['recall']:.2f}/{m['f1']:.3f}"
            for m in (result["systems"][s]["labels"][lab] for s in systems)
        ]
        by_label.add_row(lab, str(first[lab]["support"]), *cells)
    by_label.add_row("macro", "", *[f"{result['systems'][s]['macro_f1']:.3f}" for s in systems])

    by_domain = Table(title="challenge set: F1 per domain and label")
    by_domain.add_column("domain")
    by_domain.add_column("n", justify="right")
    by_domain.add_column("label")
    by_domain.add_column("support", justify="right")
    for s in systems:
        by_domain.add_column(f"{s} F1", justify="right")
    for d, n in result["domains"].items():
        for lab in (*LABELS, "macro"):
            if lab == "macro":
                cells = [f"{result['systems'][s]['domain_macro_f1'][d]:.3f}" for s in systems]
                by_domain.add_row(d, str(n), "macro", "", *cells, end_section=True)
            else:
                ms = [result["systems"][s]["domains"][d][lab] for s in systems]
                by_domain.add_row(d, str(n), lab, str(ms[0]["support"]), *[f"{m['f1']:.3f}" for m in ms])
    return by_label, by_domain

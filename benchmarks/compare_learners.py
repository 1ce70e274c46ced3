"""Model capacity, measured (issue 16, item 5): the linear model against stronger learners on the same features.

Every learner sees the same SpacyFeaturizer columns fitted on the train split, is fitted on train,
has its per-label thresholds tuned on dev (``guard.freetext.training.tune_thresholds``) and is scored
on test and on each challenge split; none is tuned on a challenge split. Learners:

* ``linear``: MultiLabelLogistic (liblinear, balanced), as shipped (number features non-negative for
  comparative and causal);
* ``hgb``: scikit-learn's HistGradientBoostingClassifier, one per label, on the ``--max-features``
  columns seen in the most training texts (at least ``--min-df``), dense, with early stopping;
* ``ensemble``: the mean of the two probabilities.

Also reports each learner's fitting time and scoring throughput on the test texts (featurize +
score, sentences/s), next to the shipped model's ``predict_proba``.

The first version fitted 300 boosting rounds over every column seen in three training texts
(about 20,000 dense columns, four labels) and did not finish on a shared two-core machine; the
column cap, the early stopping and the smaller trees bound it to a few minutes.

    nice -n 19 .venv/bin/python benchmarks/compare_learners.py [--json out.json] [--card models/freetext.json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", type=Path, default=ROOT / "corpora")
    ap.add_argument("--C", type=float, default=2.0)
    ap.add_argument("--min-df", type=int, default=3)
    ap.add_argument("--max-features", type=int, default=2000, help="columns given to the boosted trees")
    ap.add_argument("--max-iter", type=int, default=150, help="boosting rounds at most (early stopping)")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--card", type=Path, default=None, help="also record the table in this model card, under 'capacity'"
    )
    args = ap.parse_args()

    from sklearn.ensemble import HistGradientBoostingClassifier

    from guard.freetext import load
    from guard.freetext.corpus import LABELS, label_matrix, read_corpus
    from guard.freetext.estimators import MultiLabelLogistic, SpacyFeaturizer, number_columns
    from guard.freetext.evaluation import read_challenge
    from guard.freetext.training import NEUTRAL_NUMBERS, default_challenges, label_metrics, tune_thresholds

    examples = read_corpus(args.corpus)
    parts = {s: [e for e in examples if e.split == s] for s in ("train", "dev", "test")}
    sets = {s: ([e.text for e in exs], label_matrix(exs)) for s, exs in parts.items()}
    for name, path in default_challenges(args.corpus).items():
        exs = read_challenge(path)
        sets[name] = ([e.text for e in exs], label_matrix(exs))

    t_start = time.perf_counter()
    feats = SpacyFeaturizer(min_df=2).fit(sets["train"][0])
    X = {s: feats.transform(t) for s, (t, _) in sets.items()}
    names = feats.get_feature_names_out()
    linear = MultiLabelLogistic(C=args.C, neutral=tuple(LABELS.index(lab) for lab in NEUTRAL_NUMBERS))
    linear.fit(X["train"], sets["train"][1], neutral_columns=number_columns(names))
    fit_seconds = {"linear": round(time.perf_counter() - t_start, 1)}
    df = np.asarray((X["train"] > 0).sum(axis=0)).ravel()
    frequent = np.flatnonzero(df >= args.min_df)
    dense_cols = np.sort(frequent[np.argsort(-df[frequent], kind="stable")[: args.max_features]])
    t0 = time.perf_counter()
    dense_train = X["train"][:, dense_cols].toarray().astype(np.float32)
    hgbs = []
    for j in range(len(LABELS)):
        m = HistGradientBoostingClassifier(
            max_iter=args.max_iter,
            learning_rate=0.1,
            max_leaf_nodes=15,
            early_stopping=True,
            validation_fraction=0.1,
            n_iter_no_change=10,
            class_weight="balanced",
            random_state=0,
        )
        m.fit(dense_train, sets["train"][1][:, j])
        hgbs.append(m)
    fit_seconds["hgb"] = round(time.perf_counter() - t0, 1)
    fit_seconds["ensemble"] = round(fit_seconds["linear"] + fit_seconds["hgb"], 1)

    def hgb_proba(x):
        d = x[:, dense_cols].toarray().astype(np.float32)
        return np.column_stack([m.predict_proba(d)[:, 1] for m in hgbs])

    probas = {
        "linear": lambda x: linear.predict_proba(x),
        "hgb": hgb_proba,
        "ensemble": lambda x: (linear.predict_proba(x) + hgb_proba(x)) / 2,
    }
    result: dict[str, dict] = {}
    test_texts = sets["test"][0]
    for learner, proba in probas.items():
        thresholds = tune_thresholds(sets["dev"][1], proba(X["dev"]))
        scores = {}
        for s in sets:
            if s in ("train", "dev"):
                continue
            pred = (proba(X[s]) >= np.asarray(thresholds)).astype(int)
            m = label_metrics(sets[s][1], pred)
            scores[s] = {lab: m[lab]["f1"] for lab in LABELS}
            scores[s]["macro"] = round(float(np.mean([m[lab]["f1"] for lab in LABELS])), 4)
        t0 = time.perf_counter()
        proba(feats.transform(test_texts))
        rate = len(test_texts) / (time.perf_counter() - t0)
        result[learner] = {
            "thresholds": thresholds,
            "f1": scores,
            "sentences_per_s": round(rate),
            "fit_seconds": fit_seconds[learner],
        }
    clf = load()
    clf.predict_proba(test_texts)
    t0 = time.perf_counter()
    clf.predict_proba(test_texts * 10)
    shipped_rate = 10 * len(test_texts) / (time.perf_counter() - t0)

    splits = [s for s in sets if s not in ("train", "dev")]
    print(f"features: {len(names)} ({len(dense_cols)} dense for hgb); labels {', '.join(LABELS)}")
    for learner, r in result.items():
        print(
            f"\n{learner}  (fit {r['fit_seconds']} s; scoring {r['sentences_per_s']:,}/s through the sklearn pipeline)"
        )
        for s in splits:
            row = "  ".join(f"{lab[:4]} {r['f1'][s][lab]:.3f}" for lab in LABELS)
            print(f"  {s:10s} {row}  macro {r['f1'][s]['macro']:.3f}")
    print(f"\nshipped model predict_proba: {shipped_rate:,.0f} sentences/s")
    record = {
        "protocol": "same features (SpacyFeaturizer on train); fit on train; thresholds tuned on dev; scored on test "
        "and the challenge splits (never tuned on)",
        "learners": result,
        "hgb": {"columns": int(len(dense_cols)), "max_iter": args.max_iter, "rounds": [int(m.n_iter_) for m in hgbs]},
        "shipped_predict_proba_per_s": round(shipped_rate),
    }
    if args.json:
        args.json.write_text(json.dumps(record, indent=1))
    if args.card:
        card = json.loads(args.card.read_text(encoding="utf-8"))
        card["capacity"] = record
        args.card.write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

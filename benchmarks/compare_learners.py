"""Model capacity, measured (issue 16, item 5): the linear model against stronger learners on the same corpus.

Every learner is fitted on the train split, has its per-label thresholds tuned on dev
(``guard.freetext.training.tune_thresholds``) and is scored on test and on each challenge split by
the same code (:func:`score`); none is tuned on a challenge split. Learners:

* ``linear``: MultiLabelLogistic (liblinear, balanced) over the SpacyFeaturizer columns fitted on
  train, as shipped (number features non-negative for comparative and causal);
* ``hgb``: scikit-learn's HistGradientBoostingClassifier, one per label, on the ``--max-features``
  columns seen in the most training texts (at least ``--min-df``), dense, with early stopping;
* ``ensemble``: the mean of the linear and hgb probabilities;
* ``textcat``: spaCy's own ``textcat_multilabel`` trained from scratch (no pretrained weights or
  vectors): ``spacy.TextCatEnsemble.v2``, a bag of words and bigrams (``spacy.TextCatBOW.v3``)
  beside a CNN (``spacy.Tok2Vec.v2`` over ``spacy.MultiHashEmbed.v2`` hashed NORM, PREFIX,
  SUFFIX and SHAPE embeddings, ``spacy.MaxoutWindowEncoder.v2``), on a blank English pipeline;
* ``textcat_bow``: the bag-of-words part alone (``spacy.TextCatBOW.v3``), the cheap variant;
* ``linear+textcat``: the mean of the linear and textcat probabilities.

The spaCy learners read what the shipped classifier reads: ``guard.freetext.featurize.prepare``
(slots masked to one private-use character, then the text normalised), tokenized by spaCy's blank
English tokenizer (space tokens dropped, as the featurizer drops them). They train with a fixed
seed (``spacy.util.fix_random_seed``), batches growing from 4 to 32 (``spacy.util.compounding``),
at most ``--textcat-epochs`` epochs, and keep the epoch with the best dev macro F1 (thresholds tuned
on dev), stopping after ``--textcat-patience`` epochs without a gain.

Also reports each learner's fitting time and scoring throughput on the test texts (featurize +
score through scikit-learn, or prepare + spaCy's predict; sentences/s), in interleaved rounds
(``_common.rounds``, the median kept) with the shipped model's ``predict_proba`` and ``predict``
(labels, scores and spans), so that every figure in a run shares the machine's load; each learner's
speed is also given as a ratio to the shipped ``predict`` taken within each round. The test texts
were scored once before, so every contender's caches are warm.

The first version fitted 300 boosting rounds over every column seen in three training texts
(about 20,000 dense columns, four labels) and did not finish on a shared two-core machine; the
column cap, the early stopping and the smaller trees bound it to about 15 minutes.

``--learners`` runs a subset (the ensembles fit what they average). ``--card`` merges the run into
the model card's ``capacity`` section: learners that were not rerun keep their entries; each entry
records the corpus (sha256, sentences) it was measured on.

    nice -n 19 .venv/bin/python benchmarks/compare_learners.py [--learners textcat,linear+textcat]
        [--json out.json] [--card models/freetext.json]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

#: Every candidate, in table order.
LEARNERS = ("linear", "hgb", "ensemble", "textcat", "textcat_bow", "linear+textcat")
#: What each candidate is the mean of (a candidate not listed stands alone).
MEANS = {"ensemble": ("linear", "hgb"), "linear+textcat": ("linear", "textcat")}
#: The spaCy architecture behind each textcat candidate.
TEXTCAT_ARCH = {"textcat": "ensemble", "textcat_bow": "bow"}

PROTOCOL = (
    "fit on train; thresholds tuned on dev; scored on test and the challenge splits (never tuned on). "
    "linear and hgb: SpacyFeaturizer columns fitted on train; textcat: spaCy textcat_multilabel from "
    "scratch on the prepared text (slots masked, normalised), epoch chosen on dev macro F1"
)


def parse_learners(spec: str) -> list[str]:
    """The candidates named in a comma-separated list, in table order ('all' for every one)."""
    names = [n.strip() for n in spec.split(",") if n.strip()]
    if names == ["all"]:
        return list(LEARNERS)
    unknown = sorted(set(names) - set(LEARNERS))
    if unknown or not names:
        raise SystemExit(f"compare_learners: unknown learner(s) {unknown or spec!r}; known: {', '.join(LEARNERS)}")
    return [n for n in LEARNERS if n in names]


def load_sets(corpus: Path) -> dict[str, tuple[list[str], np.ndarray]]:
    """Texts and label matrices of train, dev, test and every challenge split beside the corpus."""
    from guard.freetext.corpus import label_matrix, read_corpus
    from guard.freetext.evaluation import read_challenge
    from guard.freetext.training import default_challenges

    examples = read_corpus(corpus)
    sets = {}
    for s in ("train", "dev", "test"):
        exs = [e for e in examples if e.split == s]
        sets[s] = ([e.text for e in exs], label_matrix(exs))
    for name, path in default_challenges(corpus).items():
        exs = read_challenge(path)
        sets[name] = ([e.text for e in exs], label_matrix(exs))
    return sets


class TextcatLearner:
    """spaCy's ``textcat_multilabel`` trained from scratch on the text guard's classifier reads.

    ``arch`` is ``ensemble`` (bag of words + CNN), ``bow`` or ``cnn``. Nothing is downloaded: the
    pipeline is ``spacy.blank("en")`` and every embedding is hashed and learnt here.
    """

    def __init__(
        self,
        arch: str = "ensemble",
        *,
        width: int = 64,
        ngram_size: int = 2,
        dropout: float = 0.2,
        max_epochs: int = 10,
        patience: int = 2,
        seed: int = 0,
    ) -> None:
        if arch not in ("ensemble", "bow", "cnn"):
            raise ValueError(f"unknown textcat architecture {arch!r}; known: ensemble, bow, cnn")
        self.arch, self.width, self.ngram_size = arch, width, ngram_size
        self.dropout, self.max_epochs, self.patience, self.seed = dropout, max_epochs, patience, seed

    def model_config(self) -> dict[str, Any]:
        """The ``model`` block of the pipe's config (spaCy's registered architectures)."""
        bow = {
            "@architectures": "spacy.TextCatBOW.v3",
            "exclusive_classes": False,
            "ngram_size": self.ngram_size,
            "no_output_layer": False,
            "length": 2**18,
        }
        if self.arch == "bow":
            return bow
        tok2vec = {
            "@architectures": "spacy.Tok2Vec.v2",
            "embed": {
                "@architectures": "spacy.MultiHashEmbed.v2",
                "width": self.width,
                "attrs": ["NORM", "PREFIX", "SUFFIX", "SHAPE"],
                "rows": [5000, 1000, 2500, 500],
                "include_static_vectors": False,
            },
            "encode": {
                "@architectures": "spacy.MaxoutWindowEncoder.v2",
                "width": self.width,
                "window_size": 1,
                "maxout_pieces": 3,
                "depth": 2,
            },
        }
        if self.arch == "cnn":
            return {"@architectures": "spacy.TextCatCNN.v2", "exclusive_classes": False, "tok2vec": tok2vec}
        return {"@architectures": "spacy.TextCatEnsemble.v2", "tok2vec": tok2vec, "linear_model": bow}

    def docs(self, texts: Sequence[str]) -> list:
        """spaCy Docs of what the classifier reads: slots masked, then normalised (``featurize.prepare``).

        Masking pads a slot with spaces to keep offsets; the featurizer drops space tokens, so runs of
        whitespace are closed up here (spaCy tokenizes each whitespace-separated chunk on its own, so
        the other tokens are the same).
        """
        from guard.freetext.featurize import prepare

        make = self.nlp_.make_doc
        return [make(" ".join(prepare(t).text.split())) for t in texts]

    def fit(self, texts: Sequence[str], Y: np.ndarray, dev_texts: Sequence[str], dev_Y: np.ndarray) -> TextcatLearner:
        import spacy
        from spacy.training import Example
        from spacy.util import compounding, fix_random_seed, minibatch

        from guard.freetext.corpus import LABELS
        from guard.freetext.training import label_metrics, tune_thresholds

        fix_random_seed(self.seed)
        self.nlp_ = spacy.blank("en")
        self.pipe_ = self.nlp_.add_pipe("textcat_multilabel", config={"model": self.model_config()})
        for lab in LABELS:
            self.pipe_.add_label(lab)
        train = [
            Example.from_dict(doc, {"cats": {lab: float(y[j]) for j, lab in enumerate(LABELS)}})
            for doc, y in zip(self.docs(texts), np.asarray(Y))
        ]
        dev_docs = self.docs(dev_texts)
        optimizer = self.nlp_.initialize(lambda: train)
        rng = random.Random(self.seed)
        best_f1, best_bytes, since = -1.0, b"", 0
        self.history_: list[dict[str, float]] = []
        for epoch in range(1, self.max_epochs + 1):
            t0 = time.perf_counter()
            rng.shuffle(train)
            losses: dict[str, float] = {}
            for batch in minibatch(train, size=compounding(4.0, 32.0, 1.001)):
                self.nlp_.update(batch, drop=self.dropout, sgd=optimizer, losses=losses)
            probs = self._proba_docs(dev_docs)
            thresholds = tune_thresholds(dev_Y, probs)
            m = label_metrics(dev_Y, (probs >= np.asarray(thresholds)).astype(int))
            f1 = float(np.mean([m[lab]["f1"] for lab in LABELS]))
            p = np.clip(probs, 1e-7, 1 - 1e-7)
            dev_loss = float(-np.mean(dev_Y * np.log(p) + (1 - dev_Y) * np.log(1 - p)))
            self.history_.append(
                {
                    "epoch": epoch,
                    "train_loss": round(losses.get("textcat_multilabel", 0.0), 3),
                    "dev_loss": round(dev_loss, 4),
                    "dev_macro_f1": round(f1, 4),
                    "seconds": round(time.perf_counter() - t0, 1),
                }
            )
            if f1 > best_f1:
                best_f1, best_bytes, since = f1, self.pipe_.model.to_bytes(), 0
                self.best_epoch_ = epoch
            else:
                since += 1
                if since >= self.patience:
                    break
        self.pipe_.model.from_bytes(best_bytes)
        return self

    def _proba_docs(self, docs: list) -> np.ndarray:
        from guard.freetext.corpus import LABELS

        order = [list(self.pipe_.labels).index(lab) for lab in LABELS]
        out = [np.asarray(self.pipe_.predict(docs[i : i + 1024])) for i in range(0, len(docs), 1024)]
        return np.vstack(out)[:, order] if out else np.zeros((0, len(LABELS)))

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """Per-label probabilities, shape (n, len(LABELS)), columns in ``LABELS`` order."""
        return self._proba_docs(self.docs(texts))

    def info(self) -> dict[str, Any]:
        return {
            "arch": self.model_config()["@architectures"],
            "width": self.width if self.arch != "bow" else None,
            "ngram_size": self.ngram_size,
            "dropout": self.dropout,
            "seed": self.seed,
            "max_epochs": self.max_epochs,
            "best_epoch": self.best_epoch_,
            "epochs": self.history_,
        }


def score(
    proba: dict[str, np.ndarray], sets: dict[str, tuple[list[str], np.ndarray]]
) -> tuple[list[float], dict[str, dict[str, float]]]:
    """Thresholds tuned on dev, then F1 per label and macro on test and every challenge split."""
    from guard.freetext.corpus import LABELS
    from guard.freetext.training import label_metrics, tune_thresholds

    thresholds = tune_thresholds(sets["dev"][1], proba["dev"])
    scores = {}
    for s in sets:
        if s in ("train", "dev"):
            continue
        pred = (proba[s] >= np.asarray(thresholds)).astype(int)
        m = label_metrics(sets[s][1], pred)
        scores[s] = {lab: m[lab]["f1"] for lab in LABELS}
        scores[s]["macro"] = round(float(np.mean([m[lab]["f1"] for lab in LABELS])), 4)
    return thresholds, scores


def speeds(
    scorers: dict[str, Callable[[list[str]], object]], texts: list[str], seconds: float, n_rounds: int
) -> dict[str, dict[str, float]]:
    """Sentences/s of each scorer over ``texts`` (median of interleaved rounds, lowest, highest), and its
    ratio to the ``shipped predict`` contender within each round (median) when that one is there."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    from _common import paired_ratio, rounds

    got = rounds({name: (lambda fn=fn: fn(texts)) for name, fn in scorers.items()}, seconds, n_rounds)
    out = {}
    for name, calls in got.items():
        per_s = sorted(c * len(texts) for c in calls)
        out[name] = {"median": float(np.median(per_s)), "low": per_s[0], "high": per_s[-1]}
        if "shipped predict" in got:
            out[name]["vs_shipped_predict"] = paired_ratio(calls, got["shipped predict"])[0]
    return out


def merge_capacity(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """The card's ``capacity`` section with this run merged in.

    Learners measured now replace their entries; the others keep theirs. An entry written before
    entries carried their corpus gets the old section's sentence count (``corpus_n``), its hash
    unknown.
    """
    out = dict(old or {})
    old_n = out.pop("corpus_n", None)
    learners = {}
    for name, entry in dict(out.get("learners", {})).items():
        if "corpus" not in entry and old_n is not None:
            entry = {**entry, "corpus": {"sha256": None, "n": old_n}}
        learners[name] = entry
    learners.update(new.get("learners", {}))
    out.update({k: v for k, v in new.items() if k != "learners"})
    out["learners"] = {k: learners[k] for k in sorted(learners, key=lambda k: (LEARNERS + (k,)).index(k))}
    return out


def _git_commit() -> str | None:
    """The checkout's commit, with ``-dirty`` when the code or corpus differ from it (None outside git)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "guard", "benchmarks", "corpora"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
    except OSError:
        return None
    commit = head.stdout.strip()
    return (commit + ("-dirty" if changed.stdout.strip() else "")) or None


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", type=Path, default=ROOT / "corpora")
    ap.add_argument("--learners", default="all", help=f"comma-separated subset of {', '.join(LEARNERS)}")
    ap.add_argument("--C", type=float, default=2.0)
    ap.add_argument("--min-df", type=int, default=3)
    ap.add_argument("--max-features", type=int, default=2000, help="columns given to the boosted trees")
    ap.add_argument("--max-iter", type=int, default=150, help="boosting rounds at most (early stopping)")
    ap.add_argument("--textcat-epochs", type=int, default=10, help="textcat epochs at most (early stopping)")
    ap.add_argument("--textcat-patience", type=int, default=2, help="epochs without a dev gain before stopping")
    ap.add_argument("--textcat-width", type=int, default=64, help="CNN embedding and encoder width")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bench-seconds", type=float, default=5.0, help="scoring time per contender, all rounds")
    ap.add_argument("--bench-rounds", type=int, default=5, help="interleaved rounds of the scoring speeds")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--card", type=Path, default=None, help="also merge the table into this model card, under 'capacity'"
    )
    args = ap.parse_args(argv)
    wanted = parse_learners(args.learners)
    fitted = [n for n in LEARNERS if n in wanted or any(n in MEANS.get(w, ()) for w in wanted)]

    from guard.freetext import load
    from guard.freetext.corpus import LABELS, corpus_sha256

    sets = load_sets(args.corpus)
    corpus = {"sha256": corpus_sha256(args.corpus), "n": sum(len(sets[s][0]) for s in ("train", "dev", "test"))}
    texts = {s: t for s, (t, _) in sets.items()}
    test_texts = texts["test"]
    proba: dict[str, dict[str, np.ndarray]] = {}
    scorers: dict[str, Callable[[list[str]], np.ndarray]] = {}
    fit_seconds: dict[str, float] = {}
    extra: dict[str, Any] = {}

    if "linear" in fitted or "hgb" in fitted:
        from guard.freetext.estimators import MultiLabelLogistic, SpacyFeaturizer, number_columns
        from guard.freetext.training import NEUTRAL_NUMBERS

        t_start = time.perf_counter()
        feats = SpacyFeaturizer(min_df=2).fit(texts["train"])
        X = {s: feats.transform(t) for s, t in texts.items()}
        names = feats.get_feature_names_out()
        feature_seconds = time.perf_counter() - t_start
        extra["features"] = int(len(names))
    if "linear" in fitted:
        t0 = time.perf_counter()
        linear = MultiLabelLogistic(C=args.C, neutral=tuple(LABELS.index(lab) for lab in NEUTRAL_NUMBERS))
        linear.fit(X["train"], sets["train"][1], neutral_columns=number_columns(names))
        fit_seconds["linear"] = round(feature_seconds + time.perf_counter() - t0, 1)
        proba["linear"] = {s: linear.predict_proba(x) for s, x in X.items()}
        scorers["linear"] = lambda t: linear.predict_proba(feats.transform(t))
    if "hgb" in fitted:
        from sklearn.ensemble import HistGradientBoostingClassifier

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
        fit_seconds["hgb"] = round(feature_seconds + time.perf_counter() - t0, 1)

        def hgb_proba(x):
            d = x[:, dense_cols].toarray().astype(np.float32)
            return np.column_stack([m.predict_proba(d)[:, 1] for m in hgbs])

        proba["hgb"] = {s: hgb_proba(x) for s, x in X.items() if s != "train"}
        scorers["hgb"] = lambda t: hgb_proba(feats.transform(t))
        extra["hgb"] = {
            "columns": int(len(dense_cols)),
            "max_iter": args.max_iter,
            "rounds": [int(m.n_iter_) for m in hgbs],
        }
    textcats: dict[str, TextcatLearner] = {}
    for name in ("textcat", "textcat_bow"):
        if name not in fitted:
            continue
        t0 = time.perf_counter()
        tc = TextcatLearner(
            TEXTCAT_ARCH[name],
            width=args.textcat_width,
            max_epochs=args.textcat_epochs,
            patience=args.textcat_patience,
            seed=args.seed,
        ).fit(texts["train"], sets["train"][1], texts["dev"], sets["dev"][1])
        fit_seconds[name] = round(time.perf_counter() - t0, 1)
        textcats[name] = tc
        proba[name] = {s: tc.predict_proba(t) for s, t in texts.items() if s != "train"}
        scorers[name] = tc.predict_proba
        extra[name] = tc.info()
    if "ensemble" in fitted:
        scorers["ensemble"] = lambda t: (scorers["linear"](t) + hgb_proba(feats.transform(t))) / 2
    if "linear+textcat" in fitted:
        scorers["linear+textcat"] = lambda t: (scorers["linear"](t) + textcats["textcat"].predict_proba(t)) / 2
    for name, parts in MEANS.items():
        if name in fitted:
            proba[name] = {s: np.mean([proba[p][s] for p in parts], axis=0) for s in proba[parts[0]] if s != "train"}
            fit_seconds[name] = round(sum(fit_seconds[p] for p in parts), 1)

    clf = load()
    clf.predict(test_texts)
    contenders = {**{name: scorers[name] for name in wanted}, "shipped predict_proba": clf.predict_proba}
    contenders["shipped predict"] = clf.predict
    speed = speeds(contenders, test_texts, args.bench_seconds, args.bench_rounds)
    commit = _git_commit()
    result: dict[str, dict] = {}
    for learner in wanted:
        thresholds, scores = score(proba[learner], sets)
        result[learner] = {
            "thresholds": thresholds,
            "f1": scores,
            "sentences_per_s": round(speed[learner]["median"]),
            "sentences_per_s_range": [round(speed[learner]["low"]), round(speed[learner]["high"])],
            "vs_shipped_predict": round(speed[learner]["vs_shipped_predict"], 3),
            "fit_seconds": fit_seconds[learner],
            "corpus": corpus,
            "commit": commit,
        }
    shipped_proba = speed["shipped predict_proba"]["median"]
    shipped_predict = speed["shipped predict"]["median"]

    splits = [s for s in sets if s not in ("train", "dev")]
    print(f"corpus {corpus['n']} sentences, sha256 {corpus['sha256'][:12]}; labels {', '.join(LABELS)}")
    for learner, r in result.items():
        print(
            f"\n{learner}  (fit {r['fit_seconds']} s; scoring {r['sentences_per_s']:,}/s, "
            f"{r['vs_shipped_predict']:.3f} x the shipped predict)"
        )
        for s in splits:
            row = "  ".join(f"{lab[:4]} {r['f1'][s][lab]:.3f}" for lab in LABELS)
            print(f"  {s:10s} {row}  macro {r['f1'][s]['macro']:.3f}")
    for name in textcats:
        print(f"\n{name} epochs: {extra[name]['epochs']} (kept {extra[name]['best_epoch']})")
    print(
        f"\nshipped model predict_proba: {shipped_proba:,.0f} sentences/s; predict with spans {shipped_predict:,.0f}/s"
    )
    record = {
        "protocol": PROTOCOL,
        "learners": result,
        **{k: v for k, v in extra.items() if k != "features"},
        "shipped_predict_proba_per_s": round(shipped_proba),
        "shipped_predict_per_s": round(shipped_predict),
    }
    if args.json:
        args.json.write_text(json.dumps(record, indent=1))
    if args.card:
        card = json.loads(args.card.read_text(encoding="utf-8"))
        card["capacity"] = merge_capacity(card.get("capacity"), record)
        args.card.write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")
    return record


if __name__ == "__main__":
    main()

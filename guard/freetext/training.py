"""Training: cross-validated model selection, dev-tuned thresholds, test metrics, baselines.

Protocol (recorded in the model card):
1. stratified k-fold cross-validation on the train split picks the
   hyper-parameters (folds run in parallel with joblib);
2. the chosen pipeline is fitted on train; per-label thresholds are tuned on
   dev, where dev metrics are measured;
3. the pipeline is refitted on train+dev (unless ``refit_on_dev`` is false) and
   measured on test with the dev thresholds;
4. both baselines go through the same protocol and are reported beside it;
5. the final model is scored on every challenge split found beside the corpus
   (``challenge/``, ``challenge/fresh/``, ``challenge/blind/``, ``blind2/`` to ``blind4/``), never trained or tuned
   on.
"""

from __future__ import annotations

import itertools
import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from guard.errors import CorpusError
from guard.freetext.corpus import (
    GUARD_DOMAINS,
    LABELS,
    Example,
    agreement,
    corpus_sha256,
    label_matrix,
    read_corpus,
    summary,
)

#: Hyper-parameter grid searched by cross-validation.
DEFAULT_GRID: dict[str, Sequence[Any]] = {"C": (0.5, 1.0, 2.0, 4.0), "min_df": (1, 2)}


@dataclass
class TrainResult:
    classifier: Any  # FreeTextClassifier
    card: dict[str, Any]


#: Labels whose weights ignore number features (see ``guard.freetext.estimators.NUMBER_FEATURES``).
NEUTRAL_NUMBERS = ("causal", "comparative")


def pipeline(C: float = 1.0, min_df: int = 2, groups: tuple[str, ...] | None = None):
    from guard.freetext.estimators import FeaturePipeline, MultiLabelLogistic, SpacyFeaturizer

    neutral = tuple(LABELS.index(lab) for lab in NEUTRAL_NUMBERS)
    return FeaturePipeline(
        [
            ("features", SpacyFeaturizer(groups=groups, min_df=min_df)),
            ("model", MultiLabelLogistic(C=C, neutral=neutral)),
        ]
    )


def label_metrics(Y: np.ndarray, P: np.ndarray, labels: Sequence[str] = LABELS) -> dict[str, dict[str, float]]:
    """Precision, recall, F1 and support per label (binary, positive class)."""
    out = {}
    for j, lab in enumerate(labels):
        y, p = Y[:, j].astype(bool), P[:, j].astype(bool)
        tp, fp, fn = int((y & p).sum()), int((~y & p).sum()), int((y & ~p).sum())
        prec = tp / (tp + fp) if tp + fp else 0.0
        rec = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        out[lab] = {
            "precision": round(prec, 4),
            "recall": round(rec, 4),
            "f1": round(f1, 4),
            "support": int(y.sum()),
            "tp": tp,
            "fp": fp,
            "fn": fn,
        }
    return out


def tune_thresholds(Y: np.ndarray, probs: np.ndarray, smooth: int = 5) -> list[float]:
    """Per label, the threshold maximising F1 averaged over +-``smooth`` grid steps.

    A dev split has a few hundred positives; the raw F1 curve is jagged, and
    its highest spike rarely carries over to new text. The smoothed curve picks
    the middle of a broad good range instead.
    """
    grid = np.round(np.arange(0.10, 0.91, 0.01), 2)
    out = []
    for j in range(Y.shape[1]):
        y = Y[:, j].astype(bool)
        scores = []
        for t in grid:
            p = probs[:, j] >= t
            tp = (y & p).sum()
            denom = p.sum() + y.sum()
            scores.append(2 * tp / denom if denom else 0.0)
        f1s = np.asarray(scores)
        if smooth:
            padded = np.pad(f1s, smooth, mode="edge")
            f1s = np.convolve(padded, np.ones(2 * smooth + 1) / (2 * smooth + 1), mode="valid")
        best = np.flatnonzero(f1s >= f1s.max() - 1e-9)
        out.append(float(grid[best[len(best) // 2]]))
    return out


def _strata(Y: np.ndarray, folds: int) -> list[str]:
    """Label-set strata for StratifiedKFold; sets too rare to split join the most common set."""
    keys = ["".join(map(str, row)) for row in Y]
    counts = {k: keys.count(k) for k in set(keys)}
    rare = sum(n for n in counts.values() if n < folds)
    fallback = "rare" if rare >= folds else max(counts, key=lambda k: (counts[k], k))
    return [k if counts[k] >= folds else fallback for k in keys]


def _fold_score(
    params: dict[str, Any], texts: list[str], Y: np.ndarray, tr: np.ndarray, te: np.ndarray
) -> tuple[dict, float]:
    pipe = pipeline(**params)
    pipe.fit([texts[i] for i in tr], Y[tr])
    P = pipe.predict([texts[i] for i in te])
    m = label_metrics(Y[te], P)
    return params, float(np.mean([v["f1"] for v in m.values()]))


def cross_validate(
    texts: list[str],
    Y: np.ndarray,
    *,
    grid: dict[str, Sequence[Any]] | None = None,
    folds: int = 5,
    jobs: int = 1,
    seed: int = 0,
    on_step: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Stratified k-fold CV of every grid point; returns the best params and all mean macro-F1 scores."""
    from joblib import Parallel, delayed
    from sklearn.model_selection import StratifiedKFold

    grid = grid or DEFAULT_GRID
    names = sorted(grid)
    points = [dict(zip(names, vals)) for vals in itertools.product(*(grid[n] for n in names))]
    skf = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    splits = list(skf.split(np.zeros(len(texts)), _strata(Y, folds)))
    tasks = [(p, tr, te) for p in points for tr, te in splits]
    scores: dict[str, list[float]] = {json.dumps(p, sort_keys=True): [] for p in points}
    runs = Parallel(n_jobs=jobs, return_as="generator_unordered")(
        delayed(_fold_score)(p, texts, Y, tr, te) for p, tr, te in tasks
    )
    for done, (params, score) in enumerate(runs, 1):
        scores[json.dumps(params, sort_keys=True)].append(score)
        if on_step:
            on_step(done, len(tasks))
    means = {k: round(float(np.mean(v)), 4) for k, v in scores.items()}
    best = max(means, key=lambda k: (means[k], k))
    return {"folds": folds, "best": json.loads(best), "mean_macro_f1": means}


def train(
    corpus: str | Path,
    *,
    jobs: int = 1,
    folds: int = 5,
    grid: dict[str, Sequence[Any]] | None = None,
    sample: int | None = None,
    seed: int = 0,
    refit_on_dev: bool = True,
    on_step: Callable[[int, int], None] | None = None,
    challenges: dict[str, Path] | None = None,
) -> TrainResult:
    """Train, evaluate and compare with the baselines; nothing is written (see :func:`write`).

    ``challenges`` maps a name to a challenge directory scored after training (default: those
    found under ``<corpus>/challenge``)."""
    from guard.freetext.baselines import KeywordBaseline, bag_of_words
    from guard.freetext.lexicon import default_lexicon
    from guard.freetext.model import FreeTextClassifier

    started = time.perf_counter()
    examples = read_corpus(corpus)
    if sample:
        examples = _stratified_sample(examples, sample, seed)
    parts = {s: [e for e in examples if e.split == s] for s in ("train", "dev", "test")}
    for s, exs in parts.items():
        if not exs:
            raise CorpusError(f"corpus {corpus} has no examples in the {s} split", location=str(corpus))
    X = {s: [e.text for e in exs] for s, exs in parts.items()}
    Y = {s: label_matrix(exs) for s, exs in parts.items()}

    cv = cross_validate(X["train"], Y["train"], grid=grid, folds=folds, jobs=jobs, seed=seed, on_step=on_step)
    best = cv["best"]

    pipe = pipeline(**best).fit(X["train"], Y["train"])
    dev_probs = pipe.predict_proba(X["dev"])
    thresholds = tune_thresholds(Y["dev"], dev_probs)
    dev_pred = (dev_probs >= np.asarray(thresholds)).astype(int)
    metrics = {"dev": label_metrics(Y["dev"], dev_pred)}
    fit_on = ["train"]
    if refit_on_dev:
        pipe = pipeline(**best).fit(X["train"] + X["dev"], np.vstack([Y["train"], Y["dev"]]))
        fit_on = ["train", "dev"]
    test_pred = (pipe.predict_proba(X["test"]) >= np.asarray(thresholds)).astype(int)
    metrics["test"] = label_metrics(Y["test"], test_pred)
    in_guard = np.array([e.domain in GUARD_DOMAINS for e in parts["test"]], dtype=bool)
    test_by_scope = {
        "guard_domains": label_metrics(Y["test"][in_guard], test_pred[in_guard]),
        "beyond": label_metrics(Y["test"][~in_guard], test_pred[~in_guard]),
    }

    kw = KeywordBaseline(default_lexicon()["keywords"], LABELS)
    bow = bag_of_words().fit(X["train"], Y["train"])
    baselines = {
        "keyword": {s: label_metrics(Y[s], kw.predict(X[s])) for s in ("dev", "test")},
        "bag_of_words": {"dev": label_metrics(Y["dev"], bow.predict(X["dev"]))},
    }
    if refit_on_dev:
        bow = bag_of_words().fit(X["train"] + X["dev"], np.vstack([Y["train"], Y["dev"]]))
    baselines["bag_of_words"]["test"] = label_metrics(Y["test"], bow.predict(X["test"]))

    challenge_scores = {}
    for name, directory in (default_challenges(corpus) if challenges is None else challenges).items():
        from guard.freetext.evaluation import read_challenge

        exs = read_challenge(directory)
        pred = (pipe.predict_proba([e.text for e in exs]) >= np.asarray(thresholds)).astype(int)
        m = label_metrics(label_matrix(exs), pred)
        challenge_scores[name] = {
            "path": str(directory),
            "n": len(exs),
            "labels": m,
            "macro_f1": round(float(np.mean([v["f1"] for v in m.values()])), 4),
        }

    featurizer, model = pipe.named_steps["features"], pipe.named_steps["model"]
    clf = FreeTextClassifier.from_estimators(featurizer, model, LABELS, thresholds)
    beats = {
        s: {lab: all(metrics[s][lab]["f1"] > baselines[b][s][lab]["f1"] for b in baselines) for lab in LABELS}
        for s in ("dev", "test")
    }
    from guard import __version__

    card = {
        "created": datetime.now(UTC).replace(microsecond=0).isoformat(),
        "guard_version": __version__,
        "corpus": {
            "path": str(corpus),
            "sha256": corpus_sha256(corpus),
            "sample": sample,
            "summary": summary(examples),
        },
        "lexicon_sha256": _lexicon_sha(featurizer.lexicon_),
        "training": {
            "protocol": "CV on train selects hyper-parameters; thresholds tuned on dev; refit on train+dev; "
            "measured on test",
            "estimator": "SpacyFeaturizer + MultiLabelLogistic (liblinear, class_weight=balanced)",
            "params": best,
            "fit_on": fit_on,
            "cv": cv,
            "seconds": round(time.perf_counter() - started, 1),
        },
        "metrics": metrics,
        "test_by_scope": test_by_scope,
        "challenge": challenge_scores,
        "baselines": baselines,
        "beats_baselines": beats,
    }
    agreed = agreement(corpus)
    if agreed is not None:
        card["agreement"] = agreed
    return TrainResult(clf, card)


def default_challenges(corpus: str | Path) -> dict[str, Path]:
    """The challenge splits beside a corpus directory: ``challenge`` and its ``fresh``, ``blind``, ``blind2``,
    ``blind3``, ``blind4`` parts."""
    root = Path(corpus) / "challenge"
    found = {"challenge": root, **{name: root / name for name in ("fresh", "blind", "blind2", "blind3", "blind4")}}
    return {name: p for name, p in found.items() if p.is_dir() and any(p.glob("*.jsonl"))}


def _lexicon_sha(lexicon: dict) -> str:
    from guard.freetext.lexicon import lexicon_sha256

    return lexicon_sha256(lexicon)


def _stratified_sample(examples: list[Example], n: int, seed: int) -> list[Example]:
    """About ``n`` examples keeping each split's and label set's share."""
    if n >= len(examples):
        return examples
    rng = random.Random(seed)
    groups: dict[tuple, list[Example]] = {}
    for e in examples:
        groups.setdefault((e.split, e.labels), []).append(e)
    out = []
    for key in sorted(groups):
        g = groups[key]
        k = max(1, round(len(g) * n / len(examples)))
        out.extend(rng.sample(g, min(k, len(g))))
    return out


def write(result: TrainResult, out: str | Path) -> dict[str, Any]:
    """Save the model and its card; returns the full card."""
    from guard.freetext.model import save

    return save(result.classifier, out, result.card)


def report_table(card: dict[str, Any]):
    """A rich Table: P/R/F1 per label for model and baselines on dev and test."""
    from rich.table import Table

    t = Table(title="free-text classifier: precision / recall / F1 per label", show_lines=False)
    for col in (
        "split",
        "label",
        "model P",
        "model R",
        "model F1",
        "keyword F1",
        "bag-of-words F1",
        "support",
        "beats both",
    ):
        t.add_column(col, justify="right" if col not in ("split", "label") else "left")
    for s in ("dev", "test"):
        for lab in card["metrics"][s]:
            m = card["metrics"][s][lab]
            t.add_row(
                s,
                lab,
                f"{m['precision']:.3f}",
                f"{m['recall']:.3f}",
                f"{m['f1']:.3f}",
                f"{card['baselines']['keyword'][s][lab]['f1']:.3f}",
                f"{card['baselines']['bag_of_words'][s][lab]['f1']:.3f}",
                str(m["support"]),
                "yes" if card["beats_baselines"][s][lab] else "NO",
            )
    return t


def challenge_table(card: dict[str, Any]):
    """A rich Table: F1 (P/R) per label on each challenge split of the card."""
    from rich.table import Table

    t = Table(title="challenge splits (never trained or tuned on): F1 (precision/recall) per label")
    t.add_column("split")
    t.add_column("n", justify="right")
    labels = list(card["labels"]) if "labels" in card else list(LABELS)
    for lab in labels:
        t.add_column(lab, justify="right")
    t.add_column("macro F1", justify="right")
    for name, res in card.get("challenge", {}).items():
        cells = [
            f"{m['f1']:.3f} ({m['precision']:.2f}/{m['recall']:.2f})" for m in (res["labels"][lab] for lab in labels)
        ]
        t.add_row(name, str(res["n"]), *cells, f"{res['macro_f1']:.3f}")
    return t

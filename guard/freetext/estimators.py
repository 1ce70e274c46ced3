"""scikit-learn estimators: the spaCy featurizer and the multi-label linear model.

Both follow the estimator contract: ``__init__`` only stores its arguments,
learning happens in ``fit``, learned attributes end in ``_``, and they survive
``clone``, ``Pipeline``, ``GridSearchCV`` and a joblib round-trip. The spaCy
``Language`` is never an attribute: it is rebuilt (once per process) from
``spacy.blank("en")`` and spacy-lookups-data when first needed.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from guard.freetext.featurize import GROUPS, linguistics
from guard.freetext.lexicon import default_lexicon


class SpacyFeaturizer(TransformerMixin, BaseEstimator):
    """Texts -> sparse count matrix of token, n-gram, pattern and clause features.

    Parameters
    ----------
    groups : tuple of str or None
        Feature groups to use (see ``guard.freetext.featurize.GROUPS``); None for all.
    min_df : int
        Keep features seen in at least this many training texts.
    lexicon : dict or None
        Lexicon data (classes, patterns, morphology); None for the one shipped with guard.
        The lexicon used is stored in ``lexicon_`` so a fitted featurizer does not
        change when guard's lexicon file does.
    """

    def __init__(self, groups: tuple[str, ...] | None = None, min_df: int = 2, lexicon: dict | None = None) -> None:
        self.groups = groups
        self.min_df = min_df
        self.lexicon = lexicon

    def _groups(self) -> frozenset[str]:
        groups = GROUPS if self.groups is None else tuple(self.groups)
        unknown = set(groups) - set(GROUPS)
        if unknown:
            raise ValueError(f"unknown feature groups {sorted(unknown)}; known: {list(GROUPS)}")
        return frozenset(groups)

    def _feature_lists(self, X: Iterable[str], lexicon: dict) -> list[list[str]]:
        ling = linguistics(lexicon)
        groups = self._groups()
        texts = _as_texts(X)
        return [ling.features(lx, groups) for lx in ling.lexes(texts)]

    def fit(self, X: Iterable[str], y: Any = None) -> SpacyFeaturizer:
        lexicon = self.lexicon if self.lexicon is not None else default_lexicon()
        df: Counter[str] = Counter()
        for feats in self._feature_lists(X, lexicon):
            df.update(set(feats))
        kept = sorted(f for f, n in df.items() if n >= self.min_df or f == "bias")
        self.lexicon_ = lexicon
        self.vocabulary_ = {f: i for i, f in enumerate(kept)}
        self.n_features_out_ = len(kept)
        return self

    def transform(self, X: Iterable[str]) -> sp.csr_matrix:
        check_is_fitted(self, "vocabulary_")
        vocab = self.vocabulary_
        indptr: list[int] = [0]
        indices: list[int] = []
        for feats in self._feature_lists(X, self.lexicon_):
            indices.extend(vocab[f] for f in feats if f in vocab)
            indptr.append(len(indices))
        data = np.ones(len(indices), dtype=np.float64)
        matrix = sp.csr_matrix(
            (data, np.asarray(indices, dtype=np.int64), np.asarray(indptr, dtype=np.int64)),
            shape=(len(indptr) - 1, self.n_features_out_),
        )
        matrix.sum_duplicates()
        return matrix

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        check_is_fitted(self, "vocabulary_")
        names = np.empty(self.n_features_out_, dtype=object)
        for f, i in self.vocabulary_.items():
            names[i] = f
        return names

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.two_d_array = False
        return tags


#: Features that only say "a number is here": a digit or number word, its shape, class or unit pattern,
#: or an n-gram holding one. They are evidence for quantity; for the labels in NEUTRAL_NUMBERS their
#: weights may not be negative, so that several numbers in a sentence ("the 2.5-inch screen is bigger
#: than the 2-inch one") never push a comparison or a cause down.
NUMBER_FEATURES = (
    r"^(num|dig|s=[^a-z]*d.*|[wl]=.*\d.*|c=(NUMBER|UNIT|FRACTION)|m=(clock|year|ordinal)"
    r"|p=(NUM_UNIT|NUM_NOUN|NUMBER_WORD)|[bat]=.*(#NUM|\d).*)$"
)


def number_columns(names: Iterable[str]) -> np.ndarray:
    """Indices of the feature names matched by :data:`NUMBER_FEATURES`."""
    rx = re.compile(NUMBER_FEATURES)
    return np.array([i for i, n in enumerate(names) if rx.match(n)], dtype=np.intp)


class MultiLabelLogistic(ClassifierMixin, BaseEstimator):
    """One L2 logistic regression per label over a shared feature matrix.

    ``predict_proba`` returns an (n, n_labels) matrix of per-label probabilities;
    ``predict`` applies ``thresholds`` (a float or one per label). ``neutral`` lists label
    indices whose weights on the columns passed to ``fit`` as ``neutral_columns`` may not be
    negative: those features may speak for the label but never against it.
    """

    def __init__(
        self,
        C: float = 1.0,
        class_weight: str | None = "balanced",
        thresholds: Any = 0.5,
        max_iter: int = 2000,
        neutral: tuple[int, ...] = (),
    ) -> None:
        self.C = C
        self.class_weight = class_weight
        self.thresholds = thresholds
        self.max_iter = max_iter
        self.neutral = neutral

    def fit(self, X: Any, Y: Any, neutral_columns: Any = None) -> MultiLabelLogistic:
        Y = np.asarray(Y)
        if Y.ndim == 1:
            Y = Y.reshape(-1, 1)
        keep = None
        if self.neutral and neutral_columns is not None and len(neutral_columns):
            keep = np.ones(X.shape[1], dtype=bool)
            keep[np.asarray(neutral_columns, dtype=np.intp)] = False
        coefs, intercepts = [], []
        for j in range(Y.shape[1]):
            y = Y[:, j]
            if y.min() == y.max():
                coefs.append(np.zeros(X.shape[1]))
                intercepts.append(10.0 if y[0] else -10.0)
                continue
            lr = LogisticRegression(
                C=self.C, class_weight=self.class_weight, solver="liblinear", max_iter=self.max_iter
            )
            if keep is not None and j in self.neutral:
                coefs.append(self._fit_nonnegative(lr, X, y, ~keep))
            else:
                lr.fit(X, y)
                coefs.append(lr.coef_[0])
            intercepts.append(float(lr.intercept_[0]))
        self.coef_ = np.vstack(coefs)
        self.intercept_ = np.asarray(intercepts)
        self.n_labels_ = Y.shape[1]
        self.classes_ = np.arange(self.n_labels_)
        return self

    @staticmethod
    def _fit_nonnegative(lr: LogisticRegression, X: Any, y: np.ndarray, constrained: np.ndarray) -> np.ndarray:
        """Fit ``lr`` with the ``constrained`` columns' weights kept at zero or above (an active set:
        a constrained column that takes a negative weight is dropped and the model refitted)."""
        active = np.ones(X.shape[1], dtype=bool)
        for _ in range(4):
            cols = np.flatnonzero(active)
            lr.fit(X[:, cols], y)
            coef = np.zeros(X.shape[1])
            coef[cols] = lr.coef_[0]
            negative = constrained & (coef < 0)
            if not negative.any():
                break
            active &= ~negative
        return np.where(constrained, np.maximum(coef, 0.0), coef)

    def decision_function(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "coef_")
        return np.asarray(X @ self.coef_.T) + self.intercept_

    def predict_proba(self, X: Any) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-self.decision_function(X)))

    def predict(self, X: Any) -> np.ndarray:
        thr = np.broadcast_to(np.asarray(self.thresholds, dtype=float), (self.n_labels_,))
        return (self.predict_proba(X) >= thr).astype(np.int8)


class FeaturePipeline(Pipeline):
    """``SpacyFeaturizer`` then ``MultiLabelLogistic``, the model told which fitted columns are number features."""

    def fit(self, X: Any, y: Any = None, **params: Any) -> FeaturePipeline:
        features, model = self.steps[0][1], self.steps[-1][1]
        texts = _as_texts(X)
        Xt = features.fit(texts).transform(texts)
        model.fit(Xt, y, neutral_columns=number_columns(features.get_feature_names_out()))
        return self


def _as_texts(X: Iterable[str]) -> list[str]:
    if isinstance(X, str):
        raise ValueError("expected a sequence of texts, got a single string")
    texts = list(np.asarray(X, dtype=object).ravel()) if isinstance(X, np.ndarray) else list(X)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise ValueError(f"text {i} is {type(t).__name__}, not str")
    return texts

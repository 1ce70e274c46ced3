"""The two baselines the learned model must beat, reported beside it on every training run.

* :class:`KeywordBaseline`: one regular expression per label (``keywords`` in
  the lexicon), the rule a team writes before it has a model.
* :func:`bag_of_words`: plain lower-cased word counts and a logistic regression
  per label, without spaCy, lemmas, classes, patterns or slot masking.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import numpy as np

_SLOT = re.compile(r"\{[^{}\n]{0,200}\}")


class KeywordBaseline:
    """Flags a label when its keyword regex matches the text outside slots."""

    def __init__(self, keywords: dict[str, str], labels: Sequence[str]) -> None:
        self.labels = tuple(labels)
        self.rules = [re.compile(keywords[lab], re.IGNORECASE) for lab in self.labels]

    def fit(self, X: Iterable[str] = (), Y: object = None) -> KeywordBaseline:
        return self

    def predict(self, texts: Iterable[str]) -> np.ndarray:
        texts = [_SLOT.sub(" ", t) for t in texts]
        return np.array([[1 if r.search(t) else 0 for r in self.rules] for t in texts], dtype=np.int8).reshape(
            len(texts), len(self.rules)
        )


def bag_of_words(C: float = 1.0):
    """An unfitted plain bag-of-words multi-label pipeline (threshold 0.5)."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.pipeline import Pipeline

    from guard.freetext.estimators import MultiLabelLogistic

    return Pipeline(
        [
            ("words", CountVectorizer(lowercase=True, binary=True)),
            ("model", MultiLabelLogistic(C=C, class_weight="balanced", thresholds=0.5)),
        ]
    )

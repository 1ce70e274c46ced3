"""Free-text claim classifier: flags comparative, quantity, causal and temporal claims outside slots.

``load()`` returns the shipped :class:`FreeTextClassifier`; ``predict(texts)``
gives labels, per-label scores and evidence spans. Training lives in
:mod:`guard.freetext.training` (needs scikit-learn); prediction does not import it.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "load": "guard.freetext.model",
    "FreeTextClassifier": "guard.freetext.model",
    "Prediction": "guard.freetext.model",
    "Span": "guard.freetext.model",
    "LABELS": "guard.freetext.corpus",
    "Example": "guard.freetext.corpus",
    "read_corpus": "guard.freetext.corpus",
    "split_of": "guard.freetext.corpus",
    "mask_slots": "guard.freetext.featurize",
    "SpacyFeaturizer": "guard.freetext.estimators",
    "MultiLabelLogistic": "guard.freetext.estimators",
    "train": "guard.freetext.training",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'guard.freetext' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)

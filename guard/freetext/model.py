"""The shipped free-text classifier: a compact linear model over spaCy features.

Training uses scikit-learn (:mod:`guard.freetext.estimators`); what ships is
this plain object holding the fitted vocabulary, one weight column per label,
per-label thresholds and the lexicon, so loading and predicting import neither
scikit-learn nor scipy. Beside each ``<name>.joblib`` lies ``<name>.json``, the
model card; :func:`load` refuses a model whose card does not match the file,
the installed libraries or the labels.
"""

from __future__ import annotations

import gc
import hashlib
import json
import re
import threading
from collections.abc import Iterable, Sequence
from contextlib import contextmanager
from functools import reduce
from importlib import metadata
from itertools import chain
from json.encoder import encode_basestring as _json_str  # json.dumps's own, with ensure_ascii=False
from operator import or_
from pathlib import Path
from typing import Any, NamedTuple, cast

import numpy as np

from guard.errors import ModelError
from guard.freetext._fast import _Windows, gather_bulk, spans_bulk
from guard.freetext.featurize import (
    BOS,
    COND,
    EOS,
    FEATURIZER_VERSION,
    GROUPS,
    LEAD,
    LONG,
    MIN_EVIDENCE,
    SLOT_CHAR,
    Linguistics,
    clause_features,
    linguistics,
    prepare,
    prepare_all,
)
from guard.freetext.normalize import Normalized

FORMAT_VERSION = 1
#: Libraries whose version must match the card: name -> how many version parts must agree.
CHECKED_LIBRARIES = {"scikit-learn": 2, "spacy": 2, "spacy-lookups-data": 2, "numpy": 1}
RECORDED_LIBRARIES = ("scikit-learn", "spacy", "spacy-lookups-data", "numpy", "scipy", "joblib")


class Span(NamedTuple):
    """Characters ``text[start:end]`` that triggered a label."""

    start: int
    end: int
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "text": self.text}


class Prediction(NamedTuple):
    """Labels, per-label probabilities and evidence spans (per predicted label) for one text."""

    text: str
    labels: tuple[str, ...]
    scores: dict[str, float]
    spans: dict[str, list[Span]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "labels": list(self.labels),
            "scores": {k: round(v, 4) for k, v in self.scores.items()},
            "spans": {k: [s.to_dict() for s in v] for k, v in self.spans.items()},
        }

    def to_json(self) -> str:
        """``json.dumps(self.to_dict(), ensure_ascii=False)``, written directly: ``guard classify`` prints one
        per input line, and building the dicts first costs it a third more."""
        direct = self._direct_json()
        return json.dumps(self.to_dict(), ensure_ascii=False) if direct is None else direct

    def _direct_json(self) -> str | None:
        """:meth:`to_json` without json's encoder, or None when a score is not a finite float (json writes a
        float, a float subclass too, with ``float.__repr__``, and spells NaN and Infinity what it spells
        nan and inf; anything else raises TypeError here). None is always safe: json then writes the line."""
        try:
            scores = ", ".join([f"{_json_str(k)}: {_float_repr(round(v, 4))}" for k, v in self.scores.items()])
        except TypeError:
            return None
        if "nan" in scores or "inf" in scores:  # a label's name may hold them too, and then json writes the line
            return None
        spans = ", ".join(
            [
                _json_str(k)
                + ": ["
                + ", ".join([f'{{"start": {s.start}, "end": {s.end}, "text": {_json_str(s.text)}}}' for s in v])
                + "]"
                for k, v in self.spans.items()
            ]
        )
        labels = ", ".join(map(_json_str, self.labels))
        return f'{{"text": {_json_str(self.text)}, "labels": [{labels}], "scores": {{{scores}}}, "spans": {{{spans}}}}}'


_float_repr = float.__repr__


def json_lines(predictions: Sequence[Prediction]) -> list[str]:
    """``[p.to_json() for p in predictions]``, with every score rounded and printed at once: ``guard classify``
    prints a line per input line, and ``round(v, 4)`` and ``float.__repr__`` (a correctly rounded decimal
    conversion each) cost a line more than the rest of it. Predictions whose scores are not all floats
    under the first one's label names take :meth:`Prediction.to_json` itself."""
    if not predictions:
        return []
    names = tuple(predictions[0].scores)
    values = [v for p in predictions for v in p.scores.values()]
    if (
        not names
        or len(values) != len(names) * len(predictions)
        or set(map(type, values)) != {float}
        or any(tuple(p.scores) != names for p in predictions)
    ):
        return [p.to_json() for p in predictions]
    shown = _rounded_reprs(np.array(values, dtype=np.float64), values)
    if shown is None:
        return [p.to_json() for p in predictions]
    scores = ", ".join([_json_str(k).replace("%", "%%") + ": %s" for k in names])
    rows = zip(*[iter(shown)] * len(names))
    label_json = _LABEL_JSON
    out = []
    for p, row in zip(predictions, rows):
        labels = label_json.get(p.labels)
        if labels is None:
            labels = ", ".join(map(_json_str, p.labels))
            if len(label_json) < 256:
                label_json[p.labels] = labels
        spans = (
            ", ".join(
                [
                    _json_str(k)
                    + ": ["
                    + ", ".join([f'{{"start": {s.start}, "end": {s.end}, "text": {_json_str(s.text)}}}' for s in v])
                    + "]"
                    for k, v in p.spans.items()
                ]
            )
            if p.spans
            else ""
        )
        out.append(
            f'{{"text": {_json_str(p.text)}, "labels": [{labels}], "scores": {{{scores % row}}}, "spans": {{{spans}}}}}'
        )
    return out


#: JSON of the label tuples seen (a handful per model: one per combination of labels).
_LABEL_JSON: dict[tuple[str, ...], str] = {}
_TEN_THOUSANDTHS: list[str] = []


def _rounded_reprs(x: np.ndarray, values: list[float]) -> list[str] | None:
    """``float.__repr__(round(v, 4))`` of every value, or None unless all lie in [0, 1] (probabilities; -0.0
    not).

    ``round(v, 4)`` is the double nearest to the decimal k/10,000, k the exact v * 10,000 rounded half to
    even; ``k / 10000`` is that double too. The product v * 10000.0 is off the exact one by under 2e-12, so
    k is its nearest integer unless it lies within 1e-9 of a half: those few are rounded by ``round``."""
    if not len(x) or not (np.all(x >= 0.0) and np.all(x <= 1.0)) or np.signbit(x).any():  # -0.0 prints "-0.0"
        return None
    if not _TEN_THOUSANDTHS:
        _TEN_THOUSANDTHS.extend(map(_float_repr, np.arange(10001) / 10000.0))
    y = x * 10000.0
    low = np.floor(y)
    frac = y - low
    k = (low + (frac > 0.5)).astype(np.intp)
    table = _TEN_THOUSANDTHS
    out = [table[i] for i in k.tolist()]
    for i in np.flatnonzero(np.abs(frac - 0.5) < 1e-9).tolist():
        out[i] = _float_repr(round(values[i], 4))
    return out


class FreeTextClassifier:
    """Multi-label classifier of free text: ``predict(texts)`` -> list of :class:`Prediction`.

    >>> clf = load()                                          # doctest: +SKIP
    >>> clf.predict(["It arrives faster than usual."])[0].labels  # doctest: +SKIP
    ('comparative',)
    """

    card: dict[str, Any]
    """The model card, set by :func:`load`."""

    # Prediction state, built by :meth:`prepare` and never pickled (every name starting with "_").
    _ling: Linguistics | None = None
    _groups: frozenset[str]
    _windows: _Windows
    _wsum: dict[tuple[int, ...], tuple[float, ...]]
    _lock: threading.Lock
    _patterns: bool
    _clauses: bool
    _trigger: int
    _lead: int
    # Small caches of the labels and thresholds, filled by the method that reads them.
    _index: dict[str, int] | None = None
    _sets: list[tuple[str, ...]] | None = None
    _logits: tuple[bytes, np.ndarray] | None = None

    def __init__(
        self,
        labels: Sequence[str],
        thresholds: Sequence[float],
        vocabulary: dict[str, int],
        weights: np.ndarray,
        intercept: np.ndarray,
        groups: Sequence[str],
        lexicon: dict[str, Any],
    ) -> None:
        self.labels = tuple(labels)
        self.thresholds = np.asarray(thresholds, dtype=np.float64)
        self.vocabulary = dict(vocabulary)
        self.weights = np.asarray(weights, dtype=np.float32)
        self.intercept = np.asarray(intercept, dtype=np.float64)
        self.groups = tuple(groups)
        self.lexicon = lexicon
        self.format_version = FORMAT_VERSION
        self.featurizer_version = FEATURIZER_VERSION
        if self.weights.shape != (len(self.vocabulary), len(self.labels)):
            raise ModelError(
                f"weights have shape {self.weights.shape}, expected {(len(self.vocabulary), len(self.labels))}"
            )
        if "bias" not in self.vocabulary:
            raise ModelError("vocabulary lacks the 'bias' feature")

    @classmethod
    def from_estimators(
        cls, featurizer: Any, model: Any, labels: Sequence[str], thresholds: Sequence[float]
    ) -> FreeTextClassifier:
        """Compile a fitted SpacyFeaturizer + MultiLabelLogistic into the shipped form."""
        groups = GROUPS if featurizer.groups is None else tuple(featurizer.groups)
        return cls(
            labels, thresholds, featurizer.vocabulary_, model.coef_.T, model.intercept_, groups, featurizer.lexicon_
        )

    # -- pickling: never the spaCy objects or caches ------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        """The public attributes, the vocabulary as one JSON list of its features in column order: joblib
        unpickles in Python, opcode by opcode, and a dict of 27,000 features took 36 ms of each load
        (the JSON list: 4 ms)."""
        state = {k: v for k, v in self.__dict__.items() if not k.startswith("_")}
        features = list(self.vocabulary)
        if all(self.vocabulary[f] == i for i, f in enumerate(features)):
            del state["vocabulary"]
            state["vocabulary_json"] = json.dumps(features, ensure_ascii=False)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Accepts both forms: the vocabulary as a dict (models saved before the JSON list) or as the list."""
        state = dict(state)
        listed = state.pop("vocabulary_json", None)
        if listed is not None:
            features = json.loads(listed)
            state["vocabulary"] = dict(zip(features, range(len(features))))
            if len(state["vocabulary"]) != len(features):
                raise ModelError("the model's vocabulary lists a feature twice")
        self.__dict__.update(state)

    # -- prediction -----------------------------------------------------------------

    def prepare(self) -> Linguistics:
        """Build the spaCy pipeline and the window caches now (each prediction calls it; the first one pays)."""
        ling = self._ling
        if ling is None:
            ling = linguistics(self.lexicon)
            self._groups = frozenset(self.groups)
            self._windows = _Windows(self.vocabulary, self.weights, self._groups, ling.matcher)
            self._wsum = {}
            self._lock = threading.Lock()
            self._patterns = patterns = "patterns" in self.groups
            self._clauses = clauses = "clauses" in self.groups
            # a long pattern's first three tokens, a condition word anywhere, or a reason word opening the
            # sentence may add columns after the windows' own
            self._trigger = (LONG if patterns else 0) | (COND if clauses else 0)
            self._lead = LEAD if clauses else 0
            self._ling = ling  # last: the state is whole once this is set
        return ling

    def _window_ids(self, lexes: list) -> list[int]:
        """Ids of one sentence's windows: the bias, one per lexeme, one for the sentence end."""
        seq = [BOS, BOS, *lexes, EOS]
        return [_Windows.BIAS, *map(self._windows.__getitem__, zip(seq, seq[1:], seq[2:]))]

    def _columns(self, lexes: list) -> list[int]:
        """Columns of one sentence's known features (with repeats): the twin of Linguistics.features."""
        self.prepare()
        cols = [c for i in self._window_ids(lexes) for c in self._windows.cols[i]]
        return cols + self._tail(lexes, LONG | COND | LEAD)[1]

    def _tail(self, lexes: list, flags: int) -> tuple[list, list[int]]:
        """(long pattern matches, their columns and those of the clause features), only computed for
        sentences whose lexemes can trigger them."""
        found: list = []
        cols: list[int] = []
        if flags & LONG and self._patterns:
            found = cast(Linguistics, self._ling).matcher.find_long([x.m for x in lexes])
            for name, _, _ in found:
                cols.extend(self._windows.pattern_columns(name))
        if flags & (COND | LEAD) and self._clauses:
            for f in clause_features(lexes):
                c = self.vocabulary.get(f)
                if c is not None:
                    cols.append(c)
        return found, cols

    def _weight(self, cols: tuple[int, ...]) -> tuple[float, ...]:
        """Summed weights per label of some columns (cached)."""
        w = self._wsum.get(cols)
        if w is None:
            rows = self._windows.weights[list(cols)].tolist()
            if len(cols) == 1:
                w = tuple(rows[0])
            elif not cols:
                w = (0.0,) * len(self.labels)
            else:
                w = tuple(map(sum, zip(*rows)))
            self._wsum[cols] = w
        return w

    def _batch(self, texts: list[str]) -> _Batch:
        """Scores of a batch of prepared texts (see :func:`~guard.freetext.featurize.prepare`), with what
        its evidence spans need.

        Per token, Python only looks its window up (a dict hit in C for a warm
        window). The windows' columns are then gathered text by text, or for a
        batch of BULK texts or more with numpy at once; either way in the order
        of the features, so the sums, and the scores, do not depend on the path.
        """
        ling = self.prepare()
        windows = self._windows
        if len(windows) > _Windows.LIMIT:
            windows.reset()
        docs = list(ling.fast_lexes(texts, prepared=True))
        long: dict[int, list] = {}
        if not docs:
            empty = np.zeros(0, dtype=np.intp)
            return _Batch(np.zeros((0, len(self.labels))), empty, empty, docs, long)
        col_starts: list[int] | np.ndarray
        if len(texts) < self.BULK:  # text by text, in lists: numpy's cost per call outweighs a few texts' work
            get, bias = windows.__getitem__, _Windows.BIAS
            ids: list[int] = []
            starts: list[int] = []
            for lexes in docs:
                starts.append(len(ids))
                seq = [BOS, BOS, *lexes, EOS]
                ids.append(bias)
                ids += map(get, zip(seq, seq[1:], seq[2:]))
            cols, col_starts = self._gather_each(ids, starts, docs, long)
            z = np.add.reduceat(self.weights[cols], col_starts, axis=0, dtype=np.float64) + self.intercept
            return _Batch(z, np.asarray(ids, dtype=np.intp), np.asarray(starts, dtype=np.intp), docs, long)
        # every text as EOS BOS BOS lexemes, one after the other, looked up in one pass: the window (EOS, BOS,
        # BOS) is the bias that starts a text, and (last lexeme, EOS, BOS), between two texts, is
        # _Windows.BETWEEN, dropped (the same ids as text by text: see _window_ids)
        seq = [EOS]
        pad = (BOS, BOS)
        for lexes in docs:
            seq += pad
            seq += lexes
            seq.append(EOS)
        ids_a = np.fromiter(map(windows.__getitem__, zip(seq, seq[1:], seq[2:])), dtype=np.intp, count=len(seq) - 2)
        if len(docs) > 1:
            ids_a = ids_a[ids_a != _Windows.BETWEEN]
        starts_a = np.flatnonzero(ids_a == _Windows.BIAS)
        cols, col_starts = gather_bulk(self, ids_a, starts_a, docs, long)
        z = np.add.reduceat(self.weights[cols], col_starts, axis=0, dtype=np.float64) + self.intercept
        return _Batch(z, ids_a, starts_a, docs, long)

    def _gather_each(self, ids: list[int], starts: list[int], docs: list, long: dict) -> tuple[np.ndarray, list[int]]:
        """Columns of every sentence in order (its windows', then its tail's) and where each sentence's
        columns start, sentence by sentence in Python; notes the long pattern matches in ``long``."""
        wcols, wflags = self._windows.cols, self._windows.flags
        cols: list[int] = []
        col_starts: list[int] = []
        for i, (a, b) in enumerate(zip(starts, starts[1:] + [len(ids)])):
            col_starts.append(len(cols))
            sentence = ids[a:b]
            cols += chain.from_iterable(map(wcols.__getitem__, sentence))
            flags = reduce(or_, map(wflags.__getitem__, sentence)) & self._trigger | wflags[sentence[1]] & self._lead
            if flags:
                found, tail = self._tail(docs[i], flags)
                if found:
                    long[i] = found
                cols += tail
        return np.asarray(cols, dtype=np.intp), col_starts

    def decision_function(self, texts: Iterable[str]) -> np.ndarray:
        """Per-label log-odds, shape (n, n_labels)."""
        texts = _check_texts(texts)
        with self._guard():
            return self._batch([n.text for n in prepare_all(texts)]).z

    def predict_proba(self, texts: Iterable[str]) -> np.ndarray:
        """Per-label probabilities, shape (n, n_labels)."""
        return _sigmoid(self.decision_function(texts))

    def predict(self, texts: Iterable[str] | str, *, spans: bool = True) -> list[Prediction]:
        """One :class:`Prediction` per text (a single string counts as one text)."""
        if isinstance(texts, str):
            texts = [texts]
        texts = _check_texts(texts)
        with self._guard():
            return self._predict(texts, spans)

    @contextmanager
    def _guard(self):
        """One batch at a time per model (window ids are assigned as windows are first seen), with the
        cycle collector paused: a batch keeps every sentence's lexemes alive until its spans are drawn,
        which would otherwise trigger collections that walk the large caches again and again (it creates
        no cycles)."""
        self.prepare()
        enabled = gc.isenabled()
        gc.disable()
        try:
            with self._lock:
                yield
        finally:
            if enabled:
                gc.enable()

    def _predict(self, texts: list[str], spans: bool) -> list[Prediction]:
        norm = prepare_all(texts)
        prepared = [n.text for n in norm]
        batch = self._batch(prepared)
        z = batch.z
        codes = ((z >= self._logit_thresholds()) @ (1 << np.arange(len(self.labels)))).astype(np.intp)
        label_sets = self._label_sets()
        evidence = self._spans(prepared, batch, codes) if spans else [{}] * len(texts)
        if spans:
            for i in np.flatnonzero(codes).tolist():
                if prepared[i] is not texts[i]:
                    evidence[i] = _to_original(texts[i], norm[i], evidence[i])
        probs = _sigmoid(z).tolist()
        labels_all = self.labels
        new = tuple.__new__  # Prediction(...) without its Python-level __new__, one call per text
        return [
            new(Prediction, (text, label_sets[code], dict(zip(labels_all, p)), ev))
            for text, code, p, ev in zip(texts, codes.tolist(), probs, evidence)
        ]

    def _label_index(self) -> dict[str, int]:
        index = self._index
        if index is None:
            index = self._index = {lab: j for j, lab in enumerate(self.labels)}
        return index

    def _label_sets(self) -> list[tuple[str, ...]]:
        """Label tuple of every bit pattern of decisions (bit j = label j)."""
        sets = self._sets
        if sets is None:
            n = len(self.labels)
            sets = self._sets = [
                tuple(lab for j, lab in enumerate(self.labels) if code >> j & 1) for code in range(1 << n)
            ]
        return sets

    def _logit_thresholds(self) -> np.ndarray:
        """The thresholds as log-odds, so decisions compare z directly (same result as prob >= t);
        recomputed only when the thresholds change."""
        key = self.thresholds.tobytes()
        cached = self._logits
        if cached is None or cached[0] != key:
            t = np.clip(self.thresholds, 1e-12, 1 - 1e-12)
            cached = self._logits = (key, np.log(t / (1 - t)))
        return cached[1]

    def evidence(self, text: str, labels: Iterable[str] | None = None) -> dict[str, list[Span]]:
        """Which words pushed each label up (default: every label), as character spans."""
        labels = tuple(self.labels if labels is None else labels)
        index = self._label_index()
        code = sum(1 << j for j in {index[lab] for lab in labels})
        norm = prepare(text)
        with self._guard():
            found = self._spans([norm.text], self._batch([norm.text]), np.array([code], dtype=np.intp))[0]
        if norm.text is not text:
            found = _to_original(text, norm, found)
        return {lab: found.get(lab, []) for lab in labels}

    #: From this many texts on, columns are gathered and spans ranked in bulk with numpy; below it
    #: numpy's cost per call (some 80 µs) outweighs working text by text.
    BULK = 16

    def _spans(self, texts: list[str], batch: _Batch, codes: np.ndarray) -> list[dict[str, list[Span]]]:
        """Evidence spans of the labels in each text's code (bit j = label j): the three strongest
        units (a word, a word pair, three words, a pattern match), ranked as tuples (weight, from, to,
        trimmed from, trimmed to), those weighing at least 0.4 of the strongest kept, merged where
        they touch."""
        if len(texts) < self.BULK:
            return self._spans_each(texts, batch, codes)
        return spans_bulk(self, texts, batch, codes)

    def _spans_each(
        self, texts: list[str], batch: _Batch, codes: np.ndarray, top: int = 3
    ) -> list[dict[str, list[Span]]]:
        """:meth:`_spans`, text by text in Python."""
        units, index, label_sets = self._windows.units, self._label_index(), self._label_sets()
        ids = batch.ids.tolist()
        bounds = batch.starts.tolist() + [len(ids)]
        out: list[dict[str, list[Span]]] = []
        for i, (text, code) in enumerate(zip(texts, codes.tolist())):
            found: dict[str, list[Span]] = {}
            out.append(found)
            if not code:
                continue
            lexes = batch.lexes[i]
            wins = [units[w] for w in ids[bounds[i] + 1 : bounds[i + 1]]]
            offsets: list[int] = []
            for lab in label_sets[code]:
                j = index[lab]
                # plain (weight, start, end, trimmed start, trimmed end) tuples: a Unit's constructor is a Python
                # call per candidate, which the lint path (batches of 5 in bench_freetext) measurably pays for
                cand = [
                    (u.weight, k + u.start, k + u.end, k + u.trim_start, k + u.trim_end)
                    for k, us in enumerate(wins)
                    if (u := us[j]) is not None
                ]
                for name, s, e in batch.long.get(i, ()):
                    w = self._weight(self._windows.pattern_columns(name))
                    if w[j] >= MIN_EVIDENCE:
                        cand.append((w[j], s, e, *self._trim(lexes, s, e)))
                cand = sorted(cand, reverse=True)[:top]
                spans = found[lab] = []
                if not cand:
                    continue
                floor = 0.4 * cand[0][0]
                merged: list[list[int]] = []
                for s, e in sorted((ts, te) for weight, _, _, ts, te in cand if weight >= floor and te > ts):
                    if merged and s <= merged[-1][1]:
                        merged[-1][1] = max(merged[-1][1], e)
                    else:
                        merged.append([s, e])
                if merged and len(offsets) < merged[-1][1]:
                    offsets = self._offsets(text, lexes, merged[-1][1])
                for s, e in merged:
                    start, last = offsets[s], offsets[e - 1]
                    end = last + len(lexes[e - 1].text)
                    spans.append(Span(start, end, text[start:end]))
        return out

    def _long_units(self, batch: _Batch, want: np.ndarray) -> list[tuple]:
        """(group, weight, from, to, trimmed from, trimmed to) of the long pattern matches."""
        rows = []
        n_labels = len(self.labels)
        for i, found in batch.long.items():
            for name, s, e in found:
                w = self._weight(self._windows.pattern_columns(name))
                for j in range(n_labels):
                    if want[i, j] and w[j] >= MIN_EVIDENCE:
                        rows.append((i * n_labels + j, w[j], s, e, *self._trim(batch.lexes[i], s, e)))
        return rows

    @staticmethod
    def _trim(lexes: list, s: int, e: int) -> tuple[int, int]:
        """Token range without punctuation at its edges (a span of only punctuation becomes empty)."""
        s, e = max(s, 0), min(e, len(lexes))
        while s < e and lexes[s].punct:
            s += 1
        while e > s and lexes[e - 1].punct:
            e -= 1
        return s, e

    @staticmethod
    def _offsets(text: str, lexes: list, upto: int) -> list[int]:
        """Start offsets of the first ``upto`` lexemes in a prepared text, found by search: tokens appear
        in it in order."""
        find = text.find
        out: list[int] = []
        append = out.append
        pos = 0
        for x in lexes[:upto]:
            t = x.text
            pos = find(t, pos)
            append(pos)
            pos += len(t)
        return out

    def explain(self, text: str) -> list[tuple[str, str, dict[str, float]]]:
        """Every known feature of a text with the words behind it and its weight per label."""
        return [
            (f, text[s:e], {lab: float(w[j]) for j, lab in enumerate(self.labels)})
            for f, w, s, e in self._located(text)
        ]

    def _located(self, text: str) -> list[tuple[str, np.ndarray, int, int]]:
        ling = self.prepare()
        seen: set[tuple[str, int, int]] = set()
        out = []
        for f, s, e in ling.located_features(text, self._groups):
            col = self.vocabulary.get(f)
            if col is None or (f, s, e) in seen:
                continue
            seen.add((f, s, e))
            out.append((f, self.weights[col], s, e))
        return out


def _sigmoid(z: np.ndarray) -> np.ndarray:
    """Probabilities from log-odds; a long text's sum of weights can be far beyond exp's range."""
    return 1.0 / (1.0 + np.exp(-np.clip(z, -500.0, 500.0)))


def _to_original(text: str, norm: Normalized, found: dict[str, list[Span]]) -> dict[str, list[Span]]:
    """Spans found on a prepared text, moved onto the text the caller gave: offsets mapped back through
    the normalisation, and a span ending on a masked slot extended to the slot's closing brace."""
    out: dict[str, list[Span]] = {}
    for lab, spans in found.items():
        moved = []
        for sp in spans:
            start, end = norm.original(sp.start, sp.end)
            if norm.text[sp.end - 1] == SLOT_CHAR:
                close = text.find("}", norm.original(sp.end - 1, sp.end)[0])
                end = close + 1 if close >= 0 else end
            moved.append(Span(start, end, text[start:end]))
        out[lab] = moved
    return out


class _Batch(NamedTuple):
    """Scores of a batch and what its evidence needs: the window ids of all texts (each text starts
    at ``starts[i]`` with the bias pseudo-window), its lexemes and its long pattern matches."""

    z: np.ndarray
    ids: np.ndarray
    starts: np.ndarray
    lexes: list
    long: dict


def _check_texts(texts: Iterable[str]) -> list[str]:
    try:
        texts = list(texts)
    except TypeError:
        raise ModelError(f"predict expects a list of strings, got {type(texts).__name__}") from None
    if not all(type(t) is str for t in texts):
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise ModelError(f"predict expects strings; item {i} is {type(t).__name__}")
    if _SURROGATE.search("".join(texts)):  # spaCy's tokenizer would raise UnicodeEncodeError on one
        for i, t in enumerate(texts):
            m = _SURROGATE.search(t)
            if m:
                raise ModelError(f"predict expects encodable text; item {i} has a lone surrogate at {m.start()}")
    return texts


_SURROGATE = re.compile("[\ud800-\udfff]")


# --- files and the model card -------------------------------------------------------


def default_model_path() -> Path:
    from guard._resources import data_path

    return data_path("models") / "freetext.joblib"


def card_path(model_path: str | Path) -> Path:
    return Path(model_path).with_suffix(".json")


def library_versions(names: Iterable[str] = RECORDED_LIBRARIES) -> dict[str, str]:
    """Installed versions of ``names`` (each a look-up in the installed distributions, so ask only for what
    is compared) and of Python."""
    import platform

    out = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_model_file(clf: FreeTextClassifier, path: str | Path) -> None:
    """The classifier in joblib's format, compressed (the format ``models/`` promises its users)."""
    import joblib

    joblib.dump(clf, path, compress=3)


def read_model_file(path: str | Path) -> Any:
    """What :func:`write_model_file` wrote: read by :mod:`guard.freetext._modelfile` without importing joblib
    when the file is as guard writes it, else by ``joblib.load`` (the reference)."""
    from guard.freetext import _modelfile

    try:
        return _modelfile.read(path)
    except _modelfile.NotLean:
        import joblib

        return joblib.load(path)


def save(clf: FreeTextClassifier, path: str | Path, card: dict[str, Any]) -> dict[str, Any]:
    """Write the model and its card (labels, thresholds, versions, file hash added here)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_model_file(clf, path)
    full = dict(card)
    full.update(
        {
            "name": path.stem,
            "format_version": FORMAT_VERSION,
            "featurizer_version": clf.featurizer_version,
            "labels": list(clf.labels),
            "thresholds": {lab: round(float(t), 4) for lab, t in zip(clf.labels, clf.thresholds)},
            "libraries": library_versions(),
            "n_features": len(clf.vocabulary),
            "feature_groups": list(clf.groups),
            "model_file": {"name": path.name, "sha256": file_sha256(path), "bytes": path.stat().st_size},
        }
    )
    card_path(path).write_text(json.dumps(full, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    return full


def read_card(path: str | Path) -> dict[str, Any]:
    cp = card_path(path)
    if not cp.is_file():
        raise ModelError(f"model card {cp} is missing; a model is only loaded beside its card", location=str(cp))
    try:
        card = json.loads(cp.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelError(f"model card {cp} is unreadable: {exc}", location=str(cp)) from None
    if not isinstance(card, dict):
        raise ModelError(f"model card {cp} is not a JSON object", location=str(cp))
    return card


def check_card(card: dict[str, Any], path: str | Path, *, installed: dict[str, str] | None = None) -> None:
    """Raise ModelError when the card does not fit this installation or this file."""
    cp = str(card_path(path))
    problems = []
    if card.get("format_version") != FORMAT_VERSION:
        problems.append(f"format_version is {card.get('format_version')!r}, this guard reads {FORMAT_VERSION}")
    if card.get("featurizer_version") != FEATURIZER_VERSION:
        problems.append(
            f"featurizer_version is {card.get('featurizer_version')!r}, this guard computes version "
            f"{FEATURIZER_VERSION} features (retrain with `guard train`)"
        )
    if card.get("labels") != list(_labels()):
        problems.append(f"labels are {card.get('labels')!r}, this guard expects {list(_labels())}")
    installed = installed or library_versions(CHECKED_LIBRARIES)
    recorded = card.get("libraries") or {}
    for lib, parts in CHECKED_LIBRARIES.items():
        want, have = recorded.get(lib), installed.get(lib)
        if want is None:
            problems.append(f"the card does not record the {lib} version")
        elif _release(want, parts) != _release(have, parts):
            problems.append(
                f"trained with {lib} {want}, installed is {have} (the first {parts} version part(s) must match; "
                f"retrain with `guard train`)"
            )
    mf = card.get("model_file") or {}
    if mf.get("sha256") and Path(path).is_file() and file_sha256(path) != mf["sha256"]:
        problems.append(f"{Path(path).name} does not match the sha256 in its card (file replaced or corrupt)")
    if problems:
        raise ModelError(f"model {path} does not match its card {cp}: " + "; ".join(problems), location=cp)


def _labels() -> tuple[str, ...]:
    from guard.freetext.corpus import LABELS

    return LABELS


def _release(version: str | None, parts: int) -> tuple[str, ...]:
    if not version:
        return ()
    return tuple(re.split(r"[.+]", version)[:parts])


def load(path: str | Path | None = None) -> FreeTextClassifier:
    """Load a classifier after checking its model card (default: the model shipped with guard)."""
    path = Path(path) if path is not None else default_model_path()
    if not path.is_file():
        raise ModelError(f"model file {path} not found; train one with `guard train`", location=str(path))
    card = read_card(path)
    check_card(card, path)
    try:
        clf = read_model_file(path)
    except Exception as exc:  # joblib and pickle raise many types for a corrupt file
        raise ModelError(f"model file {path} cannot be read: {type(exc).__name__}: {exc}", location=str(path)) from None
    if not isinstance(clf, FreeTextClassifier):
        raise ModelError(f"{path} holds a {type(clf).__name__}, not a FreeTextClassifier", location=str(path))
    if getattr(clf.weights, "shape", None) != (len(clf.vocabulary), len(clf.labels)):
        raise ModelError(f"{path} holds weights that do not fit its vocabulary and labels", location=str(path))
    if getattr(clf, "featurizer_version", None) != card.get("featurizer_version"):
        raise ModelError(
            f"{path} was built with featurizer version {getattr(clf, 'featurizer_version', None)!r} but its "
            f"card says {card.get('featurizer_version')!r}",
            location=str(path),
        )
    if list(clf.labels) != card["labels"]:
        raise ModelError(
            f"{path} predicts labels {list(clf.labels)} but its card says {card['labels']}", location=str(path)
        )
    thr = card.get("thresholds", {})
    if any(abs(float(thr.get(lab, -1)) - float(t)) > 1e-3 for lab, t in zip(clf.labels, clf.thresholds)):
        raise ModelError(f"{path} thresholds differ from its card", location=str(path))
    clf.card = card
    return clf

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
from operator import or_
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from guard.errors import ModelError
from guard.freetext.featurize import (
    BOS,
    COND,
    EOS,
    FEATURIZER_VERSION,
    GROUPS,
    LEAD,
    LONG,
    Linguistics,
    bi_features,
    clause_features,
    linguistics,
    mask_slots,
    tri_feature,
    uni_features,
)

FORMAT_VERSION = 1
#: Evidence units with a smaller weight (log-odds) are never shown as spans.
MIN_EVIDENCE = 0.2
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


class FreeTextClassifier:
    """Multi-label classifier of free text: ``predict(texts)`` -> list of :class:`Prediction`.

    >>> clf = load()                                          # doctest: +SKIP
    >>> clf.predict(["It arrives faster than usual."])[0].labels  # doctest: +SKIP
    ('comparative',)
    """

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
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    # -- prediction -----------------------------------------------------------------

    def prepare(self) -> Linguistics:
        """Build the spaCy pipeline and the window caches now (each prediction calls it; the first one pays)."""
        ling = self.__dict__.get("_ling")
        if ling is None:
            ling = linguistics(self.lexicon)
            windows = _Windows(
                self.vocabulary, self.weights.astype(np.float64).tolist(), frozenset(self.groups), ling.matcher
            )
            patterns, clauses = "patterns" in self.groups, "clauses" in self.groups
            # a long pattern's first three tokens, a condition word anywhere, or a reason word opening the
            # sentence may add columns after the windows' own
            self.__dict__.update(
                _ling=ling,
                _groups=frozenset(self.groups),
                _windows=windows,
                _wsum={},
                _lock=threading.Lock(),
                _patterns=patterns,
                _clauses=clauses,
                _trigger=(LONG if patterns else 0) | (COND if clauses else 0),
                _lead=LEAD if clauses else 0,
            )
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
            found = self._ling.matcher.find_long([x.m for x in lexes])
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
            wlist = self._windows.wlist
            if len(cols) == 1:
                w = tuple(wlist[cols[0]])
            elif not cols:
                w = (0.0,) * len(self.labels)
            else:
                w = tuple(map(sum, zip(*(wlist[c] for c in cols))))
            self._wsum[cols] = w
        return w

    def _batch(self, texts: list[str]) -> _Batch:
        """Scores of a batch, with what its evidence spans need.

        Per token, Python only looks its window up (a dict hit in C for a warm
        window). The windows' columns are then gathered text by text, or for a
        batch of BULK texts or more with numpy at once; either way in the order
        of the features, so the sums, and the scores, do not depend on the path.
        """
        ling = self.prepare()
        windows = self._windows
        if len(windows) > _Windows.LIMIT:
            windows.reset()
        get = windows.__getitem__
        bias = _Windows.BIAS
        ids: list[int] = []
        starts: list[int] = []
        docs = []
        for lexes in ling.fast_lexes(texts):
            starts.append(len(ids))
            docs.append(lexes)
            seq = [BOS, BOS, *lexes, EOS]
            ids.append(bias)
            ids += map(get, zip(seq, seq[1:], seq[2:]))
        ids_a = np.asarray(ids, dtype=np.intp)
        starts_a = np.asarray(starts, dtype=np.intp)
        long: dict[int, list] = {}
        if not starts:
            return _Batch(np.zeros((0, len(self.labels))), ids_a, starts_a, docs, long)
        if len(texts) < self.BULK:
            cols, col_starts = self._gather_each(ids, starts, docs, long)
        else:
            cols, col_starts = self._gather_bulk(ids_a, starts_a, docs, long)
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

    def _gather_bulk(
        self, ids: np.ndarray, starts: np.ndarray, docs: list, long: dict
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_gather_each` with numpy: the windows' columns are gathered at once, and the few tails
        inserted after."""
        arr = self._windows.arrays()
        lens = arr.lens[ids]
        ends = np.cumsum(lens)
        firsts = ends - lens
        cols = arr.colflat[np.arange(ends[-1]) + np.repeat(arr.ptr[ids] - firsts, lens)]
        col_starts = firsts[starts]
        flags = np.bitwise_or.reduceat(arr.flags[ids], starts) & self._trigger | arr.flags[ids[starts + 1]] & self._lead
        at: list[int] = []
        extra: list[int] = []
        if flags.any():
            col_ends = np.append(col_starts[1:], ends[-1]).tolist()
            for i in np.flatnonzero(flags).tolist():
                found, tail = self._tail(docs[i], int(flags[i]))
                if found:
                    long[i] = found
                at += [col_ends[i]] * len(tail)
                extra += tail
        if extra:
            cols = np.insert(cols, at, extra)
            col_starts = col_starts + np.searchsorted(np.asarray(at), col_starts, side="right")
        return cols, col_starts

    def decision_function(self, texts: Iterable[str]) -> np.ndarray:
        """Per-label log-odds, shape (n, n_labels)."""
        texts = _check_texts(texts)
        with self._guard():
            return self._batch(texts).z

    def predict_proba(self, texts: Iterable[str]) -> np.ndarray:
        """Per-label probabilities, shape (n, n_labels)."""
        return 1.0 / (1.0 + np.exp(-self.decision_function(texts)))

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
        batch = self._batch(texts)
        z = batch.z
        codes = ((z >= self._logit_thresholds()) @ (1 << np.arange(len(self.labels)))).astype(np.intp)
        label_sets = self._label_sets()
        evidence = self._spans(texts, batch, codes) if spans else [{}] * len(texts)
        probs = (1.0 / (1.0 + np.exp(-z))).tolist()
        labels_all = self.labels
        return [
            Prediction(text, label_sets[code], dict(zip(labels_all, p)), ev)
            for text, code, p, ev in zip(texts, codes.tolist(), probs, evidence)
        ]

    def _label_index(self) -> dict[str, int]:
        index = self.__dict__.get("_index")
        if index is None:
            index = self.__dict__["_index"] = {lab: j for j, lab in enumerate(self.labels)}
        return index

    def _label_sets(self) -> list[tuple[str, ...]]:
        """Label tuple of every bit pattern of decisions (bit j = label j)."""
        sets = self.__dict__.get("_sets")
        if sets is None:
            n = len(self.labels)
            sets = self.__dict__["_sets"] = [
                tuple(lab for j, lab in enumerate(self.labels) if code >> j & 1) for code in range(1 << n)
            ]
        return sets

    def _logit_thresholds(self) -> np.ndarray:
        """The thresholds as log-odds, so decisions compare z directly (same result as prob >= t);
        recomputed only when the thresholds change."""
        key = self.thresholds.tobytes()
        cached = self.__dict__.get("_logits")
        if cached is None or cached[0] != key:
            t = np.clip(self.thresholds, 1e-12, 1 - 1e-12)
            cached = self.__dict__["_logits"] = (key, np.log(t / (1 - t)))
        return cached[1]

    def evidence(self, text: str, labels: Iterable[str] | None = None) -> dict[str, list[Span]]:
        """Which words pushed each label up (default: every label), as character spans."""
        labels = tuple(self.labels if labels is None else labels)
        index = self._label_index()
        code = sum(1 << j for j in {index[lab] for lab in labels})
        with self._guard():
            found = self._spans([text], self._batch([text]), np.array([code], dtype=np.intp))[0]
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
        return self._spans_bulk(texts, batch, codes)

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
                cand = [
                    (u[0], k + u[1], k + u[2], k + u[3], k + u[4])
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
                for s, e in sorted((s, e) for w, _, _, s, e in cand if w >= floor and e > s):
                    if merged and s <= merged[-1][1]:
                        merged[-1][1] = max(merged[-1][1], e)
                    else:
                        merged.append([s, e])
                if merged and len(offsets) < merged[-1][1]:
                    offsets = self._offsets(text, lexes, merged[-1][1])
                for s, e in merged:
                    start, last = offsets[s], offsets[e - 1]
                    end = last + len(lexes[e - 1].text)
                    if lexes[e - 1].slot:
                        close = text.find("}", last)
                        end = close + 1 if close >= 0 else end
                    spans.append(Span(start, end, text[start:end]))
        return out

    def _spans_bulk(
        self, texts: list[str], batch: _Batch, codes: np.ndarray, top: int = 3
    ) -> list[dict[str, list[Span]]]:
        """:meth:`_spans` for all texts and labels at once: units are ranked with numpy, and offsets
        come from the layout of the non-space characters; Python only turns the few chosen token
        ranges into spans."""
        n_labels = len(self.labels)
        label_sets = self._label_sets()
        out: list[dict[str, list[Span]]] = [{lab: [] for lab in label_sets[c]} if c else {} for c in codes.tolist()]
        ids, starts, arr = batch.ids, batch.starts, self._windows.arrays()
        if not codes.any():
            return out
        seg = np.repeat(np.arange(len(texts)), np.diff(np.append(starts, len(ids))))
        want = (codes[:, None] >> np.arange(n_labels)) & 1 == 1
        weights = arr.evw[ids]
        pos, lab = np.nonzero((weights >= MIN_EVIDENCE) & want[seg])
        w = weights[pos, lab]
        units = arr.ext[ids[pos], lab] + (pos - starts[seg[pos]] - 1)[:, None]
        group = seg[pos] * n_labels + lab
        if batch.long:
            rows = self._long_units(batch, want)
            if rows:
                extra = np.array(rows)
                group = np.append(group, extra[:, 0].astype(np.intp))
                w = np.append(w, extra[:, 1])
                units = np.concatenate([units, extra[:, 2:].astype(units.dtype)])
        s, e, ts, te = units.T
        order = np.lexsort((-te, -ts, -e, -s, -w, group))
        g = group[order]
        new = np.empty(len(g), dtype=bool)
        new[:1] = True
        np.not_equal(g[1:], g[:-1], out=new[1:])
        first = np.flatnonzero(new)
        size = np.diff(np.append(first, len(g)))
        rank = np.arange(len(g)) - np.repeat(first, size)
        floor = np.repeat(0.4 * w[order[first]], size)
        keep = order[(rank < top) & (w[order] >= floor) & (te[order] > ts[order])]
        g, ts, te = group[keep], ts[keep], te[keep]
        order = np.lexsort((te, ts, g))
        g, ts, te = g[order], ts[order], te[order]
        # merged spans: a unit starts a new span unless it begins before the furthest end so far of its group
        big = int(te.max(initial=0)) + 3
        reach = np.maximum.accumulate(te + g * big)
        starts_span = np.ones(len(g), dtype=bool)
        starts_span[1:] = (g[1:] != g[:-1]) | (ts[1:] + g[1:] * big > reach[:-1])
        heads = np.flatnonzero(starts_span)
        g, ts = g[heads], ts[heads]
        te = np.maximum.reduceat(te, heads) if len(heads) else te[heads]
        text_of = g // n_labels
        xlen = arr.xlen[ids]
        before = np.cumsum(xlen) - xlen
        base = starts[text_of]
        first_tok, last_tok = base + 1 + ts, base + te
        shown = np.flatnonzero(codes)
        chars = _NonSpace([texts[i] for i in shown.tolist()])
        k = np.searchsorted(shown, text_of)
        tiled = np.add.reduceat(xlen, starts)[text_of] == chars.count[k]
        rows = zip(
            text_of.tolist(),
            (g % n_labels).tolist(),
            ts.tolist(),
            te.tolist(),
            chars.offsets(k, before[first_tok] - before[base], tiled).tolist(),
            chars.offsets(k, before[last_tok] - before[base], tiled).tolist(),
            xlen[last_tok].tolist(),
            arr.slot[ids[last_tok]].tolist(),
            tiled.tolist(),
        )
        labels = self.labels
        searched: dict[int, list[int]] = {}
        for i, j, s, e, start, last, n_last, slot, ok in rows:
            text = texts[i]
            if not ok:
                offsets = searched.get(i) or searched.setdefault(
                    i, self._offsets(text, batch.lexes[i], len(batch.lexes[i]))
                )
                start, last = offsets[s], offsets[e - 1]
            end = last + n_last
            if slot:
                close = text.find("}", last)
                end = close + 1 if close >= 0 else end
            out[i][labels[j]].append(Span(start, end, text[start:end]))
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
        """Start offsets of the first ``upto`` lexemes, found by search: tokens appear in order in the
        masked text, which keeps the original offsets."""
        find = mask_slots(text).find
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


class _Arrays(NamedTuple):
    """Per window id: where its columns sit in ``colflat``, its flags (LONG: a long pattern may start at
    its first lexeme; COND, LEAD: those of its last), the length of its last lexeme, and per label its
    strongest evidence unit (weight, or -inf, and token extents)."""

    colflat: np.ndarray
    ptr: np.ndarray
    lens: np.ndarray
    flags: np.ndarray
    xlen: np.ndarray
    slot: np.ndarray
    evw: np.ndarray
    ext: np.ndarray


class _Batch(NamedTuple):
    """Scores of a batch and what its evidence needs: the window ids of all texts (each text starts
    at ``starts[i]`` with the bias pseudo-window), its lexemes and its long pattern matches."""

    z: np.ndarray
    ids: np.ndarray
    starts: np.ndarray
    lexes: list
    long: dict


class _Windows(dict):
    """Every window of three lexemes (a, b, x) seen so far, mapped to a small id.

    A window stands for the features ending on its last lexeme x (unigram, bigram,
    trigram, short pattern matches): their columns and, per label, the strongest
    of them as evidence. A warm window costs one dict hit (``map(windows.__getitem__,
    ...)`` runs in C); ``__missing__`` builds a new one. The per-id data is mirrored
    in numpy arrays so that a batch is scored and its evidence ranked in bulk.
    """

    #: Id of the pseudo-window holding only the bias column, which starts every sentence.
    BIAS = 0
    #: Above this many windows the cache starts afresh (checked between batches, so ids stay valid).
    #: A window costs about 1 KB with its share of spaCy's strings (measured: 38 MB traced for the
    #: 40,892 windows of 31,000 distinct sentences), so the cache stays under about 200 MB.
    LIMIT = 200_000

    def __init__(
        self, vocabulary: dict[str, int], wlist: list[list[float]], groups: frozenset[str], matcher: Any
    ) -> None:
        super().__init__()
        self.vocabulary, self.wlist, self.groups, self.matcher = vocabulary, wlist, groups, matcher
        self.n_labels = len(wlist[0]) if wlist else 0
        self.trigrams, self.patterns = "trigrams" in groups, "patterns" in groups
        #: per column, the (label, weight) pairs that can be evidence
        self.strong = [tuple((j, w) for j, w in enumerate(row) if w >= MIN_EVIDENCE) for row in wlist]
        self.reset()

    def reset(self) -> None:
        self.clear()
        self._ucache: dict = {}
        self._bcache: dict = {}
        self._pcache: dict = {}
        none = (None,) * self.n_labels
        self.cols: list[tuple[int, ...]] = [(self.vocabulary["bias"],)]
        self.units: list[tuple] = [none]
        self.flags: list[int] = [0]
        self._pending: list[tuple] = [(0, False, None)]
        self._synced = 0
        self._n_cols = 0
        self._arrays = _Arrays(
            np.zeros(0, np.intp),
            np.zeros(0, np.intp),
            np.zeros(0, np.intp),
            np.zeros(0, np.int64),
            np.zeros(0, np.intp),
            np.zeros(0, bool),
            np.zeros((0, self.n_labels)),
            np.zeros((0, self.n_labels, 4), np.intp),
        )

    def __missing__(self, key: tuple) -> int:
        a, b, x = key
        cols = self.unigram_columns(x) if x is not EOS else ()
        n_uni = len(cols)
        cols += self.bigram_columns(b, x)
        n_bi = len(cols) - n_uni
        if self.trigrams and b is not BOS and x is not EOS:
            col = self.vocabulary.get(tri_feature(a, b, x))
            if col is not None:
                cols += (col,)
        pattern: list[tuple[int, int]] = []
        if self.patterns and x is not EOS:
            for name, length in self.matcher.ending(a.m, b.m, x.m):
                found = self.pattern_columns(name)
                cols += found
                pattern += [(1 - length, 1)] * len(found)
        units = self._units(cols, n_uni, n_bi, pattern, a, b, x) if any(map(self.strong.__getitem__, cols)) else None
        flags = x.flags & (COND | LEAD)
        if self.patterns and a.m[3] and self.matcher.may_start_long(a.m, b.m, x.m):
            flags |= LONG
        i = self[key] = len(self.cols)
        self.cols.append(cols)
        self.units.append(units or self.units[0])
        self.flags.append(flags)
        self._pending.append((len(x.text) if x is not EOS else 0, x.slot, units))
        return i

    def unigram_columns(self, x: Any) -> tuple[int, ...]:
        c = self._ucache.get(x)
        if c is None:
            vocab = self.vocabulary
            c = self._ucache[x] = tuple(vocab[f] for f in uni_features(x, self.groups) if f in vocab)
        return c

    def bigram_columns(self, a: Any, b: Any) -> tuple[int, ...]:
        c = self._bcache.get((a, b))
        if c is None:
            vocab = self.vocabulary
            feats = bi_features(a, b) if "bigrams" in self.groups else ()
            c = self._bcache[(a, b)] = tuple(vocab[f] for f in feats if f in vocab)
        return c

    def pattern_columns(self, name: str) -> tuple[int, ...]:
        c = self._pcache.get(name)
        if c is None:
            f = f"p={name}"
            c = self._pcache[name] = (self.vocabulary[f],) if f in self.vocabulary else ()
        return c

    def _units(self, cols: tuple[int, ...], n_uni: int, n_bi: int, pattern: list, a: Any, b: Any, x: Any) -> tuple:
        """Per label, the strongest feature of a window if its weight reaches MIN_EVIDENCE:
        (weight, from, to, trimmed from, trimmed to) in token positions relative to the window's last
        token (a word, the word pair, the three words, or a short pattern match ending there; trimmed
        of punctuation and of the sentence boundaries). ``cols`` holds n_uni unigram, n_bi bigram, the
        trigram, then the pattern columns with the given extents."""
        bigram = (-1, 0) if x is EOS else (-1 if b is not BOS else 0, 1)
        n_tri = len(cols) - len(pattern)
        best: list = [None] * self.n_labels
        for k, c in enumerate(cols):
            strong = self.strong[c]
            if not strong:
                continue
            s, e = (0, 1) if k < n_uni else bigram if k < n_uni + n_bi else (-2, 1) if k < n_tri else pattern[k - n_tri]
            for j, wj in strong:
                if best[j] is None or wj > best[j][0]:
                    best[j] = (wj, s, e)
        toks = {-2: a, -1: b, 0: x}
        first = -1 if a is BOS else -2
        if b is BOS:
            first = 0
        last = 0 if x is EOS else 1
        for j, u in enumerate(best):
            if u is not None:
                _, s, e = u
                s, e = max(s, first), min(e, last)
                while s < e and toks[s].punct:
                    s += 1
                while e > s and toks[e - 1].punct:
                    e -= 1
                best[j] = (*u, s, e)
        return tuple(best)

    def arrays(self) -> _Arrays:
        """The numpy mirror of every window so far (windows added since the last call are copied in)."""
        n, done = len(self.cols), self._synced
        if done < n:
            old = self._arrays
            new_cols = self.cols[done:]
            lens = [len(c) for c in new_cols]
            ptr = np.cumsum([self._n_cols] + lens[:-1])
            flat = [c for cols in new_cols for c in cols]
            rows, self._pending = self._pending, []
            evw, ext = _grown(old.evw, done, (), n), _grown(old.ext, done, (), n)
            evw[done:n], ext[done:n] = -np.inf, 0
            found = [
                (i, j, u)
                for i, r in enumerate(rows, done)
                if r[2] is not None
                for j, u in enumerate(r[2])
                if u is not None
            ]
            if found:
                at, label, units = zip(*found)
                values = np.array(units)
                evw[at, label] = values[:, 0]
                ext[at, label] = values[:, 1:]
            self._arrays = _Arrays(
                _grown(old.colflat, self._n_cols, flat),
                _grown(old.ptr, done, ptr),
                _grown(old.lens, done, lens),
                _grown(old.flags, done, self.flags[done:n]),
                _grown(old.xlen, done, [r[0] for r in rows]),
                _grown(old.slot, done, [r[1] for r in rows]),
                evw,
                ext,
            )
            self._synced, self._n_cols = n, self._n_cols + len(flat)
        return self._arrays


def _grown(arr: np.ndarray, used: int, rows: Sequence, need: int | None = None) -> np.ndarray:
    """``arr`` with ``rows`` written after its first ``used`` rows, reallocated (doubling) when it
    cannot hold ``need`` rows (default: those)."""
    need = used + len(rows) if need is None else need
    if need > len(arr):
        bigger = np.empty((max(need, 2 * len(arr)),) + arr.shape[1:], dtype=arr.dtype)
        bigger[:used] = arr[:used]
        arr = bigger
    if len(rows):
        arr[used:need] = rows
    return arr


class _NonSpace:
    """Where the non-space characters of some slot-masked texts are, found for all texts at once.

    Tokens that hold as many characters as the text has non-space characters tile
    them in order (no token holds whitespace), so a token starting at the c-th
    non-space character starts at its offset: no search per token.
    """

    #: Code point -> is it whitespace (as ``str.split`` and ``str.strip`` see it); none lies beyond U+3000.
    _SPACE: np.ndarray | None = None

    def __init__(self, texts: list[str]) -> None:
        if _NonSpace._SPACE is None:
            _NonSpace._SPACE = np.array([chr(c).isspace() for c in range(0x3001)] + [False])
        table = _NonSpace._SPACE
        joined = mask_slots("\n".join(texts))  # no slot spans a newline, so texts are masked as one by one
        points = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32)
        self.positions = np.flatnonzero(~table[np.minimum(points, len(table) - 1)])
        lengths = np.fromiter(map(len, texts), dtype=np.intp, count=len(texts))
        self.begin = np.cumsum(lengths + 1) - lengths - 1
        self.first = np.searchsorted(self.positions, self.begin)
        self.count = np.searchsorted(self.positions, self.begin + lengths) - self.first

    def offsets(self, k: np.ndarray, c: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """Offset in text ``k`` of its ``c``-th non-space character (0 where not ``valid``)."""
        at = np.where(valid, self.first[k] + c, 0)
        return np.where(valid, self.positions[at] - self.begin[k], 0) if len(self.positions) else np.zeros_like(c)


def _check_texts(texts: Iterable[str]) -> list[str]:
    try:
        texts = list(texts)
    except TypeError:
        raise ModelError(f"predict expects a list of strings, got {type(texts).__name__}") from None
    if not all(type(t) is str for t in texts):
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise ModelError(f"predict expects strings; item {i} is {type(t).__name__}")
    return texts


# --- files and the model card -------------------------------------------------------


def default_model_path() -> Path:
    from guard._resources import data_path

    return data_path("models") / "freetext.joblib"


def card_path(model_path: str | Path) -> Path:
    return Path(model_path).with_suffix(".json")


def library_versions() -> dict[str, str]:
    import platform

    out = {"python": platform.python_version()}
    for name in RECORDED_LIBRARIES:
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


def save(clf: FreeTextClassifier, path: str | Path, card: dict[str, Any]) -> dict[str, Any]:
    """Write the model and its card (labels, thresholds, versions, file hash added here)."""
    import joblib

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    joblib.dump(clf, path, compress=3)
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
    installed = installed or library_versions()
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
    import joblib

    try:
        clf = joblib.load(path)
    except Exception as exc:  # joblib/pickle raise many types for a corrupt file
        raise ModelError(f"model file {path} cannot be read: {type(exc).__name__}: {exc}", location=str(path)) from None
    if not isinstance(clf, FreeTextClassifier):
        raise ModelError(f"{path} holds a {type(clf).__name__}, not a FreeTextClassifier", location=str(path))
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

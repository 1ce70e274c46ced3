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
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable, NamedTuple, Sequence

import numpy as np

from guard.errors import ModelError
from guard.freetext.featurize import BOS, CLAUSE, EOS, FEATURIZER_VERSION, GROUPS, LONG, bi_features, clause_features, mask_slots, linguistics, tri_feature, uni_features

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

    def __init__(self, labels: Sequence[str], thresholds: Sequence[float], vocabulary: dict[str, int],
                 weights: np.ndarray, intercept: np.ndarray, groups: Sequence[str], lexicon: dict[str, Any]) -> None:
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
            raise ModelError(f"weights have shape {self.weights.shape}, expected {(len(self.vocabulary), len(self.labels))}")
        if "bias" not in self.vocabulary:
            raise ModelError("vocabulary lacks the 'bias' feature")

    @classmethod
    def from_estimators(cls, featurizer: Any, model: Any, labels: Sequence[str], thresholds: Sequence[float]) -> "FreeTextClassifier":
        """Compile a fitted SpacyFeaturizer + MultiLabelLogistic into the shipped form."""
        groups = GROUPS if featurizer.groups is None else tuple(featurizer.groups)
        return cls(labels, thresholds, featurizer.vocabulary_, model.coef_.T, model.intercept_, groups, featurizer.lexicon_)

    # -- pickling: never the spaCy objects or caches ------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    # -- prediction -----------------------------------------------------------------

    @property
    def _linguistics(self):
        ling = self.__dict__.get("_ling")
        if ling is None:
            ling = linguistics(self.lexicon)
            self.__dict__.update(_ling=ling, _groups=frozenset(self.groups), _bias=self.vocabulary["bias"],
                                 _wcache={}, _ucache={}, _bcache={}, _pcache={}, _wsum={},
                                 _wlist=self.weights.astype(np.float64).tolist(),
                                 _patterns="patterns" in self.groups, _clauses="clauses" in self.groups)
        return ling

    def _columns(self, lexes: list) -> list[int]:
        """Columns of one sentence's known features (with repeats): the twin of Linguistics.features."""
        cols: list[int] = []
        self._tail(lexes, self._walk(lexes, cols), cols)
        return cols

    def _walk(self, lexes: Iterable, cols: list[int], wins: list | None = None) -> int:
        """Append the window columns of a sentence; return the OR of its lexemes' flags.

        One cache maps each window of three lexemes straight to the columns of
        the features ending on its last lexeme (unigram, bigram, trigram and the
        short pattern matches), so a warm token costs one dict hit.
        """
        d = self.__dict__
        get, window = d["_wcache"].get, self._window
        extend = cols.extend
        cols.append(d["_bias"])
        a = b = BOS
        flags = 0
        if wins is None:
            for x in lexes:
                flags |= x.flags
                c = get((a, b, x)) or window(a, b, x)
                extend(c[0])
                a, b = b, x
        else:
            keep = wins.append
            for x in lexes:
                flags |= x.flags
                c = get((a, b, x)) or window(a, b, x)
                extend(c[0])
                keep(c)
                a, b = b, x
        c = get((a, b, EOS)) or window(a, b, EOS)
        extend(c[0])
        if wins is not None:
            wins.append(c)
        return flags

    def _tail(self, lexes: list, flags: int, cols: list[int]) -> list:
        """Long pattern matches and clause features, only for sentences whose lexemes can trigger them.

        Returns the long matches (evidence reuses them)."""
        d = self.__dict__
        found: list = []
        if flags & LONG and d["_patterns"]:
            found = d["_ling"].matcher.find_long([x.m for x in lexes])
            for name, _, _ in found:
                cols.extend(self._pattern_columns(name))
        if flags & CLAUSE and d["_clauses"]:
            for f in clause_features(lexes):
                c = self.vocabulary.get(f)
                if c is not None:
                    cols.append(c)
        return found

    def _window(self, a: Any, b: Any, x: Any) -> list:
        """[columns, short pattern matches as (name, length), evidence (filled when first needed), b, x, a]
        of the features ending on x."""
        cols = self._unigram_columns(x) if x is not EOS else ()
        cols += self._bigram_columns(b, x)
        if "trigrams" in self._groups and b is not BOS and x is not EOS:
            col = self.vocabulary.get(tri_feature(a, b, x))
            if col is not None:
                cols += (col,)
        matches: tuple = ()
        if self._patterns and x is not EOS:
            matches = self._ling.matcher.ending(a.m, b.m, x.m)
            for name, _ in matches:
                cols += self._pattern_columns(name)
        wcache = self._wcache
        if len(wcache) > 1_000_000:
            for k in ("_wcache", "_ucache", "_bcache", "_wsum"):
                self.__dict__[k].clear()
        value = wcache[(a, b, x)] = [cols, matches, None, b, x, a]
        return value

    def _unigram_columns(self, x: Any) -> tuple[int, ...]:
        c = self._ucache.get(x)
        if c is None:
            vocab = self.vocabulary
            c = self._ucache[x] = tuple(vocab[f] for f in uni_features(x, self._groups) if f in vocab)
        return c

    def _bigram_columns(self, a: Any, b: Any) -> tuple[int, ...]:
        c = self._bcache.get((a, b))
        if c is None:
            vocab = self.vocabulary
            feats = bi_features(a, b) if "bigrams" in self._groups else ()
            c = self._bcache[(a, b)] = tuple(vocab[f] for f in feats if f in vocab)
        return c

    def _pattern_columns(self, name: str) -> tuple[int, ...]:
        c = self._pcache.get(name)
        if c is None:
            f = f"p={name}"
            c = self._pcache[name] = (self.vocabulary[f],) if f in self.vocabulary else ()
        return c

    def _weight(self, cols: tuple[int, ...]) -> tuple[float, ...]:
        """Summed weights per label of some columns (cached: evidence reuses them)."""
        w = self._wsum.get(cols)
        if w is None:
            if len(cols) == 1:
                w = tuple(self._wlist[cols[0]])
            elif not cols:
                w = (0.0,) * len(self.labels)
            else:
                w = tuple(map(sum, zip(*(self._wlist[c] for c in cols))))
            self._wsum[cols] = w
        return w

    def _scores(self, texts: list[str], keep: bool) -> tuple[np.ndarray, list]:
        """Log-odds per text and label; with ``keep``, each text's lexemes and long matches for evidence."""
        ling = self._linguistics
        walk, tail = self._walk, self._tail
        indices: list[int] = []
        starts: list[int] = []
        docs = []
        for lexes in ling.fast_lexes(texts):
            starts.append(len(indices))
            if keep:
                wins: list = []
                docs.append((lexes, tail(lexes, walk(lexes, indices, wins), indices), wins))
            else:
                tail(lexes, walk(lexes, indices), indices)
        if not starts:
            return np.zeros((0, len(self.labels))), docs
        contrib = self.weights[np.asarray(indices, dtype=np.int64)]
        z = np.add.reduceat(contrib, np.asarray(starts, dtype=np.int64), axis=0, dtype=np.float64) + self.intercept
        return z, docs

    def decision_function(self, texts: Iterable[str]) -> np.ndarray:
        """Per-label log-odds, shape (n, n_labels)."""
        return self._scores(_check_texts(texts), keep=False)[0]

    def predict_proba(self, texts: Iterable[str]) -> np.ndarray:
        """Per-label probabilities, shape (n, n_labels)."""
        return 1.0 / (1.0 + np.exp(-self.decision_function(texts)))

    def predict(self, texts: Iterable[str] | str, *, spans: bool = True) -> list[Prediction]:
        """One :class:`Prediction` per text (a single string counts as one text)."""
        if isinstance(texts, str):
            texts = [texts]
        texts = _check_texts(texts)
        enabled = gc.isenabled()
        gc.disable()
        try:
            return self._predict(texts, spans)
        finally:
            if enabled:
                gc.enable()

    def _predict(self, texts: list[str], spans: bool) -> list[Prediction]:
        """Runs with the cycle collector paused: a batch keeps every sentence's tokens and
        windows alive until its spans are drawn, which would otherwise trigger collections that
        walk the large per-lexeme caches again and again (it creates no cycles)."""
        z, docs = self._scores(texts, keep=spans)
        n_labels = len(self.labels)
        codes = ((z >= self._logit_thresholds) @ (1 << np.arange(n_labels))).tolist()
        label_sets = self._label_sets
        probs = (1.0 / (1.0 + np.exp(-z))).tolist()
        labels_all = self.labels
        out = []
        evidence = self._evidence
        for i, text in enumerate(texts):
            labels = label_sets[codes[i]]
            ev = evidence(text, *docs[i], labels) if spans and labels else {}
            out.append(Prediction(text, labels, dict(zip(labels_all, probs[i])), ev))
        return out

    @property
    def _label_index(self) -> dict[str, int]:
        index = self.__dict__.get("_index")
        if index is None:
            index = self.__dict__["_index"] = {lab: j for j, lab in enumerate(self.labels)}
        return index

    @property
    def _label_sets(self) -> list[tuple[str, ...]]:
        """Label tuple of every bit pattern of decisions (bit j = label j)."""
        sets = self.__dict__.get("_sets")
        if sets is None:
            n = len(self.labels)
            sets = self.__dict__["_sets"] = [tuple(lab for j, lab in enumerate(self.labels) if code >> j & 1) for code in range(1 << n)]
        return sets

    @property
    def _logit_thresholds(self) -> np.ndarray:
        """The thresholds as log-odds, so decisions compare z directly (same result as prob >= t)."""
        t = np.clip(self.thresholds, 1e-12, 1 - 1e-12)
        return np.log(t / (1 - t))

    def evidence(self, text: str, labels: Iterable[str] | None = None) -> dict[str, list[Span]]:
        """Which words pushed each label up (default: every label), as character spans."""
        _, docs = self._scores([text], keep=True)
        return self._evidence(text, *docs[0], tuple(self.labels if labels is None else labels))

    def _window_evidence(self, win: list) -> tuple:
        """Per label, the strongest feature of a window if its weight reaches MIN_EVIDENCE:
        (weight, from, to, trimmed from, trimmed to) in token positions relative to the window's last
        token (a word, the word pair, the three words, or a short pattern match ending there; trimmed
        as :meth:`_trim` would). Stored in the window."""
        cols, matches, _, b, x, a = win
        if x is EOS:
            n_uni, bigram = 0, (-1, 0)
        else:
            n_uni, bigram = len(self._unigram_columns(x)), (-1 if b is not BOS else 0, 1)
        n_bi = len(self._bigram_columns(b, x))
        pattern = [(1 - length, 1) for name, length in matches for _ in self._pattern_columns(name)]
        n_tri = len(cols) - n_uni - n_bi - len(pattern)
        extents = [(0, 1)] * n_uni + [bigram] * n_bi + [(-2, 1)] * n_tri + pattern
        wlist = self._wlist
        best: list = [None] * len(self.labels)
        for c, (s, e) in zip(cols, extents):
            for j, wj in enumerate(wlist[c]):
                if wj >= MIN_EVIDENCE and (best[j] is None or wj > best[j][0]):
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
        value = win[2] = tuple(best)
        return value

    def _evidence(self, text: str, lexes: list, long_matches: list, wins: list, labels: tuple[str, ...],
                  top: int = 3) -> dict[str, list[Span]]:
        """The strongest evidence units (a word, a word pair, a pattern match) merged into spans."""
        index = self._label_index
        js = [index[lab] for lab in labels]
        fill = self._window_evidence
        if len(js) == 1:
            j = js[0]
            cands = {j: [(u[0], i + u[1], i + u[2], i + u[3], i + u[4]) for i, win in enumerate(wins)
                         if (u := (win[2] or fill(win))[j]) is not None]}
        else:
            evs = [win[2] or fill(win) for win in wins]
            cands = {j: [(u[0], i + u[1], i + u[2], i + u[3], i + u[4]) for i, ev in enumerate(evs) if (u := ev[j]) is not None]
                     for j in js}
        if long_matches:
            for name, s, e in long_matches:
                w = self._weight(self._pattern_columns(name))
                for j in js:
                    if w[j] >= MIN_EVIDENCE:
                        cands[j].append((w[j], s, e, *self._trim(lexes, s, e)))
        out: dict[str, list[Span]] = {}
        offsets = None
        for lab, j in zip(labels, js):
            cand = sorted(cands[j], reverse=True)[:top]
            if not cand:
                out[lab] = []
                continue
            floor = 0.4 * cand[0][0]
            chosen = sorted([(s, e) for w, _, _, s, e in cand if w >= floor and e > s])
            merged: list[list[int]] = []
            for s, e in chosen:
                if merged and s <= merged[-1][1]:
                    merged[-1][1] = max(merged[-1][1], e)
                else:
                    merged.append([s, e])
            spans = []
            if not merged:
                out[lab] = spans
                continue
            if offsets is None or len(offsets) < merged[-1][1]:
                offsets = self._offsets(text, lexes, merged[-1][1])
            for s, e in merged:
                start, last = offsets[s], lexes[e - 1]
                end = offsets[e - 1] + len(last.text)
                if last.slot:
                    close = text.find("}", offsets[e - 1])
                    end = close + 1 if close >= 0 else end
                spans.append(Span(start, end, text[start:end]))
            out[lab] = spans
        return out

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
        """Start offsets of the first ``upto`` lexemes: tokens appear in order in the masked text,
        which keeps the original offsets."""
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
        return [(f, text[s:e], {lab: float(w[j]) for j, lab in enumerate(self.labels)}) for f, w, s, e in self._located(text)]

    def _located(self, text: str) -> list[tuple[str, np.ndarray, int, int]]:
        ling = self._linguistics
        seen: set[tuple[str, int, int]] = set()
        out = []
        for f, s, e in ling.located_features(text, self._groups):
            col = self.vocabulary.get(f)
            if col is None or (f, s, e) in seen:
                continue
            seen.add((f, s, e))
            out.append((f, self.weights[col], s, e))
        return out


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
    full.update({
        "name": path.stem,
        "format_version": FORMAT_VERSION,
        "featurizer_version": clf.featurizer_version,
        "labels": list(clf.labels),
        "thresholds": {lab: round(float(t), 4) for lab, t in zip(clf.labels, clf.thresholds)},
        "libraries": library_versions(),
        "n_features": len(clf.vocabulary),
        "feature_groups": list(clf.groups),
        "model_file": {"name": path.name, "sha256": file_sha256(path), "bytes": path.stat().st_size},
    })
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
        problems.append(f"featurizer_version is {card.get('featurizer_version')!r}, this guard computes version {FEATURIZER_VERSION} features (retrain with `guard train`)")
    if card.get("labels") != list(_labels()):
        problems.append(f"labels are {card.get('labels')!r}, this guard expects {list(_labels())}")
    installed = installed or library_versions()
    recorded = card.get("libraries") or {}
    for lib, parts in CHECKED_LIBRARIES.items():
        want, have = recorded.get(lib), installed.get(lib)
        if want is None:
            problems.append(f"the card does not record the {lib} version")
        elif _release(want, parts) != _release(have, parts):
            problems.append(f"trained with {lib} {want}, installed is {have} (the first {parts} version part(s) must match; retrain with `guard train`)")
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
        raise ModelError(f"{path} was built with featurizer version {getattr(clf, 'featurizer_version', None)!r} but its card says {card.get('featurizer_version')!r}", location=str(path))
    if list(clf.labels) != card["labels"]:
        raise ModelError(f"{path} predicts labels {list(clf.labels)} but its card says {card['labels']}", location=str(path))
    thr = card.get("thresholds", {})
    if any(abs(float(thr.get(lab, -1)) - float(t)) > 1e-3 for lab, t in zip(clf.labels, clf.thresholds)):
        raise ModelError(f"{path} thresholds differ from its card", location=str(path))
    clf.card = card
    return clf

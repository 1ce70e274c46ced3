"""Fast paths of the free-text classifier, kept apart from the readable model.

Each piece here is a cache or a numpy mirror of something :mod:`guard.freetext.model`
computes plainly, and is documented as equal to the reference it speeds up:

- :class:`_Windows` caches, per window of three lexemes, the feature columns that
  :meth:`guard.freetext.featurize.Linguistics.features` yields for its last lexeme
  (reference: ``FreeTextClassifier._columns``) and the strongest evidence unit per label;
- :class:`_Arrays` is the numpy mirror of that cache, read by the bulk paths;
- :func:`gather_bulk` and :func:`spans_bulk` score a batch and rank its evidence with numpy
  (equal to ``FreeTextClassifier._gather_each`` and ``_spans_each``, used below ``BULK`` texts);
- :class:`_NonSpace` finds token offsets for all texts at once (equal to
  ``FreeTextClassifier._offsets``, which searches text by text).

Nothing here is pickled: the model drops every private attribute when saved.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any, NamedTuple

import numpy as np

from guard.freetext.featurize import (
    BOS,
    COND,
    EOS,
    LEAD,
    LONG,
    MIN_EVIDENCE,
    bi_features,
    tri_feature,
    uni_features,
)


class Unit(NamedTuple):
    """The strongest evidence for one label in one window, in token positions.

    Relative to the window's last token; the model adds the window's position.
    Units rank as tuples: weight first.
    """

    weight: float
    start: int
    end: int
    trim_start: int
    """``start`` past punctuation and the sentence boundaries."""
    trim_end: int


_unit = tuple.__new__


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


class _Windows(dict):
    """Every window of three lexemes (a, b, x) seen so far, mapped to a small id.

    A window stands for the features ending on its last lexeme x (unigram, bigram,
    trigram, short pattern matches): their columns and, per label, the strongest
    of them as evidence. A warm window costs one dict hit (``map(windows.__getitem__,
    ...)`` runs in C); ``__missing__`` builds a new one. Windows with the same columns
    and evidence share an id: those whose first lexeme adds nothing share their pair's
    (:meth:`_pair`), and pairs whose first lexeme adds nothing share x's own, so a cold
    pass builds one id per distinct content, not per distinct triple. The per-id data is
    mirrored in numpy arrays so that a batch is scored and its evidence ranked in bulk.
    """

    #: Id of the pseudo-window holding only the bias column, which starts every sentence: that of the key
    #: (EOS, BOS, BOS), which ends a batch's previous text and starts the next.
    BIAS = 0
    #: What the keys (x, EOS, BOS), between two texts of a batch, look up: no window.
    BETWEEN = -1
    #: Above this many windows the cache starts afresh (checked between batches, so ids stay valid).
    #: A window costs about 1 KB with its share of spaCy's strings (measured: 38 MB traced for the
    #: 40,892 windows of 31,000 distinct sentences), so the cache stays under about 200 MB.
    LIMIT = 200_000

    def __init__(self, vocabulary: dict[str, int], weights: np.ndarray, groups: frozenset[str], matcher: Any) -> None:
        super().__init__()
        self.vocabulary, self.groups, self.matcher = vocabulary, groups, matcher
        #: the model's weights as float64, one row per column
        self.weights = np.asarray(weights, dtype=np.float64)
        self.n_labels = self.weights.shape[1]
        self.trigrams, self.patterns = "trigrams" in groups, "patterns" in groups
        self.bigrams = "bigrams" in groups
        #: per column, the (label, weight) pairs that can be evidence, labels in order
        self.strong: list[tuple[tuple[int, float], ...]] = [()] * len(self.weights)
        rows, labels = np.nonzero(self.weights >= MIN_EVIDENCE)
        for r, j, w in zip(rows.tolist(), labels.tolist(), self.weights[rows, labels].tolist()):
            self.strong[r] += ((j, w),)
        #: the columns that can be evidence (those with an entry in ``strong``)
        self.strong_cols = frozenset(rows.tolist())
        #: every ending " b x" of a known trigram "t=a b x" (each tail after a space): a trigram is looked up
        #: only for a pair whose ending is one
        self._trigram_ends = frozenset(
            " " + " ".join(parts[k:])
            for f in vocabulary
            if f[:2] == "t="
            for parts in [f.split(" ")]
            for k in range(1, len(parts))
        )
        self.reset()

    def reset(self) -> None:
        self.clear()
        self._ucache: dict = {}
        self._pcache: dict = {}
        self._pairs: dict = {}
        self._alone: dict = {}
        self._ubest: dict = {}
        self._ends: dict = {}
        self._needs: dict = {}
        none = (None,) * self.n_labels
        self.cols: list[tuple[int, ...]] = [(self.vocabulary["bias"],)]
        self.units: list[tuple[Unit | None, ...]] = [none]
        self.flags: list[int] = [0]
        #: per window id, its units as computed (None where there are none)
        self._evidence: list[tuple | None] = [None]
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
        if x is BOS:  # between two texts of a batch laid out in one sequence (FreeTextClassifier._batch)
            i = self[key] = self.BIAS if b is BOS else self.BETWEEN
            return i
        pair = self._pairs.get((b, x))
        if pair is None:
            pair = self._pairs[(b, x)] = self._pair(b, x)
        i, n_ub, short, third, trigram = pair
        tri = self.vocabulary.get(tri_feature(a, b, x)) if trigram else None
        found = a.m[0]
        third = third and not third.isdisjoint(found)
        long = a.m[3] and self.patterns and self.matcher.may_start_long(a.m, b.m, x.m)
        if tri is not None or third or long:
            cols = self.cols[i][:n_ub] + (() if tri is None else (tri,))
            added = cols[n_ub:]
            pattern: list[tuple[int, int]] = []
            for n, first, pcols, extent in short:
                if n < 3 or first in found:
                    cols += pcols
                    pattern += [extent] * len(pcols)
                    if n == 3:
                        added += pcols
            # columns that cannot be evidence leave the pair's evidence as it is (their extents alone reach a)
            same = self.strong_cols.isdisjoint(added)
            n_uni = len(self._ucache[x]) if x is not EOS else 0
            units = self._evidence[i] if same else ()
            i = self._add(a, b, x, cols, n_uni, n_ub - n_uni, pattern, LONG if long else 0, units)
        self[key] = i
        return i

    def _pair(self, b: Any, x: Any) -> tuple:
        """What the windows ending on b x share, computed once per pair: (id of the window whose first
        lexeme adds nothing, its number of unigram and bigram columns, the short pattern variants
        ending on x whose conditions on b x hold and whose feature is known, as (length, the
        condition on the first lexeme, columns, extent) in the matcher's order, the conditions on
        the first lexeme of those of length 3, whether a known trigram ends on b x).

        A window's first lexeme adds columns only through a trigram, a pattern of length 3 or the
        start of a long pattern. Without them its columns are the unigram, bigram and short pattern
        columns of b x, and its evidence spans at most b x: BOS stands for the first lexeme, and
        every such window shares this id."""
        if x is EOS:
            cols: tuple[int, ...] = ()
        else:
            cols = self._ucache.get(x) or self.unigram_columns(x)
        n_uni = len(cols)
        if self.bigrams:  # bigram_columns, inlined: the pair is computed for every new pair of lexemes
            get = self.vocabulary.get
            c = get(f"b={b.lemma} {x.lemma}")
            if c is not None:
                cols += (c,)
            if b.abs != b.lemma or x.abs != x.lemma:
                c = get(f"a={b.abs} {x.abs}")
                if c is not None:
                    cols += (c,)
        n_ub = len(cols)
        short: tuple = ()
        pattern: tuple = ()
        third: frozenset = frozenset()
        if self.patterns and x is not EOS and x.m[2]:
            # only the conditions on b that some variant ending on x asks for matter, so the variants are
            # found once per (x, those of them b holds): most b hold none or the same few
            need = self._needs.get(x)
            if need is None:
                need = self._needs[x] = frozenset(cids[-2] for _, cids in x.m[2] if len(cids) > 1)
            key = (x, b.m[0] & need)
            ends = self._ends.get(key)
            if ends is None:
                ends = self._ends[key] = self._short_ends(key[1], x)
            short, pcols, pattern, third = ends
            cols += pcols
        if len(cols) == n_uni:
            # nor does b: the window is x's alone (its evidence is x's unigram evidence), shared by every such pair
            i = self._alone.get(x, -1)
            if i < 0:
                i = self._alone[x] = self._add(BOS, BOS, x, cols, n_uni, 0, (), 0)
        else:
            i = self._add(BOS, b, x, cols, n_uni, n_ub - n_uni, pattern, 0)
        trigram = self.trigrams and b is not BOS and x is not EOS and f" {b.abs} {x.abs}" in self._trigram_ends
        return i, n_ub, short, third, trigram

    def _short_ends(self, held: frozenset[int], x: Any) -> tuple:
        """The short pattern variants ending on x whose feature is known and whose conditions on the
        lexeme before x (holding the conditions ``held``, or at least those of them such a variant asks for)
        and on x hold, in the matcher's order, as
        (length, the condition on the first lexeme, columns, extent); the columns and extents of those
        up to length 2 (which hold whatever the first lexeme), and the first conditions of those of 3."""
        out = []
        for name, cids in x.m[2]:
            n = len(cids)
            if n == 1 or cids[-2] in held:
                pcols = self.pattern_columns(name)
                if pcols:
                    out.append((n, cids[0], pcols, (1 - n, 1)))
        cols = tuple(c for n, _, pcols, _ in out if n < 3 for c in pcols)
        pattern = tuple(extent for n, _, pcols, extent in out if n < 3 for _ in pcols)
        return tuple(out), cols, pattern, frozenset(first for n, first, _, _ in out if n == 3)

    def _add(
        self,
        a: Any,
        b: Any,
        x: Any,
        cols: tuple[int, ...],
        n_uni: int,
        n_bi: int,
        pattern: Sequence[tuple[int, int]],
        flags: int,
        units: tuple | None = (),
    ) -> int:
        """A new window id for (a, b, x) with these columns (and LONG in ``flags`` if a long pattern may
        start); its evidence units are computed unless given (None: there are none)."""
        if units == ():
            units = self._units(cols, n_uni, n_bi, pattern, a, b, x) or None
        self._evidence.append(units)
        i = len(self.cols)
        self.cols.append(cols)
        self.units.append(units or self.units[0])
        self.flags.append(flags | x.flags & (COND | LEAD))
        self._pending.append((len(x.text) if x is not EOS else 0, x.slot, units))
        return i

    def unigram_columns(self, x: Any) -> tuple[int, ...]:
        c = self._ucache.get(x)
        if c is None:
            vocab = self.vocabulary
            c = self._ucache[x] = tuple(vocab[f] for f in uni_features(x, self.groups) if f in vocab)
        return c

    def bigram_columns(self, a: Any, b: Any) -> tuple[int, ...]:
        """Columns of the bigram features of a b, in the order of ``bi_features`` (the reference of what
        :meth:`_pair` computes inline, once per pair)."""
        if "bigrams" not in self.groups:
            return ()
        get = self.vocabulary.get
        return tuple(c for c in map(get, bi_features(a, b)) if c is not None)

    def pattern_columns(self, name: str) -> tuple[int, ...]:
        c = self._pcache.get(name)
        if c is None:
            f = f"p={name}"
            c = self._pcache[name] = (self.vocabulary[f],) if f in self.vocabulary else ()
        return c

    def _units(
        self, cols: tuple[int, ...], n_uni: int, n_bi: int, pattern: Sequence[tuple[int, int]], a: Any, b: Any, x: Any
    ) -> tuple:
        """Per label, the strongest feature of a window if its weight reaches MIN_EVIDENCE:
        (weight, from, to, trimmed from, trimmed to) in token positions relative to the window's last
        token (a word, the word pair, the three words, or a short pattern match ending there; trimmed
        of punctuation and of the sentence boundaries). ``cols`` holds n_uni unigram, n_bi bigram, the
        trigram, then the pattern columns with the given extents. The first strongest column wins a
        tie. The unigram part starts every window of x: it is ranked once per lexeme, and its units are
        the window's when no other column can be evidence."""
        rest = cols[n_uni:]
        more = not self.strong_cols.isdisjoint(rest)
        if n_uni:
            hit = self._ubest.get(x)
            if hit is None:
                ranked = self._rank([None] * self.n_labels, cols[:n_uni], 0)
                hit = self._ubest[x] = (ranked, self._trimmed(ranked, cols[:n_uni], n_uni, 0, [], BOS, BOS, x))
            if not more:
                return hit[1]
            best = self._rank(list(hit[0]), rest, n_uni)
        elif more:
            best = self._rank([None] * self.n_labels, rest, 0)
        else:
            return ()
        return self._trimmed(best, cols, n_uni, n_bi, pattern, a, b, x)

    def _trimmed(
        self,
        best: list,
        cols: tuple[int, ...],
        n_uni: int,
        n_bi: int,
        pattern: Sequence[tuple[int, int]],
        a: Any,
        b: Any,
        x: Any,
    ) -> tuple:
        """The units of :meth:`_units` from the strongest column per label (see :meth:`_rank`)."""
        if not any(best):
            return ()
        n_tri = len(cols) - len(pattern)
        bigram = (-1, 0) if x is EOS else (-1 if b is not BOS else 0, 1)
        toks = (x, a, b)  # by relative position: 0, -2, -1
        first = 0 if b is BOS else -1 if a is BOS else -2
        last = 0 if x is EOS else 1
        units: list[Unit | None] = [None] * self.n_labels
        for j, u in enumerate(best):
            if u is not None:
                w, k = u
                if k < n_uni:
                    s0, e0 = 0, 1
                else:
                    s0, e0 = bigram if k < n_uni + n_bi else (-2, 1) if k < n_tri else pattern[k - n_tri]
                s, e = max(s0, first), min(e0, last)
                while s < e and toks[s].punct:
                    s += 1
                while e > s and toks[e - 1].punct:
                    e -= 1
                units[j] = _unit(Unit, (w, s0, e0, s, e))  # Unit(...) without its Python-level __new__
        return tuple(units)

    def _rank(self, best: list, cols: tuple[int, ...], offset: int) -> list:
        """``best`` (per label: (weight, column position) or None) updated with ``cols``, which sit
        from position ``offset`` on; a later column wins only with a strictly greater weight."""
        strong = self.strong
        for k, c in enumerate(cols, offset):
            for j, wj in strong[c]:
                held = best[j]
                if held is None or wj > held[0]:
                    best[j] = (wj, k)
        return best

    def arrays(self) -> _Arrays:
        """The numpy mirror of every window so far (windows added since the last call are copied in)."""
        n, done = len(self.cols), self._synced
        if done < n:
            old = self._arrays
            new_cols = self.cols[done:]
            lens = list(map(len, new_cols))
            ptr = np.cumsum([self._n_cols] + lens[:-1])
            flat = np.fromiter(chain.from_iterable(new_cols), dtype=np.intp, count=sum(lens))
            rows, self._pending = self._pending, []
            evw, ext = _grown(old.evw, done, (), n), _grown(old.ext, done, (), n)
            evw[done:n], ext[done:n] = -np.inf, 0
            xlen, slot, evidence = zip(*rows)
            found = [
                (i, j, u)
                for i, units in enumerate(evidence, done)
                if units is not None
                for j, u in enumerate(units)
                if u is not None
            ]
            if found:
                at, label, units = zip(*found)
                values = np.fromiter(chain.from_iterable(units), dtype=np.float64, count=5 * len(units)).reshape(-1, 5)
                evw[at, label] = values[:, 0]
                ext[at, label] = values[:, 1:]
            self._arrays = _Arrays(
                _grown(old.colflat, self._n_cols, flat),
                _grown(old.ptr, done, ptr),
                _grown(old.lens, done, lens),
                _grown(old.flags, done, self.flags[done:n]),
                _grown(old.xlen, done, xlen),
                _grown(old.slot, done, slot),
                evw,
                ext,
            )
            self._synced, self._n_cols = n, self._n_cols + len(flat)
        return self._arrays


def _grown(arr: np.ndarray, used: int, rows: Sequence[Any] | np.ndarray, need: int | None = None) -> np.ndarray:
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
        joined = "\n".join(texts)
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


def gather_bulk(clf: Any, ids: np.ndarray, starts: np.ndarray, docs: list, long: dict) -> tuple[np.ndarray, np.ndarray]:
    """Equal to ``FreeTextClassifier._gather_each`` (the reference), with numpy: the windows'
    columns are gathered at once, and the few tails inserted after."""
    arr = clf._windows.arrays()
    lens = arr.lens[ids]
    ends = np.cumsum(lens)
    firsts = ends - lens
    cols = arr.colflat[np.arange(ends[-1]) + np.repeat(arr.ptr[ids] - firsts, lens)]
    col_starts = firsts[starts]
    flags = np.bitwise_or.reduceat(arr.flags[ids], starts) & clf._trigger | arr.flags[ids[starts + 1]] & clf._lead
    at: list[int] = []
    extra: list[int] = []
    if flags.any():
        col_ends = np.append(col_starts[1:], ends[-1]).tolist()
        for i in np.flatnonzero(flags).tolist():
            found, tail = clf._tail(docs[i], int(flags[i]))
            if found:
                long[i] = found
            at += [col_ends[i]] * len(tail)
            extra += tail
    if extra:
        cols = np.insert(cols, at, extra)
        col_starts = col_starts + np.searchsorted(np.asarray(at), col_starts, side="right")
    return cols, col_starts


def spans_bulk(clf: Any, texts: list[str], batch: Any, codes: np.ndarray, top: int = 3) -> list[dict[str, list[Any]]]:
    """Equal to ``FreeTextClassifier._spans_each`` (the reference), for all texts and labels at once:
    units are ranked with numpy, and offsets
    come from the layout of the non-space characters; Python only turns the few chosen token
    ranges into spans."""
    n_labels = len(clf.labels)
    label_sets = clf._label_sets()
    out: list[dict[str, list[Any]]] = [{lab: [] for lab in label_sets[c]} if c else {} for c in codes.tolist()]
    ids, starts, arr = batch.ids, batch.starts, clf._windows.arrays()
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
        rows = clf._long_units(batch, want)
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
        tiled.tolist(),
    )
    from guard.freetext.model import Span

    labels = clf.labels
    searched: dict[int, list[int]] = {}
    for i, j, s, e, start, last, n_last, ok in rows:
        text = texts[i]
        if not ok:
            offsets = searched.get(i) or searched.setdefault(i, clf._offsets(text, batch.lexes[i], len(batch.lexes[i])))
            start, last = offsets[s], offsets[e - 1]
        end = last + n_last
        out[i][labels[j]].append(_unit(Span, (start, end, text[start:end])))  # Span(...), as for Unit
    return out

"""The lexicon (word classes, Matcher patterns, keyword rules) and its two matchers.

The patterns are written once, in spaCy's Matcher format, in ``lexicon.yaml``.
:func:`spacy_matcher` builds a real ``spacy.matcher.Matcher`` from them (used to
explain and to cross-check); :class:`FastMatcher` compiles the same patterns
into set-membership tests over per-lexeme keys, because the Matcher plus a
lemmatizer component runs at about a tenth of the tokenizer's speed. The test
suite checks that both matchers return the same matches.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from guard.errors import ModelError

#: Attribute names a pattern may use, mapped to the key prefix of FastMatcher.
NATIVE_ATTRS = {"LOWER", "LIKE_NUM", "IS_ALPHA", "IS_DIGIT", "IS_PUNCT"}
CUSTOM_ATTRS = {
    "guard_lemma",
    "guard_cmp",
    "guard_sup",
    "guard_slot",
    "guard_plural",
    "guard_past",
    "guard_clock",
    "guard_year",
    "guard_ordinal",
}
#: Attributes FastMatcher keys by their value (word, lemma); every other one is a true/false flag.
VALUE_ATTRS = {"LOWER": "w", "guard_lemma": "l"}
FLAG_ATTRS = (NATIVE_ATTRS | CUSTOM_ATTRS) - VALUE_ATTRS.keys()


def default_lexicon() -> dict[str, Any]:
    """The lexicon shipped with guard, as plain data."""
    text = (resources.files("guard.freetext") / "lexicon.yaml").read_text(encoding="utf-8")
    import yaml  # only here: a shipped model carries its lexicon, and predicting never reads the file

    data = yaml.safe_load(text)
    _check_words(data)
    return data


def lexicon_sha256(lexicon: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(lexicon, sort_keys=True).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Lexicon:
    """Validated lexicon: classes as frozensets and patterns with classes expanded."""

    classes: dict[str, frozenset[str]]
    abstraction: tuple[str, ...]
    patterns: dict[str, list[list[dict[str, Any]]]]
    keywords: dict[str, str]
    sha256: str

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> Lexicon:
        try:
            classes = {k: frozenset(str(w).lower() for w in v) for k, v in data["classes"].items()}
            abstraction = tuple(data.get("abstraction", ()))
            patterns = {
                name: [[_expand_token(tok, classes) for tok in pat] for pat in pats]
                for name, pats in data["patterns"].items()
            }
            keywords = dict(data.get("keywords", {}))
        except (KeyError, TypeError, AttributeError) as exc:
            raise ModelError(f"lexicon is malformed: {exc!r}") from None
        unknown = [a for a in abstraction if a not in classes]
        if unknown:
            raise ModelError(f"lexicon abstraction names unknown classes: {unknown}")
        return cls(classes, abstraction, patterns, keywords, lexicon_sha256(data))


def _expand_token(tok: dict[str, Any], classes: dict[str, frozenset[str]]) -> dict[str, Any]:
    """Replace "@CLASS" references by the class's words; reject attributes FastMatcher lacks."""
    out: dict[str, Any] = {}
    for key, value in tok.items():
        if key == "_":
            out["_"] = {k: _expand_value(v, classes) for k, v in value.items()}
            bad = set(value) - CUSTOM_ATTRS
        elif key == "OP":
            if value != "?":
                raise ModelError(f"lexicon pattern uses OP {value!r}; only '?' is supported")
            out[key] = value
            bad = set()
        else:
            out[key] = _expand_value(value, classes)
            bad = {key} - NATIVE_ATTRS
        if bad:
            raise ModelError(f"lexicon pattern uses unsupported attribute(s) {sorted(bad)}")
    return out


def _expand_value(value: Any, classes: dict[str, frozenset[str]]) -> Any:
    if isinstance(value, dict):
        return {op: _expand_list(v, classes) for op, v in value.items()}
    return value


def _expand_list(v: Any, classes: dict[str, frozenset[str]]) -> list[str]:
    if isinstance(v, str) and v.startswith("@"):
        if v[1:] not in classes:
            raise ModelError(f"lexicon pattern refers to unknown class {v}")
        return sorted(classes[v[1:]])
    return [str(x).lower() for x in v]


def _check_words(data: dict[str, Any]) -> None:
    """Reject booleans among the words of the lexicon file.

    YAML 1.1 reads bare ``no``, ``on``, ``off`` and ``yes`` as booleans, which would
    silently become the words "false"/"true" and never match. Checked when the file is
    read, not in :meth:`Lexicon.from_data`: a model trained before this check keeps the
    lexicon it was trained with, booleans included, and must still load unchanged.
    """
    bad: list[str] = []
    for name, words in data.get("classes", {}).items():
        bad += [f"class {name}" for w in words if isinstance(w, bool)]
    for name, pats in data.get("patterns", {}).items():
        for pat in pats:
            for tok in pat:
                specs = [v for k, v in tok.items() if k not in ("_", "OP")] + list(tok.get("_", {}).values())
                for spec in specs:
                    lists = spec.values() if isinstance(spec, dict) else []
                    if any(isinstance(w, bool) for lst in lists if isinstance(lst, list) for w in lst):
                        bad.append(f"pattern {name}")
                if "LOWER" in tok and isinstance(tok["LOWER"], bool):
                    bad.append(f"pattern {name}")
    if bad:
        raise ModelError(f"lexicon.yaml has booleans where words belong (quote no/on/off/yes) in: {sorted(set(bad))}")


# --- the fast matcher -------------------------------------------------------------


def _token_conditions(tok: dict[str, Any]) -> tuple[tuple[bool, frozenset[str]], ...]:
    """A token spec as (must_intersect, keys) pairs over FastMatcher keys."""
    conds: list[tuple[bool, frozenset[str]]] = []
    items = [(k, v) for k, v in tok.items() if k not in ("_", "OP")] + list(tok.get("_", {}).items())
    for attr, value in items:
        if attr in FLAG_ATTRS:
            conds.append((bool(value), frozenset([attr])))
            continue
        prefix = VALUE_ATTRS[attr]
        if isinstance(value, dict):
            for op, words in value.items():
                keys = frozenset(f"{prefix}={w}" for w in words)
                if op == "IN":
                    conds.append((True, keys))
                elif op == "NOT_IN":
                    conds.append((False, keys))
                else:
                    raise ModelError(f"lexicon pattern uses unsupported operator {op!r}")
        else:
            conds.append((True, frozenset([f"{prefix}={str(value).lower()}"])))
    return tuple(conds)


def _variants(pattern: list[dict[str, Any]]) -> Iterable[list[dict[str, Any]]]:
    optional = [i for i, t in enumerate(pattern) if t.get("OP") == "?"]
    for keep in itertools.product((True, False), repeat=len(optional)):
        drop = {i for i, k in zip(optional, keep) if not k}
        variant = [t for i, t in enumerate(pattern) if i not in drop]
        if variant:
            yield variant


class FastMatcher:
    """All (name, start, end) matches of the lexicon's patterns over lexeme key sets.

    Each pattern is expanded into fixed-length variants of token conditions.
    :meth:`state` evaluates every distinct condition once per lexeme (cached by
    the caller) and lists the variants that may start on it; :meth:`find` then
    only tests set membership of condition ids.
    """

    def __init__(self, patterns: dict[str, list[list[dict[str, Any]]]]) -> None:
        cond_ids: dict[tuple, int] = {}
        variants: list[tuple[str, tuple[int, ...]]] = []
        seen: set[tuple] = set()
        for name, pats in patterns.items():
            for pat in pats:
                for variant in _variants(pat):
                    cids = tuple(cond_ids.setdefault(_token_conditions(t), len(cond_ids)) for t in variant)
                    if (name, cids) not in seen:
                        seen.add((name, cids))
                        variants.append((name, cids))
        self.conditions: list[tuple] = [()] * len(cond_ids)
        for cond, i in cond_ids.items():
            self.conditions[i] = cond
        self.variants = variants
        self.by_first: dict[int, list] = {}
        self.short_by_last: dict[int, list] = {}
        for v in variants:
            self.by_first.setdefault(v[1][0], []).append(v)
            if len(v[1]) <= self.SHORT:
                self.short_by_last.setdefault(v[1][-1], []).append(v)
        # a condition can only hold for a lexeme holding one key of its first positive part
        self.by_key: dict[str, list[int]] = {}
        self.negative_only: list[int] = []
        #: conditions that are one positive part (some key of a set must be there)
        self.plain = frozenset(i for i, cond in enumerate(self.conditions) if len(cond) == 1 and cond[0][0])
        #: lexeme keys -> state, shared by the lexemes that hold the same keys ("The", "the")
        self._states: dict[frozenset[str], tuple] = {}
        self._by_sat: dict[frozenset[int], tuple] = {}
        #: per condition that is not plain: the union of its negative parts (a key of it there: it fails) and
        #: the positive parts after the first (each must be hit), for :meth:`satisfied`
        self._parts: dict[int, tuple[frozenset[str], tuple[frozenset[str], ...]]] = {}
        #: every key some condition mentions
        self._mentioned = frozenset(key for cond in self.conditions for _, keys in cond for key in keys)
        for i, cond in enumerate(self.conditions):
            positive = [keys for must, keys in cond if must]
            if not positive:
                self.negative_only.append(i)
            for key in positive[0] if positive else ():
                self.by_key.setdefault(key, []).append(i)
            if i not in self.plain:
                self._parts[i] = (frozenset().union(*(s for must, s in cond if not must)), tuple(positive[1:]))

    #: Variants up to this length are matched from the last token back (see :meth:`ending`).
    SHORT = 3

    def state(self, keys: frozenset[str]) -> tuple:
        """What a lexeme contributes to matching, computed once per lexeme.

        (ids of the conditions it satisfies, variants it may start, short
        variants whose last condition it satisfies, long variants it may start).
        """
        keys = keys & self._mentioned  # the conditions read no other key: most lexemes share the few left
        hit = self._states.get(keys)
        if hit is not None:
            return hit
        sat = self.satisfied(keys)
        state = self._by_sat.get(sat)  # the rest follows from the conditions, which many lexemes share
        if state is None:
            starts = tuple(v for c in sorted(sat) for v in self.by_first.get(c, ()))
            ends = tuple(v for c in sorted(sat) for v in self.short_by_last.get(c, ()))
            long_starts = tuple(v for v in starts if len(v[1]) > self.SHORT)
            state = self._by_sat[sat] = (sat, starts, ends, long_starts)
        if len(self._states) > 100_000:
            self._states.clear()
            self._by_sat.clear()
        self._states[keys] = state
        return state

    def satisfied(self, keys: frozenset[str]) -> frozenset[int]:
        """Ids of the conditions a lexeme holding ``keys`` satisfies: equal to :meth:`satisfied_plain` (the
        reference), computed from the conditions ``keys`` can reach. A condition reached through ``by_key``
        holds its first positive part; a plain one holds, any other holds unless a key of it is in one of
        its negative parts or one of its other positive parts has none (each a set test)."""
        cands = set(self.negative_only)
        for key in keys:
            cands.update(self.by_key.get(key, ()))
        # a condition of one positive part holds for every lexeme that reaches it through by_key
        sat = cands & self.plain
        parts = self._parts
        for i in cands - sat:
            negative, positive = parts[i]
            if keys.isdisjoint(negative) and not any(keys.isdisjoint(p) for p in positive):
                sat.add(i)
        return frozenset(sat)

    def satisfied_plain(self, keys: frozenset[str]) -> frozenset[int]:
        """Ids of the conditions whose every part holds for ``keys``, as the conditions define them."""
        return frozenset(
            i for i, cond in enumerate(self.conditions) if all((not keys.isdisjoint(s)) == must for must, s in cond)
        )

    def ending(self, a: tuple, b: tuple, x: tuple) -> tuple[tuple[str, int], ...]:
        """(name, length) of the short variants matching the window a b x and ending on x."""
        out = []
        for name, cids in x[2]:
            n = len(cids)
            if n == 1 or (cids[-2] in b[0] and (n == 2 or cids[0] in a[0])):
                out.append((name, n))
        return tuple(out)

    def may_start_long(self, a: tuple, b: tuple, x: tuple) -> bool:
        """Whether a variant longer than SHORT may match from a on: its first three conditions hold
        for a, b, x (so :meth:`find_long` runs only for sentences holding such a window)."""
        return any(cids[1] in b[0] and cids[2] in x[0] for _, cids in a[3])

    def find_long(self, states: Sequence[tuple]) -> list[tuple[str, int, int]]:
        """Matches of the variants longer than SHORT."""
        n = len(states)
        out = []
        for i, st in enumerate(states):
            if not st[3]:
                continue
            for name, cids in st[3]:
                end = i + len(cids)
                if end > n:
                    continue
                j = 1
                for cid in cids[1:]:
                    if cid not in states[i + j][0]:
                        break
                    j += 1
                else:
                    out.append((name, i, end))
        return out

    def find(self, states: Sequence[tuple[frozenset[int], tuple]]) -> list[tuple[str, int, int]]:
        n = len(states)
        out: list[tuple[str, int, int]] = []
        for i, st in enumerate(states):
            for name, cids in st[1]:
                end = i + len(cids)
                if end > n:
                    continue
                for j in range(1, len(cids)):
                    if cids[j] not in states[i + j][0]:
                        break
                else:
                    out.append((name, i, end))
        return out


# --- the spaCy Matcher ------------------------------------------------------------


def register_extensions(lexeme_of) -> None:
    """Register the ``guard_*`` Token extensions the patterns use (idempotent).

    ``lexeme_of(token)`` returns the featurizer's cached lexeme record, so the
    Matcher sees exactly the values the fast matcher sees.
    """
    from spacy.tokens import Token

    getters = {
        "guard_lemma": lambda t: lexeme_of(t).lemma,
        "guard_cmp": lambda t: "guard_cmp" in lexeme_of(t).keys,
        "guard_sup": lambda t: "guard_sup" in lexeme_of(t).keys,
        "guard_slot": lambda t: "guard_slot" in lexeme_of(t).keys,
        "guard_plural": lambda t: "guard_plural" in lexeme_of(t).keys,
        "guard_past": lambda t: "guard_past" in lexeme_of(t).keys,
        "guard_clock": lambda t: "guard_clock" in lexeme_of(t).keys,
        "guard_year": lambda t: "guard_year" in lexeme_of(t).keys,
        "guard_ordinal": lambda t: "guard_ordinal" in lexeme_of(t).keys,
    }
    for name, getter in getters.items():
        Token.set_extension(name, getter=getter, force=True)


def spacy_matcher(vocab, patterns: dict[str, list[list[dict[str, Any]]]]):
    """A ``spacy.matcher.Matcher`` holding the lexicon's patterns."""
    from spacy.matcher import Matcher

    matcher = Matcher(vocab)
    for name, pats in patterns.items():
        matcher.add(name, [_spacy_pattern(p) for p in pats])
    return matcher


def _spacy_pattern(pattern: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for tok in pattern:
        spec = {}
        for key, value in tok.items():
            if key == "LOWER" and isinstance(value, dict):
                spec[key] = {op: list(v) for op, v in value.items()}
            else:
                spec[key] = value
        out.append(spec)
    return out


@lru_cache(maxsize=8)
def _compiled(sha: str, data_json: str) -> tuple[Lexicon, FastMatcher]:
    lex = Lexicon.from_data(json.loads(data_json))
    return lex, FastMatcher(lex.patterns)


def compile_lexicon(data: dict[str, Any]) -> tuple[Lexicon, FastMatcher]:
    """Validated lexicon and its fast matcher, cached per content."""
    blob = json.dumps(data, sort_keys=True)
    return _compiled(hashlib.sha256(blob.encode()).hexdigest(), blob)

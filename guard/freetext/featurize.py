"""Token features for the free-text classifier, computed with spaCy's blank English tokenizer.

Speed comes from working per *lexeme*: everything about a word (lower form,
lookup lemma, shape, suffix, classes, morphology, matcher keys) is computed once
per vocabulary entry and cached; a sentence then costs one tokenizer call, a
list of cache hits, string joins for the n-grams and the fast matcher.

This module imports spaCy lazily and never scikit-learn, so a shipped model
loads without it. The spaCy ``Language`` lives in a per-process cache and is
never pickled.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any, cast

from guard.freetext.lexicon import FastMatcher, Lexicon, compile_lexicon, register_extensions, spacy_matcher
from guard.freetext.normalize import _ASCII_PUNCT_RUN, _LONG_RUN, MAX_RUN, Normalized, normalize

if TYPE_CHECKING:
    from spacy.tokenizer import Tokenizer

#: Evidence units with a smaller weight (log-odds) are never shown as spans.
MIN_EVIDENCE = 0.2

#: Bumped whenever a change here alters the features of a text; models record it and
#: refuse to load under a different one (their weights would silently mean something else).
FEATURIZER_VERSION = 10

#: Stand-in for a ``{slot}``: a private-use character the tokenizer keeps as one token.
SLOT_CHAR = "\ue000"


def mask_slots(text: str) -> str:
    """Replace every ``{slot}`` by SLOT_CHAR plus spaces, keeping character offsets.

    Slot values are verified elsewhere, and slot names ("{days_late}") must not
    count as evidence, so the classifier sees only that a slot is there. A slot is
    what the payload's tokenizer takes for one and nothing else: the renderer prints
    ``{{...}}`` and every brace pair that is not a slot as literal text, so the
    classifier judges that text too. A text whose every brace belongs to a plain
    ``{name}`` has exactly those slots, found by one regular expression.
    """
    if SLOT_CHAR in text:
        text = text.replace(SLOT_CHAR, " ")
    if "{" not in text:
        return text
    if _PLAIN_SLOTS.fullmatch(text):
        return _SLOT.sub(_masked, text)
    return _mask_scanned(text)


#: Text whose braces are all those of plain slots (``NAME`` of :mod:`guard.payload.slots` between braces).
_PLAIN_SLOTS = re.compile(r"[^{}]*(?:\{[A-Za-z_][A-Za-z0-9_]{0,63}\}[^{}]*)*")
_SLOT = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]{0,63}\}")


def _masked(m: re.Match[str]) -> str:
    return SLOT_CHAR + " " * (m.end() - m.start() - 1)


def _mask_scanned(text: str) -> str:
    """:func:`mask_slots` for any text: the slots the payload's tokenizer finds."""
    from guard.payload.slots import scan_template  # the regex module and the findings, for odd braces only

    slots, _ = scan_template(text)
    if not slots:
        return text
    out: list[str] = []
    at = 0
    for s in slots:
        out += (text[at : s.start], SLOT_CHAR, " " * (s.end - s.start - 1))
        at = s.end
    out.append(text[at:])
    return "".join(out)


def prepare(text: str) -> Normalized:
    """What the tokenizer reads: slots masked, then the text normalised (see :mod:`guard.freetext.normalize`).

    Masking comes first so that a slot's name is never folded or broken; normalising keeps the
    private-use slot character as it is.
    """
    return normalize(mask_slots(text))


def prepare_all(texts: Sequence[str]) -> list[Normalized]:
    """``[prepare(t) for t in texts]``: an ASCII text without braces, punctuation runs or overlong runs is
    its own prepared form, which is found without the calls (most texts of a batch are such)."""
    unchanged = tuple.__new__
    punct, long_run = _ASCII_PUNCT_RUN.search, _LONG_RUN.search
    return [
        unchanged(Normalized, (t, None, None))
        if t.isascii() and "{" not in t and not punct(t) and (len(t) <= MAX_RUN or not long_run(t))
        else prepare(t)
        for t in texts
    ]


#: Digit tokens that name a point in time: a clock time ("6:40", "9am", "6.30pm"), a year, a day of the month.
_NUMERIC_KINDS = (
    (
        "guard_clock",
        re.compile(r"(?:[01]?\d|2[0-3])[:.][0-5]\d(?:[ap]\.?m\.?)?|(?:1[0-2]|0?[1-9])(?:[:.][0-5]\d)?[ap]\.?m\.?"),
    ),
    ("guard_year", re.compile(r"(?:1[89]|20)\d\d")),
    ("guard_ordinal", re.compile(r"(?:[12]?\d|3[01])(?:st|nd|rd|th)")),
)

_CONDITION = frozenset({"if", "once", "unless", "whenever", "when", "until"})
#: Modals that make a condition's second clause a consequence; "can" is left out: after a condition it
#: grants or instructs ("If you've forgotten your PIN, you can view it in the app", GUIDELINES rule 18).
_MODAL = frozenset({"will", "'ll", "would", "wo", "may", "might", "could", "must", "'d", "should", "shall"})
_LEAD_REASON = frozenset({"since", "as", "because", "given", "now"})


class Lex:
    """What the featurizer knows about one vocabulary entry."""

    __slots__ = ("text", "lower", "lemma", "abs", "uni", "keys", "space", "punct", "slot", "m", "flags")

    def __init__(self, text, lower, lemma, abs_, uni, keys, space, punct, slot, m=(frozenset(), (), (), ())):
        self.text, self.lower, self.lemma, self.abs = text, lower, lemma, abs_
        self.uni, self.keys, self.space, self.punct, self.slot = uni, keys, space, punct, slot
        self.m = m
        #: LONG: may start a long pattern; COND: a condition word; LEAD: may open a reason clause
        self.flags = (
            (LONG if m[3] else 0) | (COND if lower in _CONDITION else 0) | (LEAD if lower in _LEAD_REASON else 0)
        )


LONG, COND, LEAD = 1, 2, 4


#: Sentence boundaries, as lexemes, for the bigram features.
BOS = Lex("<s>", "<s>", "<s>", "<s>", (), frozenset(), False, False, False)
EOS = Lex("</s>", "</s>", "</s>", "</s>", (), frozenset(), False, False, False)


def uni_features(x: Lex, groups: frozenset[str]) -> tuple[str, ...]:
    """The unigram features of a lexeme that belong to the active groups."""
    return tuple(f for f in x.uni if _PREFIX_GROUP.get(f[:2], "") in groups or f[:2] not in _PREFIX_GROUP)


def bi_features(a: Lex, b: Lex) -> tuple[str, ...]:
    """Lemma bigram, plus the abstracted bigram when either side is abstracted."""
    if a.abs != a.lemma or b.abs != b.lemma:
        return (f"b={a.lemma} {b.lemma}", f"a={a.abs} {b.abs}")
    return (f"b={a.lemma} {b.lemma}",)


def tri_feature(a: Lex, b: Lex, c: Lex) -> str:
    return f"t={a.abs} {b.abs} {c.abs}"


def clause_features(lexes: Sequence[Lex]) -> list[str]:
    """Features of the sentence's clause structure, which token n-grams cannot see.

    ``s=cond_modal``: a condition clause followed, after a comma, by a modal
    ("If the card is reported lost, we'll block it": a conditional consequence);
    ``s=cond_comma``: a condition clause and a comma without a modal ("If you
    want a receipt, tap Download": an instruction); ``s=lead_reason``: a
    sentence opening with since/as/because + a clause and a comma.
    """
    out = []
    cond = comma = False
    for x in lexes:
        low = x.lower
        if not cond:
            cond = low in _CONDITION
        elif low == "," or low == ";":
            comma = True
        elif comma and low in _MODAL:
            out.append("s=cond_modal")
            break
    else:
        if cond and comma:
            out.append("s=cond_comma")
    if (
        len(lexes) > 2
        and lexes[0].lower in _LEAD_REASON
        and not lexes[1].slot
        and lexes[1].abs not in ("#NUM", "#TIMEPOINT")
    ) and any(x.lower == "," for x in lexes[2:]):
        out.append("s=lead_reason")
    return out


#: Morphology kept for the patterns only, never a feature of its own: a plural noun says nothing about a
#: claim ("workers", "households"), and as a unigram it learnt that plural weekdays are schedules, so that
#: every plural pushed against ``temporal`` ("The plant opened in 2016 and employs local workers." missed).
#: A past participle (``m=past``) is a key only too (featurizer 10): as a unigram it added about +1 causal
#: log-odds to every status in service mail ("has expired", "may be held at customs", "attempted delivery");
#: AGENT_PAST and the effect patterns keep the past verb that acts on something. Measured at a fixed C=2:
#: dev3 causal F1 0.957 -> 0.949, corpus test causal F1 beyond guard's domains 0.804 -> 0.828.
_KEY_ONLY = frozenset({"m=pl", "m=past"})

_AUXILIARIES = frozenset(
    {"be", "have", "do", "will", "shall", "can", "may", "must", "would", "could", "should", "might"}
)
#: Modals whose word alone is no evidence: "you may", "we might", "could you" are courtesy and permission in
#: service mail, while the same words before an effect verb hedge a causal claim ("may reduce the risk").
#: They have no unigram; their bigrams, the HEDGED_EFFECT pattern and ``s=cond_modal`` carry their sense.
_HEDGE_MODALS = frozenset({"may", "might", "could"})
_PREFIX_GROUP = {"w=": "words", "l=": "lemmas", "c=": "classes", "s=": "shape", "x=": "suffix"}


#: Feature groups a featurizer can switch on or off.
GROUPS = ("words", "lemmas", "classes", "shape", "suffix", "bigrams", "trigrams", "patterns", "clauses")


def _lemma_tables() -> dict[str, dict[str, Any]]:
    """spaCy's English lemma tables (lookup, exceptions, index) from spacy-lookups-data, as plain dicts.

    ``spacy.lookups.load_lookups`` reads the same files and then hashes every key into a ``Table``,
    which takes twice as long as reading them; a table's ``get(word)`` is the plain dict's.
    """
    from spacy.lookups import load_lookups
    from spacy.util import load_language_data, registry

    names = ("lemma_lookup", "lemma_exc", "lemma_index")
    try:
        files = registry.lookups.get("en")
        return {name: cast(dict, load_language_data(files[name])) for name in names}
    except Exception:  # spacy-lookups-data missing or laid out otherwise: spaCy's own loader (a Table reads alike)
        lookups = load_lookups("en", list(names))
        return {name: cast(dict, lookups.get_table(name)) for name in names}


class Linguistics:
    """spaCy tokenizer + lookup lemmas + lexicon, with per-lexeme caches.

    One instance per (lexicon, process); get it with :func:`linguistics`.
    """

    def __init__(self, lexicon: Lexicon, matcher: FastMatcher, morphology: dict[str, Any]) -> None:
        import spacy

        self.lexicon = lexicon
        tables = _lemma_tables()
        #: irregular verb forms -> lemmas, and the verbs' base forms (spaCy's rule lemmatizer tables)
        self.verb_exc: dict[str, list[str]] = dict(tables["lemma_exc"]["verb"])
        self.verb_index = frozenset(tables["lemma_index"]["verb"])
        self.matcher = matcher
        self.nlp = spacy.blank("en")
        self.vocab = self.nlp.vocab
        self.strings = self.vocab.strings
        self.tokenizer: Tokenizer = self.nlp.tokenizer
        #: word -> lookup lemma
        self.lemmas: dict[str, Any] = tables["lemma_lookup"]
        #: the lexicon's corrections of the lookup table ("as" is not the plural of "a")
        self.lemma_fix: dict[str, str] = dict(cast(dict, morphology.get("lemma", {})))
        self.cmp_forms = frozenset(morphology.get("comparative", ()))
        self.sup_forms = frozenset(morphology.get("superlative", ()))
        self.not_cmp = frozenset(morphology.get("not_comparative", ()))
        self.not_sup = frozenset(morphology.get("not_superlative", ()))
        self.month_by_case = frozenset(morphology.get("month_by_case", ()))
        #: words spaCy calls like_num that only order ("first"): no number features for them. Set on the
        #: lexemes themselves, so that spaCy's own Matcher (the cross-check) reads the same LIKE_NUM.
        for word in morphology.get("not_number", ()):
            for form in {word, word.capitalize(), word.upper()}:
                self.vocab[form].like_num = False
        self.word_classes: dict[str, tuple[str, ...]] = {}
        for name, words in lexicon.classes.items():
            for w in words:
                self.word_classes[w] = self.word_classes.get(w, ()) + (name,)
        self.cache: dict[int, Lex] = {}
        self.chunks: dict[str, tuple] = {}
        #: chunk -> its lexemes (those of ``chunks``), and the chunks whose first token texts are not empty (that
        #: may end a special case's token pair): a text holding none of them is its chunks' lexemes in order
        self._chunk_lexes: dict[str, list[Lex]] = {}
        self._edges: set[str] = set()
        self._pairs: frozenset | None = None
        self._lock = threading.Lock()
        self._spacy_matcher: Any = None

    # -- lexemes --------------------------------------------------------------------

    def lemma(self, lower: str) -> str:
        fixed = self.lemma_fix.get(lower)
        if fixed is not None:
            return fixed
        found = self.lemmas.get(lower)
        return found.lower() if isinstance(found, str) else lower

    def lex(self, orth: int) -> Lex:
        hit = self.cache.get(orth)
        if hit is None:
            hit = self.cache[orth] = self._make_lex(orth)
        return hit

    def _make_lex(self, orth: int) -> Lex:
        text = self.strings[orth]
        if not text.strip():
            return Lex(text, text, text, text, (), frozenset(), True, False, False)
        vlex = self.vocab[orth]
        lower = text.lower()
        slot = SLOT_CHAR in text
        if slot:
            lower = lemma = abs_ = "#SLOT"
            keys = frozenset(["guard_slot", "w=#slot", "l=#slot"])
            return Lex(text, lower, lemma, abs_, ("slot",), keys, False, False, True, self.matcher.state(keys))
        lemma = self.lemma(lower)
        classes: tuple[str, ...] = self.word_classes.get(lower, ())
        if lemma != lower:
            classes += tuple(c for c in self.word_classes.get(lemma, ()) if c not in classes)
        if lower in self.month_by_case and not text[:1].isupper():
            classes = tuple(c for c in classes if c != "TIMEPOINT")
        found = {f"w={lower}", f"l={lemma}"}
        like_num = bool(vlex.like_num)
        for flag, on in (
            ("LIKE_NUM", like_num),
            ("IS_ALPHA", vlex.is_alpha),
            ("IS_DIGIT", vlex.is_digit),
            ("IS_PUNCT", vlex.is_punct),
        ):
            if on:
                found.add(flag)
        morph = []
        if self._is_cmp(lower, lemma):
            found.add("guard_cmp")
            morph.append("m=cmp")
        if self._is_sup(lower, lemma):
            found.add("guard_sup")
            morph.append("m=sup")
        plural = (
            lemma != lower and lemma not in _AUXILIARIES and lower in (lemma + "s", lemma + "es", lemma[:-1] + "ies")
        )
        if plural:
            found.add("guard_plural")
            morph.append("m=pl")
        elif lemma not in _AUXILIARIES and "guard_cmp" not in found and self.is_past(lower):
            found.add("guard_past")
            morph.append("m=past")
        alpha = vlex.is_alpha  # all letters: no digit, so no numeric kind (each asks for one) and no ``dig``
        if not alpha:
            for key, pattern in _NUMERIC_KINDS:
                if pattern.fullmatch(lower):
                    found.add(key)
                    morph.append(f"m={key[6:]}")
        digit = not like_num and not alpha and any(ch.isdigit() for ch in text)
        if like_num or digit:
            abs_ = "#NUM"
        elif classes:
            abs_ = next((f"#{c}" for c in self.lexicon.abstraction if c in classes), lemma)
        else:
            abs_ = lemma
        month = lower in self.month_by_case and text[:1].isupper()
        uni = [] if lower in _HEDGE_MODALS and not month else [f"w={lower}"]
        if lemma != lower and uni:
            uni.append(f"l={lemma}")
        uni.extend(f"c={c}" for c in classes)
        if not vlex.is_alpha:
            uni.append(f"s={vlex.shape_}")
        elif len(lower) > 4 and lemma not in _AUXILIARIES:
            uni.append(f"x={lower[-3:]}")
        if like_num:
            uni.append("num")
        if digit:
            uni.append("dig")
        uni.extend(m for m in morph if m not in _KEY_ONLY)
        keys = frozenset(found)
        return Lex(
            text, lower, lemma, abs_, tuple(uni), keys, False, bool(vlex.is_punct), False, self.matcher.state(keys)
        )

    def is_past(self, lower: str) -> bool:
        """Whether a word is a past tense or past participle form of a verb.

        Irregular forms come from the verb exceptions of spaCy's lemmatizer tables ("went", "led",
        "shown"); a regular form is "-ed" on a known verb ("caused", "united", "stopped", "carried").
        A lookup lemma that merely differs from the word ("children", "data", "these", "an") says
        nothing about tense.
        """
        if lower.endswith(("ing", "s")) or lower in self.verb_index:
            return False
        lemmas = self.verb_exc.get(lower)
        if lemmas is not None:
            return any(lemma != lower for lemma in lemmas)
        if not lower.endswith("ed") or len(lower) < 4:
            return False
        stem = lower[:-2]
        candidates = (
            stem,
            stem + "e",
            stem[:-1] + "y" if stem.endswith("i") else "",
            stem[:-1] if len(stem) > 2 and stem[-1] == stem[-2] else "",
        )
        return any(c in self.verb_index for c in candidates if c)

    def _is_cmp(self, lower: str, lemma: str) -> bool:
        if lower in self.cmp_forms:
            return True
        if lemma == lower or lower in self.not_cmp or not lower.endswith("er") or len(lemma) < 2:
            return False
        return lower in (lemma + "er", lemma + "r", lemma[:-1] + "ier", lemma[:-2] + "ier", lemma + lemma[-1] + "er")

    def _is_sup(self, lower: str, lemma: str) -> bool:
        if lower in self.sup_forms:
            return True
        if lemma == lower or lower in self.not_sup or not lower.endswith("st") or len(lemma) < 2:
            return False
        return lower in (
            lemma + "est",
            lemma + "st",
            lemma[:-1] + "iest",
            lemma[:-2] + "iest",
            lemma + lemma[-1] + "est",
        )

    # -- documents ------------------------------------------------------------------

    def lexes(self, texts: Iterable[str]) -> Iterable[list[Lex]]:
        """Non-space lexemes of each text (prepared: slots masked, normalised)."""
        from spacy.attrs import ORTH

        get, make = self.cache.get, self.lex
        for doc in self.tokenizer.pipe(prepare(t).text for t in texts):
            out = [get(o) or make(o) for o in doc.to_array(ORTH).tolist()]
            yield [x for x in out if not x.space]

    def fast_lexes(self, texts: Iterable[str], *, prepared: bool = False) -> Iterable[list[Lex]]:
        """The same as :meth:`lexes`, from a cache of whitespace-separated chunks (``prepared``: the
        texts are already the output of :func:`prepare`).

        spaCy tokenizes each chunk on its own (its cache works per chunk), except
        that a special case ("'cause", ":-)") is matched over the whole document; a
        text with a chunk boundary inside such a token pair goes through spaCy itself.
        Chunks not seen before are tokenized together, in one document (see :meth:`_new_chunks`).
        """
        from spacy.attrs import ORTH

        if self._pairs is None:
            self._pairs = self._special_pairs()
        pairs, chunks, tokenizer = self._pairs, self.chunks, self.tokenizer
        get, make = self.cache.get, self.lex
        masked = list(texts) if prepared else [prepare(t).text for t in texts]
        split = [t.split() for t in masked]
        new = {c for cs in split for c in cs if c not in chunks}
        if new:
            self._new_chunks(new)
        lexes_of = self._chunk_lexes
        edges = self._edges
        for text, cs in zip(masked, split):
            if edges.isdisjoint(cs):
                # no chunk that may end a special case's pair: the chunks' lexemes in order
                try:
                    yield list(chain.from_iterable(map(lexes_of.__getitem__, cs)))
                    continue
                except KeyError:  # a chunk dropped when the cache started afresh
                    pass
            out: list[Lex] = []
            prev = None
            for c in cs:
                hit = chunks.get(c) or self._chunk(c)
                if hit[1] and prev and any((a, b) in pairs for a in prev for b in hit[1]):
                    out = [
                        x for x in [get(o) or make(o) for o in tokenizer(text).to_array(ORTH).tolist()] if not x.space
                    ]
                    break
                out += hit[0]
                prev = hit[2]
            yield out

    def _new_chunks(self, new: set[str]) -> None:
        """Cache the chunks ``new`` (each a non-empty run without whitespace) as :meth:`_chunk` would,
        tokenized together in one document (see :meth:`_glued`). Pair texts: only a chunk that begins
        with a text that may end a special case's token pair, or ends with one that may begin it, can
        have them, and only one holding a token of a special case that splits its text otherwise is
        tokenized again without special cases (for the others that gives the same tokens)."""
        if len(self.chunks) + len(new) > 500_000:
            self._drop_chunks()
        order = list(new)
        groups = self._glued(self.tokenizer, order)
        if groups is None:  # never seen; the chunk by chunk way is always right
            for c in order:
                self._chunk(c)
            return
        # c.startswith(right) or c.endswith(left), with the one-character texts (most letters end a pair
        # text) looked up first
        first_set, last_set, right_long, left_long = self._right, self._left, self._right_long, self._left_long
        edge = [
            k
            for k, c in enumerate(order)
            if c[-1:] in last_set or c[:1] in first_set or c.startswith(right_long) or c.endswith(left_long)
        ]
        special = self._special_orths
        redo = [k for k in edge if not special.isdisjoint(groups[k])]
        bare = dict(zip(redo, self._glued(self._bare, [order[k] for k in redo]) or [])) if redo else {}
        make, chunks, strings, lexes_of, known = self.lex, self.chunks, self.strings, self._chunk_lexes, self.cache
        for c, orths in zip(order, groups):
            lexes = lexes_of[c] = [x for x in map(make, orths) if not x.space]
            chunks[c] = (lexes, (), ())
        for k in edge:
            toks = groups[k]
            b = bare.get(k)
            first: tuple[str, ...]
            last: tuple[str, ...]
            if b is None:
                if not special.isdisjoint(toks):  # never seen, as above
                    self._chunk(order[k])
                    continue
                # the chunk's own tokens, whose lexemes were just made: {t} & set is (t,) or ()
                head, tail = (known.get(toks[0]) or make(toks[0])).text, (known.get(toks[-1]) or make(toks[-1])).text
                first = (head,) if head in first_set else ()
                last = (tail,) if tail in last_set else ()
            else:
                first = tuple({strings[toks[0]], strings[b[0]]} & first_set)
                last = tuple({strings[toks[-1]], strings[b[-1]]} & last_set)
            if first or last:
                chunks[order[k]] = (chunks[order[k]][0], first, last)
            if first:
                self._edges.add(order[k])

    #: Between chunks tokenized together: a second space is a token of its own, across which no special
    #: case matches (the only special cases holding whitespace are single whitespace characters).
    _GLUE = "  "

    def _glued(self, tokenizer: Any, chunks: list[str]) -> list[list[int]] | None:
        """Token orths of each chunk, from one document of all of them joined by :data:`_GLUE`: spaCy
        splits a text at its spaces and tokenizes each piece on its own, and the second space of the
        glue is a token of its own, so the tokens between two glue tokens are one chunk's. None if
        the glue tokens do not split the document into one non-empty group per chunk."""
        from spacy.attrs import ORTH

        glue = self.strings[self._GLUE[1:]]
        groups: list[list[int]] = [[]]
        for o in tokenizer(self._GLUE.join(chunks)).to_array(ORTH).tolist():
            if o == glue:
                groups.append([])
            else:
                groups[-1].append(o)
        return groups if len(groups) == len(chunks) and all(groups) else None

    def _chunk(self, text: str) -> tuple:
        """(non-space lexemes, first token texts, last token texts) of one chunk.

        The first and last texts are those that can be part of a special case's pair, taken from
        the chunk's tokens and from its tokens without special cases (spaCy matches special cases
        over those: ": ):" is ":", ")", ":" because ":)" wins over "):"); empty when none can."""
        if len(self.chunks) > 500_000:
            self._drop_chunks()
        toks = [t.text for t in self.tokenizer(text)]
        lexes = [x for x in (self.lex(self.strings[t]) for t in toks) if not x.space]
        bare = [t.text for t in self._bare(text)]
        first = tuple({*toks[:1], *bare[:1]} & self._right)
        last = tuple({*toks[-1:], *bare[-1:]} & self._left)
        value = self.chunks[text] = (lexes, first, last)
        self._chunk_lexes[text] = lexes
        if first:
            self._edges.add(text)
        return value

    def _drop_chunks(self) -> None:
        """Start the chunk cache afresh (it is bounded), with its side tables."""
        self.chunks.clear()
        self._chunk_lexes.clear()
        self._edges.clear()

    def _special_pairs(self) -> frozenset:
        """Adjacent token pairs inside the tokenizer's multi-token special cases (their texts as the
        tokenizer without special cases splits them: all in one document, see :meth:`_glued`)."""
        from spacy.tokenizer import Tokenizer

        t = self.tokenizer
        bare = Tokenizer(
            self.vocab,
            rules={},
            prefix_search=t.prefix_search,
            suffix_search=t.suffix_search,
            infix_finditer=t.infix_finditer,
            token_match=t.token_match,
            url_match=t.url_match,
        )
        self._bare = bare
        from spacy.attrs import ORTH

        rules = [s for s in t.rules if not any(c.isspace() for c in s)]
        glued = self._glued(bare, rules) if rules else None
        split_rules = dict(zip(rules, glued)) if glued is not None else {}
        strings = self.strings
        pairs: set[tuple[str, str]] = set()
        changed: set[int] = set()
        for s, case in t.rules.items():
            orths = split_rules.get(s)
            toks = [x.text for x in bare(s)] if orths is None else [strings[o] for o in orths]
            pairs.update(zip(toks, toks[1:]))
            made = [piece[ORTH] for piece in case]
            if made != toks:
                at, split = 0, set()
                for x in toks:
                    split.add((at, x))
                    at += len(x)
                at, own = 0, []
                for m in made:
                    if (at, m) not in split:
                        own.append(m)
                    at += len(m)
                changed.add(self.strings.add(max(own, key=len)))
        #: per special case that splits its text otherwise than the tokenizer without special cases, the
        #: orth of one token it makes that the other does not (the longest, at the same place): wherever the
        #: case applies that token is there, so a chunk holding none of them is tokenized the same both ways
        self._special_orths = frozenset(changed)
        self._left, self._right = frozenset(a for a, _ in pairs), frozenset(b for _, b in pairs)
        # a chunk's first (last) token and its first (last) token without special cases both begin (end) it
        self._left_t, self._right_t = tuple(sorted(self._left)), tuple(sorted(self._right))
        self._left_long = tuple(t for t in self._left_t if len(t) > 1)
        self._right_long = tuple(t for t in self._right_t if len(t) > 1)
        return frozenset(pairs)

    def tokens(self, text: str) -> list[tuple[Lex, int, int]]:
        """Non-space lexemes of one text with their character offsets in the original text."""
        norm = prepare(text)
        doc = self.tokenizer(norm.text)
        out = []
        for t in doc:
            x = self.lex(t.orth)
            if not x.space:
                out.append((x, *norm.original(t.idx, t.idx + len(t.text))))
        return out

    def features(self, lexes: Sequence[Lex], groups: frozenset[str]) -> list[str]:
        """Feature strings of one sentence (a feature may repeat)."""
        feats = ["bias"]
        for x in lexes:
            feats.extend(uni_features(x, groups))
        if "bigrams" in groups:
            prev = BOS
            for x in lexes:
                feats.extend(bi_features(prev, x))
                prev = x
            feats.extend(bi_features(prev, EOS))
        if "trigrams" in groups and lexes:
            seq = [BOS] + list(lexes)
            feats.extend(tri_feature(seq[i], seq[i + 1], seq[i + 2]) for i in range(len(seq) - 2))
        if "patterns" in groups:
            feats.extend(f"p={name}" for name, _, _ in self.matcher.find([x.m for x in lexes]))
        if "clauses" in groups:
            feats.extend(clause_features(lexes))
        return feats

    def located_features(self, text: str, groups: frozenset[str]) -> list[tuple[str, int, int]]:
        """The features of :meth:`features`, each with the character span of the words behind it."""
        toks = self.tokens(text)
        lexes = [t[0] for t in toks]
        out: list[tuple[str, int, int]] = [("bias", 0, 0)]
        for x, s, e in toks:
            out.extend((f, s, e) for f in uni_features(x, groups))
        if "bigrams" in groups and toks:
            seq = [(BOS, toks[0][1], toks[0][1])] + toks + [(EOS, toks[-1][2], toks[-1][2])]
            for (a, s, _), (b, _, e) in zip(seq, seq[1:]):
                out.extend((f, s, e) for f in bi_features(a, b))
        if "trigrams" in groups and toks:
            if len(toks) > 1:
                out.append((tri_feature(BOS, lexes[0], lexes[1]), toks[0][1], toks[1][2]))
            for i in range(len(toks) - 2):
                out.append((tri_feature(lexes[i], lexes[i + 1], lexes[i + 2]), toks[i][1], toks[i + 2][2]))
        if "patterns" in groups:
            for name, i, j in self.matcher.find([x.m for x in lexes]):
                out.append((f"p={name}", toks[i][1], toks[j - 1][2]))
        if "clauses" in groups and toks:
            out.extend((f, toks[0][1], toks[0][2]) for f in clause_features(lexes))
        return out

    # -- the spaCy Matcher (explanations, cross-checks) -------------------------------

    def spacy_matches(self, text: str) -> list[tuple[str, int, int]]:
        """Matches of the lexicon patterns found by spaCy's own Matcher, over non-space tokens."""
        with self._lock:
            if self._spacy_matcher is None:
                register_extensions(lambda t: self.lex(t.orth))
                self._spacy_matcher = spacy_matcher(self.vocab, self.lexicon.patterns)
        from spacy.tokens import Doc

        toks = self.tokens(text)
        doc = Doc(self.vocab, words=[x.text for x, _, _ in toks], spaces=[False] * len(toks))
        found = {(self.strings[mid], s, e) for mid, s, e in self._spacy_matcher(doc)}
        return sorted(found, key=lambda m: (m[1], m[2], m[0]))


_CACHE: dict[str, Linguistics] = {}
_CACHE_LOCK = threading.Lock()


def linguistics(lexicon_data: dict[str, Any]) -> Linguistics:
    """The process-wide Linguistics for this lexicon (built on first use)."""
    lexicon, matcher = compile_lexicon(lexicon_data)
    hit = _CACHE.get(lexicon.sha256)
    if hit is None:
        with _CACHE_LOCK:
            hit = _CACHE.get(lexicon.sha256)
            if hit is None:
                hit = _CACHE[lexicon.sha256] = Linguistics(lexicon, matcher, lexicon_data.get("morphology", {}))
    return hit

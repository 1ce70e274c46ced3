"""The lexicon compiler: core.yaml + a domain's lexicon + core.lark -> one Lark grammar and its bindings.

Subjects, predicates, attribute names and counts are expanded to the finite set
of wordings each stands for and merged across entities: a wording is written
once, in one rule, and the rule records which entities it can be about, which
field each of its slots shows and which claim witnesses a state it asserts
(:class:`RuleMeta`). Merging is what keeps the grammar LALR(1) while every
entity may say "was cancelled". Everything else (courtesy, contact,
instructions, ...) is written out as Lark expressions over phrase classes, so
the language can be large (about 10^10 sentences) while the grammar stays small.

Every literal word is checked against core's claim-bearing words: a lexicon
cannot approve "faster", "tomorrow" or "because" by accident.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from guard.errors import GrammarError
from guard.shapes.lexicon import SENTENCE_CLASSES, Entity, Lexicon, Witness, _proofs
from guard.shapes.phrases import (
    SLOT_TYPES,
    Alt,
    Atom,
    Node,
    Opt,
    Punct,
    Ref,
    Seq,
    Slot,
    Word,
    expand,
    leaves,
    parse_phrase,
    refs,
    words,
)

UNIONS = ("subject", "predicate", "attr", "count", "det", "noun", "attr_head")
_PARTS = ("modifier", "relative", "pronoun", "screen")
_RULES = (*UNIONS, "screen", "object")
"""Grammar rules a sentence-class phrase may refer to as <name> (the unions, and compose.lark's screen name)."""
"""Rules of the grammar (merged unions and core.lark parts) a phrase may refer to as <name>."""
MAX_WORDINGS = 5000
"""Wordings one phrase or class may stand for when expanded (a class used in a phrase that varies more is
written out as a Lark rule instead)."""
NEVER = "NEVER"
"""A terminal guard's lexer never produces: the body of an empty sentence class."""
SLOT_TERMINALS = {t: f"{t.upper()}_SLOT" for t in SLOT_TYPES}
SCREEN = "SCREEN_NAME"
"""The terminal of a screen, menu or button name ("Track order", Settings > Security), produced by guard's lexer
and taken where compose.lark's ``screen`` rule is used."""


_Entry = tuple[tuple[Atom, ...], str, dict[str, set[str]], tuple[Witness, ...]]
"""A wording, the entity it is about, the fields its slots show by type, and the claims that prove the state it
asserts (any one of them; empty: it asserts no state)."""


def _statement_slots(trees: Iterable[Node]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The fields a statement's own slots name, by claim type, over all its forms ("{money:refund.amount_minor}
    has been refunded"): a slot of that type in the statement shows one of them. Slots inside a subject are the
    subject's."""
    by_type: dict[str, set[str]] = {}
    for tree in trees:
        for leaf in leaves(tree):
            if isinstance(leaf, Slot) and leaf.field:
                by_type.setdefault(leaf.type, set()).add(leaf.field)
    return tuple((t, tuple(sorted(fs))) for t, fs in sorted(by_type.items()))


SlotOrder = tuple[tuple[str, str], ...]
"""The (claim type, field) of a statement's own slots in the order one of its wordings writes them ("" for a slot
that names no field)."""
MAX_SLOT_ORDERS = 64
_SUBJECT_REFS = frozenset({"subject", "object"})
"""References whose slots the subject binds, not the statement."""
_SLOTLESS_REFS = frozenset({"det", "noun", "screen"})


def _slot_orders(tree: Node, has_slots: Callable[[str], bool]) -> tuple[SlotOrder, ...] | None:
    """Every order in which a statement's wordings write its own slots, so that the n-th slot of a sentence shows
    the field written n-th ("from {string:device} [in {string:location}]": a second string slot is the location,
    never the device). None where a part the statement refers to brings slots of its own, or the orders are too
    many: its slots are then bound by claim type alone."""

    def go(n: Node) -> set[SlotOrder] | None:
        if isinstance(n, (Word, Punct)):
            return {()}
        if isinstance(n, Slot):
            return {((n.type, n.field or ""),)}
        if isinstance(n, Ref):
            if n.name in _SUBJECT_REFS or n.name in _SLOTLESS_REFS:
                return {()}
            return None if n.name in _RULES or has_slots(n.name) else {()}
        if isinstance(n, Opt):
            body = go(n.body)
            return None if body is None else {(), *body}
        parts = [go(o) for o in (n.options if isinstance(n, Alt) else n.items)]
        if any(p is None for p in parts):
            return None
        if isinstance(n, Alt):
            return set().union(*parts)  # type: ignore[arg-type]
        out: set[SlotOrder] = {()}
        for p in parts:
            out = {a + b for a in out for b in p}  # type: ignore[union-attr]
            if len(out) > MAX_SLOT_ORDERS:
                return None
        return out

    orders = go(tree)
    if orders is None or len(orders) > MAX_SLOT_ORDERS:
        return None
    return tuple(sorted(orders))


PHRASE = "phrase"
"""The kind of a phrase class whose slots name fields: it binds them, and says nothing of what a subject is."""


@dataclass(frozen=True)
class Binding:
    """What one entity's reading of a rule means: the fields its slots show (by claim type) and the claims any
    one of which witnesses the state it asserts."""

    entity: str
    slots: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(claim type, fields a slot of that type may show), sorted."""
    witnesses: tuple[Witness, ...] = ()

    def fields(self, type_: str) -> tuple[str, ...]:
        for t, fs in self.slots:
            if t == type_:
                return fs
        return ()


@dataclass(frozen=True)
class RuleMeta:
    """What a generated rule means: its kind and, per entity it may be about, its binding."""

    kind: str
    bindings: tuple[Binding, ...]
    text: str = ""
    """One wording of the rule, for messages."""
    slot_orders: tuple[SlotOrder, ...] | None = None
    """For a statement: the orders its own slots come in (:func:`_slot_orders`); None: bound by type alone."""

    def placed(self, types: Sequence[str]) -> list[tuple[str, ...] | None] | None:
        """The fields each of a statement's own slots (of these claim types, in sentence order) may show by its
        place; None for a place, or for all, that only the claim type decides."""
        if self.slot_orders is None:
            return None
        fits = [o for o in self.slot_orders if len(o) == len(types) and all(t == ot for t, (ot, _) in zip(types, o))]
        if not fits:
            return None
        out: list[tuple[str, ...] | None] = []
        for i in range(len(types)):
            fields = {o[i][1] for o in fits}
            out.append(None if "" in fields else tuple(sorted(fields)))
        return out

    @property
    def entities(self) -> frozenset[str]:
        return frozenset(b.entity for b in self.bindings)

    def binding(self, entity: str) -> Binding | None:
        for b in self.bindings:
            if b.entity == entity:
                return b
        return None


@dataclass
class Compiled:
    """A domain's generated grammar source and what its rules mean."""

    domain: str
    source: str
    meta: dict[str, RuleMeta] = field(default_factory=dict)
    entities: dict[str, Entity] = field(default_factory=dict)
    attributes: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    """entity -> claim type -> fields of that type (to bind a bare value in a summary)."""
    digest: str = ""
    groups: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Shared word-group rule name -> its alternatives."""
    claim_words: frozenset[str] = frozenset()
    """Core's claim-bearing words (a screen name may hold none)."""


def _text(seq: Iterable[Atom]) -> str:
    out = []
    for a in seq:
        if isinstance(a, Slot):
            out.append("{" + a.type + "}")
        else:
            out.append(a.text)
    return " ".join(out)


def _lark_atom(a: Atom) -> str:
    if isinstance(a, Slot):
        return SLOT_TERMINALS[a.type]
    return '"' + a.text.replace("\\", "\\\\").replace('"', '\\"') + '"'


DETERMINERS = frozenset({"your", "the", "this"})


def _lark_expr(node: Node, ref: Callable[[str], str], group: Callable[[list[str]], str] | None = None) -> str:
    """A phrase as a Lark expression. A determiner is written as the ``det`` rule, as subjects write it, so the
    parser never has to choose between a literal "the" and the start of a noun phrase.

    With ``group``, alternatives of plain words become one shared rule each (``group`` names it): Lark would
    otherwise write out every combination of a phrase's alternatives as a rule of its own, and a hedge with
    seven choices is thousands of rules, LALR states and seconds of loading."""
    if isinstance(node, Word) and node.text in DETERMINERS:
        return "det"
    if isinstance(node, (Word, Punct, Slot)):
        return _lark_atom(node)
    if isinstance(node, Ref):
        return ref(node.name)
    if isinstance(node, Opt):
        return "[" + _lark_expr(node.body, ref, group) + "]"
    if isinstance(node, Alt):
        options = list(dict.fromkeys(_lark_expr(o, ref, group) for o in node.options))
        if len(options) == 1:
            return options[0]
        if group is not None and all(_plain(o) for o in node.options):
            return group(options)
        return "(" + " | ".join(options) + ")"
    return " ".join(_lark_expr(item, ref, group) for item in node.items)


def _word(a: Atom) -> str | None:
    return a.text if isinstance(a, Word) else None


def _plain(node: Node) -> bool:
    """Words and punctuation only (no slot, class, option or determiner): safe to share as one rule."""
    if isinstance(node, Word):
        return node.text not in DETERMINERS
    if isinstance(node, Punct):
        return True
    if isinstance(node, Seq):
        return all(_plain(i) for i in node.items)
    return False


class _Compiler:
    def __init__(
        self, core: Lexicon, lexicon: Lexicon, core_lark: str, where: str, inline: frozenset[tuple[str, ...]]
    ) -> None:
        self.core, self.lex, self.core_lark, self.where = core, lexicon, core_lark, where
        self.inline = inline
        self.class_src: dict[str, list[tuple[str, str]]] = {}
        for owner, lx in (("core.yaml", core), (where, lexicon)):
            for name, phrases in lx.classes.items():
                if name in UNIONS or name in _PARTS or name in SENTENCE_CLASSES:
                    raise GrammarError(f"{owner}: class name {name!r} is reserved", location=f"{owner}:classes.{name}")
                self.class_src.setdefault(name, []).extend((p, owner) for p in phrases)
        self.trees: dict[str, list[Node]] = {}
        self._expanded: dict[str, list[tuple[Atom, ...]]] = {}
        self._expanding: list[str] = []
        self.claim: dict[str, tuple[str, frozenset[str]]] = {}
        for kind, cc in core.claim_words.items():
            for w in cc.words:
                self.claim[w] = (kind, frozenset(cc.allow_in.get(w, ())))
        self.rules: list[tuple[str, str]] = []
        self.nevers: list[str] = []
        """First words of every noun and attribute name."""
        self.meta: dict[str, RuleMeta] = {}
        self.used_classes: set[str] = set()
        self._checked: set[tuple[str, tuple[str, ...]]] = set()
        self.word_errors: list[str] = []
        self.groups: dict[tuple[str, ...], str] = {}
        self._words: dict[str, frozenset[str]] = {}

    # -- phrases -------------------------------------------------------------------------
    def parse(self, text: str, context: str, where: str) -> Node:
        """A phrase's tree; its words, and those of every class it refers to, checked in ``context``."""
        tree = parse_phrase(text, where)
        self._check_words(tree, (context,), where)
        return tree

    def _check_words(self, tree: Node, contexts: tuple[str, ...], where: str) -> None:
        for w in (part for word in words(tree) for part in word.split("+")):
            hit = self.claim.get(w)
            if hit is not None and not hit[1].intersection(contexts):
                msg = f"{where}: {w!r} carries a claim ({hit[0]}) and cannot be approved wording in {contexts[-1]!r}"
                if msg not in self.word_errors:
                    self.word_errors.append(msg)
        for r in refs(tree):
            if r in _RULES:
                continue
            if r not in self.class_src:
                raise GrammarError(f"{where}: a phrase refers to unknown class <{r}>", location=where)
            key = (r, contexts)
            if key in self._checked or r in contexts:
                continue
            self._checked.add(key)
            for t, (_, owner) in zip(self.class_trees(r), self.class_src[r]):
                self._check_words(t, (r, *contexts), f"{owner}:classes.{r}")

    def class_trees(self, name: str) -> list[Node]:
        if name not in self.trees:
            self.trees[name] = [parse_phrase(p, f"{owner}:classes.{name}") for p, owner in self.class_src[name]]
        return self.trees[name]

    def expanded(self, name: str) -> list[tuple[Atom, ...]]:
        """Every wording of a phrase class (for subjects, predicates and attributes)."""
        if name in _RULES:
            raise GrammarError(f"{self.where}: <{name}> cannot be used inside an entity or predicate phrase")
        if name in self._expanded:
            return self._expanded[name]
        if name in self._expanding:
            chain = " -> ".join([*self._expanding, name])
            raise GrammarError(f"{self.where}: phrase classes refer to each other in a loop: {chain}")
        self._expanding.append(name)
        out: list[tuple[Atom, ...]] = []
        for tree in self.class_trees(name):
            out.extend(expand(tree, self.expanded, MAX_WORDINGS, f"class {name}"))
        self._expanding.pop()
        self._expanded[name] = list(dict.fromkeys(out))
        return self._expanded[name]

    def class_has_slots(self, name: str, seen: frozenset[str] = frozenset()) -> bool:
        if name in _RULES or name not in self.class_src or name in seen:
            return name in _RULES
        return any(
            isinstance(leaf, Slot) or (isinstance(leaf, Ref) and self.class_has_slots(leaf.name, seen | {name}))
            for tree in self.class_trees(name)
            for leaf in leaves(tree)
        )

    def phrase_set(self, phrases: Iterable[str], context: str, where: str) -> list[tuple[Atom, ...]]:
        out: list[tuple[Atom, ...]] = []
        for p in phrases:
            out.extend(expand(self.parse(p, context, where), self.expanded, MAX_WORDINGS, where))
        return list(dict.fromkeys(out))

    def ref(self, name: str) -> str:
        """A class as the grammar writes it: a class of plain words is the same shared word group as the same
        alternatives written in place (so "<we>" and "(i | we)" never compete), any other a rule of its own."""
        if name in _RULES:
            return name
        if name in self.class_src:
            trees = self.class_trees(name)
            if all(_plain(t) for t in trees):
                options = list(dict.fromkeys(_lark_expr(t, self.ref) for t in trees))
                return options[0] if len(options) == 1 else self.group(options)
        self.used_classes.add(name)
        return f"c_{name}"

    def group(self, options: list[str]) -> str:
        """One shared (inlined) rule per distinct set of word alternatives."""
        key = tuple(sorted(options))
        if key in self.inline:
            return "(" + " | ".join(options) + ")"
        name = self.groups.get(key)
        if name is None:
            name = self.groups[key] = f"_w{len(self.groups)}"
            self.rules.append((name, " | ".join(key)))
        return name

    def never(self, rule: str) -> str:
        """A terminal of its own that guard's lexer never produces: the body of an empty rule."""
        term = f"{NEVER}_{rule.upper()}"
        self.nevers.append(term)
        return term

    # -- merged unions ---------------------------------------------------------------------
    def union(self, kind: str, prefix: str, entries: Sequence[_Entry]) -> None:
        """Write one rule per distinct meaning; each wording appears in exactly one rule."""
        by_seq: dict[tuple[object, ...], dict[str, tuple[dict[str, set[str]], list[tuple[Witness, ...]]]]] = {}
        shown: dict[tuple[object, ...], tuple[Atom, ...]] = {}
        for seq, entity, slots, witness in entries:
            key = tuple(("slot", a.type) if isinstance(a, Slot) else (type(a).__name__, a.text) for a in seq)
            shown.setdefault(key, seq)
            per = by_seq.setdefault(key, {})
            fields, witnesses = per.setdefault(entity, ({}, []))
            for t, fs in slots.items():
                fields.setdefault(t, set()).update(fs)
            if witness and witness not in witnesses:
                witnesses.append(witness)
        groups: dict[RuleMeta, list[tuple[Atom, ...]]] = {}
        for wording, per in by_seq.items():
            bindings = []
            for entity in sorted(per):
                fields, witnesses = per[entity]
                if len(witnesses) > 1:
                    raise GrammarError(
                        f"{self.where}: {_text(shown[wording])!r} asserts two different states of {entity}",
                        location=self.where,
                    )
                bindings.append(
                    Binding(
                        entity,
                        tuple(sorted((t, tuple(sorted(fs))) for t, fs in fields.items())),
                        witnesses[0] if witnesses else (),
                    )
                )
            meta = RuleMeta(kind, tuple(bindings))
            groups.setdefault(meta, []).append(shown[wording])
        names = []
        for i, (meta, seqs) in enumerate(sorted(groups.items(), key=lambda kv: _text(kv[1][0]))):
            name = f"{prefix}{i}"
            names.append(name)
            self.meta[name] = RuleMeta(meta.kind, meta.bindings, _text(seqs[0]))
            body = "\n    | ".join(self._body(kind, s) for s in seqs)
            self.rules.append((name, body))
        self.rules.append((kind, " | ".join(names) if names else self.never(kind)))

    def _body(self, kind: str, seq: tuple[Atom, ...]) -> str:
        """A wording as a rule body. A predicate takes core's state adverb after an opening auxiliary ("is
        currently {status}") and after its "been" ("has been successfully created"), core's ``state_when`` at its
        end ("is pending at the moment"), and, when it ends in a slot, a colon before it ("Shipped on: {date}"),
        except after an auxiliary or a verb that introduces a list ("contains:")."""
        atoms = [_lark_atom(a) for a in seq]
        if kind != "predicate" or len(seq) < 2:
            return " ".join(atoms)
        aux, lists = self._core_words("auxiliary"), self._core_words("list_verb")
        if (
            isinstance(seq[-1], Slot)
            and isinstance(seq[-2], Word)
            and seq[-2].text not in aux | lists
            and not any(isinstance(a, Punct) for a in seq)
        ):
            atoms.insert(len(atoms) - 1, '[":"]')
        if _word(seq[0]) in aux and "state_adv" in self.class_src:
            atoms.insert(1, f"[{self.ref('state_adv')}]")
            if _word(seq[1]) == "been":
                atoms.insert(3, f"[{self.ref('state_adv')}]")
        if _word(seq[0]) in aux and "state_when" in self.class_src:
            atoms.append(f"[{self.ref('state_when')}]")
        return " ".join(atoms)

    def slot_fields(self, seq: tuple[Atom, ...], default: str | None, where: str) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for a in seq:
            if isinstance(a, Slot):
                f = a.field or default
                if f is None:
                    continue
                out.setdefault(a.type, set()).add(f)
        return out

    def subjects(self) -> None:
        """The parts of a subject, each merged across entities: nouns, modifiers, relative clauses, pronouns."""
        nouns: list[_Entry] = []
        mods: list[_Entry] = []
        rels: list[_Entry] = []
        pronouns: list[_Entry] = []
        for name, ent in self.lex.entities.items():
            where = f"{self.where}:entities.{name}"
            for seq in self.phrase_set(ent.nouns, "subject", f"{where}.nouns"):
                if any(isinstance(a, Slot) for a in seq):
                    raise GrammarError(f"{where}.nouns: a noun has no slot", location=where)
                nouns.append((seq, name, {}, ()))
            for seq in self.phrase_set(ent.modifiers, "subject", f"{where}.modifiers"):
                mods.append((seq, name, self.slot_fields(seq, None, where), ()))
            for seq in self.phrase_set(ent.relative, "subject", f"{where}.relative"):
                rels.append((seq, name, self.slot_fields(seq, None, where), ()))
            for seq in self.phrase_set(ent.pronouns, "subject", f"{where}.pronouns"):
                pronouns.append((seq, name, self.slot_fields(seq, None, where), ()))
        for seq in self.phrase_set(["it", "this one"], "subject", "core:pronouns"):
            for name in self.lex.entities:
                pronouns.append((seq, name, {}, ()))
        self.union("noun", "n", nouns)
        self.union("modifier", "m", mods)
        self.union("relative", "r", rels)
        self.union("pronoun", "q", pronouns)

    def _core_words(self, name: str) -> frozenset[str]:
        """The one-word entries of a class (empty when there is no such class)."""
        if name not in self._words:
            found: frozenset[str] = frozenset()
            if name in self.class_src:
                self._check_words(Ref(name), ("predicate",), f"classes.{name}")
                found = frozenset(s[0].text for s in self.expanded(name) if len(s) == 1 and isinstance(s[0], Word))
            self._words[name] = found
        return self._words[name]

    def forms(self, seqs: Iterable[tuple[Atom, ...]]) -> list[tuple[Atom, ...]]:
        """A predicate's wordings without what :meth:`_body` writes for every predicate: a state adverb after an
        opening auxiliary ("is currently {enum}" is "is {enum}") and a label colon before a final slot."""
        aux, adv, lists = self._core_words("auxiliary"), self._core_words("state_adv"), self._core_words("list_verb")
        out: list[tuple[Atom, ...]] = []
        for seq in seqs:
            if len(seq) > 2 and _word(seq[0]) in aux and _word(seq[1]) in adv:
                seq = (seq[0], *seq[2:])
            if len(seq) > 3 and _word(seq[0]) in aux and _word(seq[1]) == "been" and _word(seq[2]) in adv:
                seq = (*seq[:2], *seq[3:])
            if (
                len(seq) > 2
                and seq[-2] == Punct(":")
                and isinstance(seq[-1], Slot)
                and isinstance(seq[-3], Word)
                and seq[-3].text not in aux | lists
            ):
                seq = (*seq[:-2], seq[-1])
            out.append(seq)
        return list(dict.fromkeys(out))

    def predicates(self) -> None:
        entries: list[_Entry] = []
        for i, pred in enumerate(self.lex.predicates):
            where = f"{self.where}:predicates[{i}]"
            for e in pred.entities:
                if e not in self.lex.entities:
                    raise GrammarError(f"{where}: unknown entity {e!r}", location=where)
            for seq in self.forms(self.phrase_set(pred.forms, "predicate", where)):
                fields = self.slot_fields(seq, pred.field, where)
                if any(isinstance(a, Slot) for a in seq) and not fields:
                    raise GrammarError(f"{where}: {_text(seq)!r} has a slot but no field to bind it to", location=where)
                if not pred.proofs and not any(isinstance(a, Slot) for a in seq):
                    raise GrammarError(
                        f"{where}: {_text(seq)!r} asserts something without a slot: give the predicate a witness",
                        location=where,
                    )
                for e in pred.entities:
                    entries.append((seq, e, fields, pred.proofs))
        self.union("predicate", "p", entries)

    def attributes(self) -> dict[str, dict[str, tuple[str, ...]]]:
        entries: list[_Entry] = []
        by_type: dict[str, dict[str, set[str]]] = {}
        for name, ent in self.lex.entities.items():
            for j, at in enumerate(ent.attributes):
                where = f"{self.where}:entities.{name}.attributes[{j}]"
                if at.type not in SLOT_TYPES:
                    raise GrammarError(f"{where}: unknown claim type {at.type!r}", location=where)
                by_type.setdefault(name, {}).setdefault(at.type, set()).add(at.field)
                nouns = self.phrase_set(ent.nouns, "subject", where)
                for seq in self.phrase_set(at.names, "attr", where):
                    if any(isinstance(a, Slot) for a in seq):
                        raise GrammarError(f"{where}: an attribute name has no slot", location=where)
                    # "order total" is the noun "order" and the attribute "total" (the grammar puts a noun before
                    # any attribute), so a name that starts with its entity's noun is kept without it
                    for n in sorted(nouns, key=len, reverse=True):
                        if len(seq) > len(n) and seq[: len(n)] == n:
                            seq = seq[len(n) :]
                            break
                    entries.append((seq, name, {at.type: {at.field}}, ()))
        self.union("attr", "a", entries)
        return {e: {t: tuple(sorted(fs)) for t, fs in types.items()} for e, types in by_type.items()}

    def counts(self) -> None:
        entries: list[_Entry] = []
        for name, ent in self.lex.entities.items():
            for j, c in enumerate(ent.counts):
                where = f"{self.where}:entities.{name}.counts[{j}]"
                for n in self.phrase_set(c.nouns, "count", where):
                    entries.append(((Slot("integer", c.field), *n), name, {"integer": {c.field}}, ()))
        self.union("count", "k", entries)

    # -- expressions -----------------------------------------------------------------------
    def sentence_classes(self) -> None:
        for cls in SENTENCE_CLASSES:
            alts = []
            for tag, (owner, lx) in enumerate((("core.yaml", self.core), (self.where, self.lex))):
                for j, p in enumerate(lx.sentence_class(cls)):
                    tree = self.parse(p, cls, f"{owner}:{cls}[{j}]")
                    expr = _lark_expr(tree, self.ref, self.group)
                    slots = _statement_slots([tree])
                    if not slots:
                        alts.append(expr)
                        continue
                    # an entry whose slots name fields ("pay <object> by {date:invoice.due_date}") is its own rule,
                    # read like a statement, so that its slots show those fields
                    name = f"y{tag}_{cls}_{j}"
                    self.rules.append((name, expr))
                    orders = _slot_orders(tree, self.class_has_slots)
                    self.meta[name] = RuleMeta("statement", (Binding("", slots, ()),), p, orders)
                    alts.append(name)
            self.rules.append((cls, "\n    | ".join(alts) if alts else self.never(cls)))
        alts = []
        for j, st in enumerate(self.lex.statements):
            where = f"{self.where}:statements[{j}]"
            if st.entity is not None and st.entity not in self.lex.entities:
                raise GrammarError(f"{where}: unknown entity {st.entity!r}", location=where)
            for e in st.witnesses:
                if e not in self.lex.entities:
                    raise GrammarError(f"{where}: unknown entity {e!r} in witnesses", location=where)
            # one rule a form, so that each form's slots show the fields that form names
            for k, form in enumerate(st.forms):
                name = f"x{j}_{k}"
                tree = self.parse(form, "statement", where)
                self.rules.append((name, _lark_expr(tree, self.ref, self.group)))
                slots = _statement_slots([tree])
                if st.witnesses:
                    bindings = tuple(Binding(e, slots, _proofs(w)) for e, w in sorted(st.witnesses.items()))
                else:
                    bindings = (Binding(st.entity or "", slots, st.proofs),)
                self.meta[name] = RuleMeta("statement", bindings, form, _slot_orders(tree, self.class_has_slots))
                alts.append(name)
        self.rules.append(("stmt", " | ".join(alts) if alts else self.never("stmt")))

    def classes(self) -> None:
        done: set[str] = set()
        while self.used_classes - done:
            name = sorted(self.used_classes - done)[0]
            done.add(name)
            trees = self.class_trees(name)
            alts = list(dict.fromkeys(_lark_expr(t, self.ref, self.group) for t in trees))
            self.rules.append((f"c_{name}", "\n    | ".join(alts)))
            slots = _statement_slots(trees)
            if slots:
                # a class whose phrases bind their slots ("tracking number {identifier:order.tracking_number}"):
                # wherever no predicate or statement around it binds them, its slots show those fields
                self.meta[f"c_{name}"] = RuleMeta(PHRASE, (Binding("", slots, ()),), name)

    def run(self, domain: str) -> Compiled:
        if not self.lex.entities:
            raise GrammarError(f"{self.where}: a domain lexicon names at least one entity", location=self.where)
        self.subjects()
        self.predicates()
        attrs = self.attributes()
        self.counts()
        self.sentence_classes()
        self.classes()
        if self.word_errors:
            shown = "; ".join(self.word_errors[:20]) + ("; ..." if len(self.word_errors) > 20 else "")
            raise GrammarError(
                f"{len(self.word_errors)} claim-bearing word(s) in approved wording (put what they say in a slot, "
                f"or leave such sentences to be refused): {shown}",
                location=self.where,
            )
        lines = [self.core_lark.rstrip(), "", "// ---- generated from the lexicon ----"]
        for name, body in self.rules:
            lines.append(f"{name}: {body}")
        for t, term in SLOT_TERMINALS.items():
            lines.append(f'{term}: "<{t}>"')
        for term in self.nevers:
            lines.append(f'{term}: "<{term.lower()}>"')
        source = "\n".join(lines) + "\n"
        return Compiled(
            domain,
            source,
            self.meta,
            dict(self.lex.entities),
            attrs,
            hashlib.sha256(source.encode()).hexdigest(),
            {name: key for key, name in self.groups.items()},
            frozenset(self.claim),
        )


def compile_lexicon(
    domain: str,
    core: Lexicon,
    lexicon: Lexicon,
    core_lark: str,
    where: str,
    inline: frozenset[tuple[str, ...]] = frozenset(),
) -> Compiled:
    """The Lark source and rule meanings of a domain; the word groups in ``inline`` are written out in place
    instead of as shared rules (where sharing one would be an LALR conflict)."""
    return _Compiler(core, lexicon, core_lark, where, inline).run(domain)


def compile_files(
    domain: str,
    lexicon_path: Path,
    core_yaml: Path,
    core_lark: Path,
    inline: frozenset[tuple[str, ...]] = frozenset(),
) -> Compiled:
    """:func:`compile_lexicon` over files."""
    from guard.shapes.lexicon import read_lexicon

    core = read_lexicon(core_yaml)
    lex = read_lexicon(lexicon_path)
    if lex.claim_words:
        raise GrammarError(f"{lexicon_path.name}: claim_words belong to core.yaml only", location=str(lexicon_path))
    try:
        text = core_lark.read_text(encoding="utf-8")
    except OSError as exc:
        raise GrammarError(f"cannot read {core_lark.name}: {exc.strerror}", location=str(core_lark)) from None
    return compile_lexicon(domain, core, lex, text, lexicon_path.name, inline)


def claim_words(core: Lexicon) -> Mapping[str, str]:
    """Every claim-bearing word and its kind (for the suggestion vetting and tests)."""
    return {w: kind for kind, cc in core.claim_words.items() for w in cc.words}


__all__ = ["Binding", "RuleMeta", "Compiled", "compile_lexicon", "compile_files", "claim_words", "UNIONS"]

SOURCE_DIGEST = hashlib.sha256(Path(__file__).read_bytes()).digest()
"""This module's source as imported: part of the grammar cache key (guard/shapes/tables.py)."""

"""The sentence check on a lexicon library.

Every unit of a template (a sentence, or a line such as a greeting or a label) must parse in the domain's
library. The parse then says what each slot shows: the lexicon binds predicate forms, modifiers, attribute
names and ids to policy fields, so a slot's place names the fields it may show (checked against a payload's
claims by :func:`bind`), a subject and its predicate must be able to be about the same entity, and a state
asserted in prose needs the claim that witnesses it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import lark
import regex
from lark import Token, Tree

from guard.findings import Finding, Severity, line_col
from guard.shapes.compiler import NEVER, PHRASE, SCREEN, SLOT_TERMINALS, Compiled, RuleMeta
from guard.shapes.lexicon import Witness
from guard.shapes.sentences import SIGNED, Library
from guard.shapes.text import Sentence, split_sentences

_TERMINAL_TYPES = {v: k for k, v in SLOT_TERMINALS.items()}
_SIGNING = frozenset({"sign_off_line", "signature_line"})
_SIGN_MARKS = ("-", "\u2013", "\u2014", "~")
_SPACING = regex.compile(r"[ \t]{2,}|\t")
MAX_EXPECTED = 8
REPAIR_TRIES = 200
"""Candidate edits the nearest-phrasing search tries per failing sentence: a count, not a clock, so lint says
the same thing on a loaded machine (benchmarks/bench_sentences.py measures the time it takes)."""


@dataclass(frozen=True)
class SentenceResult:
    """One unit of a template: its span, and the kind of approved sentence it is (None: not approved, or not
    checked because a format finding comes first)."""

    index: int
    start: int
    end: int
    text: str
    shape: str | None
    checked: bool = True

    @property
    def ok(self) -> bool:
        return self.shape is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "start": self.start,
            "end": self.end,
            "text": self.text,
            "shape": self.shape,
            "checked": self.checked,
        }


@dataclass(frozen=True)
class SlotUse:
    """A slot in an approved sentence and the fields its place may show (empty: any field of its type)."""

    slot: str
    sentence: int
    start: int
    end: int
    type: str
    fields: tuple[str, ...]
    place: str
    """The lexicon's wording of the place ("shipped on {date}"), for messages."""


@dataclass(frozen=True)
class Need:
    """A state asserted in prose: the sentence, and the claims (entity, witness) any one of which proves it."""

    sentence: int
    start: int
    end: int
    options: tuple[tuple[str, Witness], ...]
    wording: str
    """The lexicon's wording of the state ("has been cancelled")."""

    def describe(self) -> str:
        """What must be true, from lexicon data only: ``order.status = cancelled``."""
        out = []
        for _, w in self.options:
            vals = w.accepted
            text = w.field + (" = " + " or ".join(vals) if vals else " (any confirmed value)")
            if text not in out:
                out.append(text)
        return " or ".join(out)


@dataclass(frozen=True)
class Bindings:
    """What a template's approved sentences bind: slot places and the prose states that need witnesses."""

    uses: tuple[SlotUse, ...] = ()
    needs: tuple[Need, ...] = ()


@dataclass
class ShapeReport:
    """What the sentence check found in one template."""

    sentences: list[SentenceResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    bindings: Bindings = field(default_factory=Bindings)

    @property
    def ok(self) -> bool:
        """Every unit approved and no finding is an error."""
        return all(s.ok for s in self.sentences) and not any(f.severity is Severity.ERROR for f in self.findings)


class _Analysis:
    """Walks one parse tree: entity agreement, slot places and witness needs."""

    def __init__(self, compiled: Compiled, index: int, base: int, length: int) -> None:
        self.c, self.index, self.base, self.length = compiled, index, base, length
        self.uses: list[SlotUse] = []
        self.needs: list[Need] = []
        self.problems: list[tuple[str, str, int, int, dict[str, Any]]] = []

    # -- helpers -----------------------------------------------------------------------
    def meta(self, node: Tree[Any]) -> RuleMeta | None:
        m = self.c.meta.get(node.data)
        return None if m is None or m.kind == PHRASE else m

    def use(self, tok: Token, fields: Iterable[str], place: str) -> None:
        self.uses.append(
            SlotUse(
                str(tok.value),
                self.index,
                self.base + int(tok.start_pos or 0),
                self.base + int(tok.end_pos or 0),
                _TERMINAL_TYPES.get(tok.type, ""),
                tuple(sorted(set(fields))),
                place,
            )
        )

    def problem(self, code: str, message: str, node: Tree[Any] | Token, data: dict[str, Any]) -> None:
        start, end = _span(node) if isinstance(node, Token) else (0, self.length)
        self.problems.append((code, message, self.base + start, self.base + end, data))

    def fields_of(self, meta: RuleMeta, entities: Iterable[str], type_: str) -> set[str]:
        out: set[str] = set()
        for e in entities:
            b = meta.binding(e)
            if b is not None:
                out.update(b.fields(type_))
        return out

    def attr_fields(self, entities: Iterable[str], type_: str) -> set[str]:
        out: set[str] = set()
        for e in entities:
            out.update(self.c.attributes.get(e, {}).get(type_, ()))
        return out

    def phrased(self, node: Tree[Any]) -> dict[int, tuple[str, ...]]:
        """The fields a phrase class under ``node`` names for its slots ("card ending in
        {identifier:payment.card_last4}"), by slot token: where the rule around it binds a slot to nothing."""
        out: dict[int, tuple[str, ...]] = {}
        for sub in node.iter_subtrees():
            m = self.c.meta.get(sub.data)
            if m is not None and m.kind == PHRASE:
                for tok in _slots(sub):
                    out[id(tok)] = m.bindings[0].fields(_TERMINAL_TYPES.get(tok.type, ""))
        return out

    def want(self, meta: RuleMeta, entities: Iterable[str], node: Tree[Any]) -> None:
        options: list[tuple[str, Witness]] = []
        for e in sorted(entities):
            b = meta.binding(e)
            if b is not None:
                options.extend((e, w) for w in b.witnesses)
        if options:
            self.needs.append(Need(self.index, self.base, self.base + self.length, tuple(options), meta.text))

    # -- the walk ----------------------------------------------------------------------
    def walk(self, node: Tree[Any]) -> None:
        handler = getattr(self, f"on_{node.data}", None)
        if handler is not None:
            handler(node)
            return
        meta = self.c.meta.get(node.data)
        if meta is not None and meta.kind in (STATEMENT, PHRASE):
            self.on_statement_rule(node, meta)
            return
        for ch in node.children:
            if isinstance(ch, Tree):
                self.walk(ch)
            elif ch.type in _TERMINAL_TYPES:
                self.use(ch, (), "")

    def on_subject(self, node: Tree[Any]) -> set[str]:
        """The entities a subject can be; binds its id, modifier and relative-clause slots."""
        ents: set[str] | None = None
        parts: list[tuple[Tree[Any], RuleMeta]] = []
        for sub in node.iter_subtrees_topdown():
            m = self.meta(sub)
            if m is not None:
                parts.append((sub, m))
                ents = set(m.entities) if ents is None else ents & m.entities
        ents = ents or set()
        if not ents and len(parts) > 1:
            words = " / ".join(repr(m.text) for _, m in parts)
            self.problem("S207", f"the parts of this subject ({words}) cannot be about the same thing", node, {})
        for sub, m in parts:
            for tok in _slots(sub):
                self.use(tok, self.fields_of(m, ents, _TERMINAL_TYPES.get(tok.type, "")), m.text)
        for sub in node.find_data("ref"):
            ids = {i for e in ents for i in self.c.entities[e].ids}
            for tok in _slots(sub):
                self.use(tok, ids, "the id after the noun")
        return ents

    def predicate(self, node: Tree[Any], subject: set[str] | None, subject_node: Tree[Any] | None) -> set[str]:
        meta = next((m for s in node.iter_subtrees_topdown() if (m := self.meta(s)) is not None), None)
        if meta is None:
            return subject or set()
        ents = set(meta.entities) if subject is None else subject & meta.entities
        if not ents:
            said = " or ".join(sorted(meta.entities))
            self.problem(
                "S207",
                f"{meta.text!r} is said of {said}, which this subject cannot be",
                node,
                {"predicate": meta.text, "entities": sorted(meta.entities)},
            )
            ents = set(meta.entities)
        phrased = self.phrased(node)
        for tok in _slots(node):
            fields = self.fields_of(meta, ents, _TERMINAL_TYPES.get(tok.type, ""))
            self.use(tok, fields or phrased.get(id(tok), ()), meta.text)
        self.want(meta, ents, node)
        return ents

    def on_statement(self, node: Tree[Any]) -> None:
        first: set[str] | None = None
        for ch in node.children:
            if not isinstance(ch, Tree):
                continue
            if ch.data == "clause":
                ents = self.on_clause(ch)
                first = (ents or None) if first is None else first
            elif ch.data == "predicate":
                self.predicate(ch, first, None)
            elif ch.data == "attr_tail":
                self.attr_tail(ch, first)
            elif ch.data == "summary":
                self.summary(ch, first or set(self.c.attributes), None)
            else:
                self.walk(ch)

    def attr_tail(self, node: Tree[Any], subject: set[str] | None) -> None:
        """A tail such as ", with a total of {total}" after a clause shows the attribute of what the clause is
        about where it can be, else of whatever the attribute's own entities are."""
        head = next(ch for ch in node.children if isinstance(ch, Tree) and ch.data == "attr_head")
        ents, attr = self.attr_np(head)
        ents = (ents & subject) or ents if subject else ents
        for ch in node.children:
            if isinstance(ch, Tree) and ch.data == "value":
                self.value(ch, ents, attr)

    def on_clause(self, node: Tree[Any]) -> set[str]:
        kids = [ch for ch in node.children if isinstance(ch, Tree)]
        names = [str(k.data) for k in kids]
        if names and names[0] in ("subject", "pronoun"):
            ents = self.on_subject(kids[0])
            if "summary" in names:
                self.summary(kids[names.index("summary")], ents, None)
            if "value" in names:
                self.value(kids[names.index("value")], ents, None)
            if "predicate" in names:
                return self.predicate(kids[names.index("predicate")], ents, kids[0])
            return ents
        if names and names[0] == "attr_np":
            ents, attr = self.attr_np(kids[0])
            for k in kids[1:]:
                if k.data == "value":
                    self.value(k, ents, attr)
            return ents
        found: set[str] = set()
        for k in kids:
            stmt = next(
                ((s, m) for s in k.iter_subtrees_topdown() if (m := self.meta(s)) is not None and m.kind == STATEMENT),
                None,
            )
            if stmt is None:
                self.walk(k)
            else:
                found |= self.on_statement_rule(*stmt)
        return found

    def attr_np(self, node: Tree[Any]) -> tuple[set[str], RuleMeta | None]:
        """The entities an attribute phrase can be about and the attribute rule ("total", "ship date")."""
        ents: set[str] | None = None
        attr: RuleMeta | None = None
        for ch in node.children:
            if not isinstance(ch, Tree):
                continue
            subjects = [ch] if ch.data == "subject" else [s for s in ch.children if isinstance(s, Tree)]
            if ch.data in ("subject", "owner"):
                for sub in subjects:
                    if sub.data == "subject":
                        s = self.on_subject(sub)
                        ents = s if ents is None else ents & s
                continue
            for sub in ch.iter_subtrees_topdown():
                m = self.meta(sub)
                if m is not None and m.kind in ("attr", "noun"):
                    if m.kind == "attr":
                        attr = m
                    ents = set(m.entities) if ents is None else ents & m.entities
        if not ents:
            self.problem("S207", "this attribute cannot belong to the thing named with it", node, {})
            ents = set(attr.entities) if attr is not None else set()
        return ents, attr

    def value(self, node: Tree[Any], ents: set[str], attr: RuleMeta | None) -> None:
        for tok in _slots(node):
            type_ = _TERMINAL_TYPES.get(tok.type, "")
            if attr is not None:
                fields = self.fields_of(attr, ents, type_)
                if not fields:
                    shown = ", ".join(sorted({t for b in attr.bindings for t, _ in b.slots}))
                    self.problem(
                        "S202",
                        f"slot {{{tok.value}}} is {type_.upper()}, but {attr.text!r} is {shown.upper()}",
                        tok,
                        {"slot": str(tok.value), "slot_type": type_, "expected": shown},
                    )
                self.use(tok, fields, attr.text)
            else:
                fields = self.attr_fields(ents, type_)
                if not fields:
                    self.problem(
                        "S202",
                        f"slot {{{tok.value}}} is {type_.upper()}, and nothing named here has a {type_} to show",
                        tok,
                        {"slot": str(tok.value), "slot_type": type_},
                    )
                self.use(tok, fields, f"a {type_} of the {' or '.join(sorted(ents))}")

    def summary(self, node: Tree[Any], ents: set[str], attr: RuleMeta | None) -> None:
        """A summary's items show the label's attribute, or their own where they name one ("Total: {total},
        shipping: {shipping}"); a value in brackets after one shows another attribute of the same thing."""
        for item in node.find_data("summary_item"):
            item_ents, item_attr = ents, attr
            head = next((ch for ch in item.children if isinstance(ch, Tree) and ch.data == "attr_head"), None)
            if head is not None:
                own, item_attr = self.attr_np(head)
                item_ents = (own & ents) or own
            values = 0
            for ch in item.children:
                if not isinstance(ch, Tree) or ch is head:
                    continue
                if ch.data == "value":
                    self.value(ch, item_ents, item_attr if values == 0 else None)
                    values += 1
                else:
                    for sub in ch.iter_subtrees_topdown():
                        m = self.meta(sub)
                        if m is not None:
                            for tok in _slots(sub):
                                self.use(tok, self.fields_of(m, m.entities, "integer"), m.text)

    def on_label_line(self, node: Tree[Any], within: set[str] | None = None) -> None:
        """A label and what follows it; labels joined by ";" ("Status: {status}; Carrier: {carrier}") each bind
        their own values; "Tracking for order {id}: ..." names whose attribute the label is."""
        parts = [ch for ch in node.children if isinstance(ch, Tree) and ch.data == "label_part"]
        if parts:
            for part in parts:
                self.on_label_line(part, within)
            return
        label = next((ch for ch in node.children if isinstance(ch, Tree) and ch.data == "label"), None)
        if label is None:
            for ch in node.children:
                if isinstance(ch, Tree) and ch.data == "summary":
                    self.summary(ch, set(within or self.c.attributes), None)
                elif isinstance(ch, Tree) and ch.data == "predicate":
                    self.predicate(ch, within or None, None)
            return
        head = next(ch for ch in label.children if isinstance(ch, Tree))
        if head.data in ("subject", "pronoun"):
            ents, attr = self.on_subject(head), None
        elif any(isinstance(ch, Tree) and ch.data == "subject" for ch in label.children):
            ents, attr = self.attr_np(label)
        else:
            ents, attr = self.attr_np(head)
        if within:
            ents = (ents & within) or ents
        for ch in node.children:
            if isinstance(ch, Tree) and ch.data == "summary":
                self.summary(ch, ents, attr)
            elif isinstance(ch, Tree) and ch.data == "predicate":
                self.predicate(ch, ents, head)

    def on_intro_line(self, node: Tree[Any]) -> None:
        """The labelled values after an intro ("Here are the details for order {id}: status {status}") bind as a
        label line's do, to the thing the intro names when their attribute can belong to it; the intro itself binds
        as any other part."""
        named: set[str] = set()

        def visit(n: Tree[Any]) -> None:
            if n.data == "subject":
                named.update(self.on_subject(n))
                return
            meta = self.c.meta.get(n.data)
            if hasattr(self, f"on_{n.data}") or (meta is not None and meta.kind in (STATEMENT, PHRASE)):
                self.walk(n)
                return
            for c in n.children:
                if isinstance(c, Tree):
                    visit(c)
                elif c.type in _TERMINAL_TYPES:
                    self.use(c, (), "")

        for ch in node.children:
            if isinstance(ch, Tree) and ch.data not in ("label", "summary"):
                visit(ch)
            elif isinstance(ch, Token) and ch.type in _TERMINAL_TYPES:
                self.use(ch, (), "")
        if any(isinstance(ch, Tree) and ch.data in ("label", "summary") for ch in node.children):
            self.on_label_line(node, named)

    def on_statement_rule(self, node: Tree[Any], meta: RuleMeta) -> set[str]:
        ents: set[str] | None = None
        for sub in node.iter_subtrees_topdown():
            if sub.data == "subject":
                s = self.on_subject(sub)
                ents = s if ents is None else ents & s
        chosen = meta.entities if ents is None or "" in meta.entities else (ents & meta.entities) or meta.entities
        covered = {id(t) for s in node.find_data("subject") for t in _slots(s)}
        own = [tok for tok in _slots(node) if id(tok) not in covered]
        types = [_TERMINAL_TYPES.get(tok.type, "") for tok in own]
        placed = meta.placed(types) or [None] * len(own)
        phrased = self.phrased(node) if meta.kind == STATEMENT else {}
        for tok, type_, fields in zip(own, types, placed):
            shown = fields if fields is not None else self.fields_of(meta, chosen, type_)
            self.use(tok, shown or phrased.get(id(tok), ()), meta.text)
        self.want(meta, chosen, node)
        return {e for e in chosen if e}


STATEMENT = "statement"


def _slots(node: Tree[Any]) -> list[Token]:
    """The slot tokens under ``node``, left to right."""
    out: list[Token] = []
    stack = [node]
    while stack:
        n = stack.pop()
        for ch in reversed(n.children):
            if type(ch) is Token:
                if ch.type in _TERMINAL_TYPES:
                    out.append(ch)
            else:
                stack.append(ch)
    out.sort(key=lambda t: t.start_pos or 0)
    return out


def _span(tok: Token) -> tuple[int, int]:
    return int(tok.start_pos or 0), int(tok.end_pos or 0)


# -- parsing and diagnostics -------------------------------------------------------------
class _Failed(Exception):
    """A sentence that does not parse: the Lark error, the index of the token it stopped at, and the parser
    state just before it."""

    def __init__(self, index: int, state: Any) -> None:
        self.index, self.state = index, state


def _parse(lib: Library, toks: list[Token], inferred: dict[int, str]) -> Tree[Any]:
    if not any(t.type == "UNTYPED_SLOT" for t in toks):
        try:
            return lib.lark.parse(toks, start="start")
        except lark.exceptions.UnexpectedToken as exc:
            idx = len(toks) if exc.token.type == "$END" else _position(toks, exc.token)
            raise _Failed(idx, exc.interactive_parser) from None
    return _feed(lib.lark.parse_interactive(None, start="start"), toks, 0, inferred)


def _position(toks: list[Token], tok: Token) -> int:
    """Where the parser stopped: tokens compare equal by their text, so ``list.index`` would find the first
    "for" of a sentence that failed at its second one."""
    return next(
        (i for i, t in enumerate(toks) if t is tok),
        next((i for i, t in enumerate(toks) if t.start_pos == tok.start_pos and t.type == tok.type), len(toks)),
    )


def _feed(ip: Any, toks: list[Token], i: int, inferred: dict[int, str]) -> Tree[Any]:
    """Feed ``toks[i:]``; an untyped slot tries each slot type the parser takes there, keeping one that parses."""
    while i < len(toks):
        t = toks[i]
        if t.type == "UNTYPED_SLOT":
            choices = sorted(c for c in ip.choices() if c in _TERMINAL_TYPES)
            first: _Failed | None = None
            for c in choices:
                branch = ip.copy()
                try:
                    branch.feed_token(Token(c, t.value, start_pos=t.start_pos, end_pos=t.end_pos))
                    tree = _feed(branch, toks, i + 1, inferred)
                except lark.exceptions.UnexpectedToken:
                    first = first or _Failed(i, ip.copy())
                    continue
                except _Failed as failed:
                    first = first or failed
                    continue
                inferred[i] = _TERMINAL_TYPES[c]
                return tree
            if choices:
                inferred.setdefault(i, _TERMINAL_TYPES[choices[0]])
            raise first or _Failed(i, ip)
        before = ip.copy()
        try:
            ip.feed_token(t)
        except lark.exceptions.UnexpectedToken:
            raise _Failed(i, before) from None
        i += 1
    before = ip.copy()
    try:
        done: Tree[Any] = ip.feed_eof()
    except lark.exceptions.UnexpectedToken:
        raise _Failed(len(toks), before) from None
    return done


def describe(terminal: str, lib: Library) -> str:
    """A terminal as an author reads it: ``"shipped"``, ``a DATE slot``, ``end of sentence``."""
    if terminal == "$END":
        return "end of sentence"
    if terminal in _TERMINAL_TYPES:
        name = _TERMINAL_TYPES[terminal].upper()
        return f"{'an' if name[0] in 'AEIOU' else 'a'} {name} slot"
    if terminal == SCREEN:
        return 'a screen or button name ("Track order", Settings > Security)'
    return f'"{lib.spelling.get(terminal, terminal)}"'


CATEGORIES = (
    ("a predicate", "predicate"),
    ("more about the subject", "subject_tail"),
    ("an attribute", "attr"),
    ("is, was or another linking verb", "copula"),
    ("a noun", "noun"),
)
"""Groups of continuations people recognise, each named by the rule whose first words they are."""


def expected(names: Iterable[str], lib: Library) -> dict[str, list[str]]:
    """The terminals a parser would take, grouped for people: slots, then the words that begin a predicate, a
    modifier, an attribute, ..., then other words, punctuation and the end."""
    groups: dict[str, list[str]] = {"slots": []}
    groups.update({label: [] for label, _ in CATEGORIES})
    groups.update({"words": [], "punctuation": [], "end": []})
    firsts = lib.firsts
    for n in sorted(names):
        if n.startswith(NEVER + "_") or n == "UNTYPED_SLOT":
            continue
        if n == "$END":
            groups["end"].append(describe(n, lib))
        elif n in _TERMINAL_TYPES:
            groups["slots"].append(describe(n, lib))
        elif lib.spelling.get(n, "a")[:1].isalnum() or lib.spelling.get(n, "") == "'s":
            label = next((lb for lb, rule in CATEGORIES if n in firsts.get(rule, ())), "words")
            groups[label].append(describe(n, lib))
        else:
            groups["punctuation"].append(describe(n, lib))
    return {k: v for k, v in groups.items() if v}


def _shown(groups: Mapping[str, list[str]]) -> str:
    parts = []
    for key, items in groups.items():
        more = f", ... ({len(items)} in all)" if len(items) > MAX_EXPECTED else ""
        listed = ", ".join(items[:MAX_EXPECTED]) + more
        parts.append(listed if key in ("slots", "words", "punctuation", "end") else f"{key} ({listed})")
    return "; ".join(parts) or "nothing"


def _distance(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def _completes(state: Any, toks: Sequence[Token]) -> bool:
    p = state.copy()
    try:
        for t in toks:
            p.feed_token(t)
        p.feed_eof()
    except lark.exceptions.UnexpectedToken:
        return False
    return True


def nearest(lib: Library, text: str, toks: list[Token], idx: int, state: Any, accepts: Iterable[str]) -> list[str]:
    """Approved phrasings one edit away at the word the parse stopped at (delete it, replace it with a word the
    grammar takes there, or insert one before it), nearest spelling first; bounded by :data:`REPAIR_TRIES`."""
    bad = toks[idx] if idx < len(toks) else None
    rest = toks[idx + 1 :] if bad is not None else []
    found: list[tuple[int, str]] = []
    if bad is not None and _completes(state, rest):
        found.append((len(str(bad.value)), _edit(text, bad, None)))
    cands = [a for a in accepts if a != "$END" and not a.startswith(NEVER + "_") and a != "UNTYPED_SLOT"]
    bad_word = str(bad.value) if bad is not None else ""
    cands.sort(key=lambda a: _distance(bad_word, lib.spelling.get(a, "")))
    for a in cands[:REPAIR_TRIES]:
        if len(found) >= 3:
            break
        shown = "{" + _TERMINAL_TYPES[a] + "}" if a in _TERMINAL_TYPES else lib.spelling.get(a, a)
        tok = Token(a, shown)
        if bad is not None and _completes(state, [tok, *rest]):
            found.append((_distance(bad_word, shown), _edit(text, bad, shown)))
        elif _completes(state, [tok, *toks[idx:]]):
            found.append((len(shown) + 1, _insert(text, toks, idx, shown)))
    found.sort(key=lambda f: f[0])
    return list(dict.fromkeys(f[1] for f in found))[:3]


def _edit(text: str, tok: Token, word: str | None) -> str:
    start, end = _span(tok)
    if word is None:
        while end < len(text) and text[end] == " ":
            end += 1
        return (text[:start] + text[end:]).strip()
    return text[:start] + word + text[end:]


def _insert(text: str, toks: list[Token], idx: int, word: str) -> str:
    if idx >= len(toks):
        return text.rstrip() + " " + word
    start = _span(toks[idx])[0]
    return text[:start] + word + " " + text[start:]


# -- the check -----------------------------------------------------------------------------
def check_template(
    template: str,
    library: Library,
    slot_types: Mapping[str, str],
    skip: Sequence[tuple[int, int]] = (),
) -> ShapeReport:
    """Check every unit of ``template``; ``skip`` are spans already reported as unsafe (not parsed)."""
    report = ShapeReport()
    uses: list[SlotUse] = []
    needs: list[Need] = []
    signed = False
    for sent in split_sentences(template):
        if any(a < sent.end and sent.start < b for a, b in skip):
            report.sentences.append(SentenceResult(sent.index, sent.start, sent.end, sent.text, None, False))
            continue
        findings, tree, analysis = _check_unit(
            template, library, sent, slot_types, signed or template[: sent.start].rstrip().endswith(_SIGN_MARKS)
        )
        report.findings.extend(findings)
        ok = tree is not None and not any(f.severity is Severity.ERROR for f in findings)
        report.sentences.append(
            SentenceResult(sent.index, sent.start, sent.end, sent.text, _kind(tree) if ok else None)
        )
        last = report.sentences[-1]
        signed = last.shape in _SIGNING or (last.shape == "courtesy" and last.text.rstrip().endswith(","))
        if analysis is not None:
            uses.extend(analysis.uses)
            needs.extend(analysis.needs)
    for need in needs:
        unit = report.sentences[need.sentence]
        report.findings.append(
            _finding(
                template,
                "S205",
                f"sentence {need.sentence + 1} states {need.describe()} in words; it is approved only with a claim "
                "that says so and verifies",
                unit,
                need.start,
                need.end,
                {"witness": [{"entity": e, "field": w.field, "values": list(w.accepted)} for e, w in need.options]},
            )
        )
    report.bindings = Bindings(tuple(uses), tuple(needs))
    return report


def _kind(tree: Tree[Any] | None) -> str | None:
    if tree is None:
        return None
    unit = tree.children[0]
    head = unit.children[0] if isinstance(unit, Tree) and unit.children else None
    if isinstance(head, Tree) and head.data == "sentence":
        body = next((c for c in head.children if isinstance(c, Tree) and c.data in ("body", "courtesy")), None)
        if body is not None and body.data == "body" and body.children and isinstance(body.children[0], Tree):
            return str(body.children[0].data)
        return "courtesy"
    return str(head.data) if isinstance(head, Tree) else None


def _finding(template: str, code: str, message: str, sent: Any, start: int, end: int, data: dict[str, Any]) -> Finding:
    line, col = line_col(template, start)
    return Finding.make(
        code, message, sentence=sent.index, start=start, end=end, data={"line": line, "column": col, **data}
    )


def _check_unit(
    template: str, lib: Library, sent: Sentence, types: Mapping[str, str], signed: bool = False
) -> tuple[list[Finding], Tree[Any] | None, _Analysis | None]:
    """The findings of one unit, its parse tree and what it binds; ``signed``: the unit follows a sign-off or a
    signature, so it may begin with a person's name."""
    readings = lib.readings(sent.text, dict(types))
    toks = next(readings)
    findings: list[Finding] = []
    for m in _SPACING.finditer(sent.text):
        at = sent.start + m.start()
        findings.append(
            _finding(
                template, "S204", f"sentence {sent.index + 1}: use one space here", sent, at, at + len(m.group()), {}
            )
        )
    inferred: dict[int, str] = {}
    n = sent.index + 1
    tree: Tree[Any] | None = None
    try:
        tree = _parse(lib, toks, inferred)
    except _Failed as failed:
        for other in readings:
            found: dict[int, str] = {}
            try:
                tree = _parse(lib, other, found)
            except _Failed:
                continue
            toks, inferred = other, found
            break
        else:
            tree = _signature(lib, sent.text, types) if signed else None
            if tree is None:
                findings.append(_diagnose(template, lib, sent, toks, failed, types))
    for i, t in enumerate(toks):
        if t.type != "UNTYPED_SLOT":
            continue
        given = types.get(str(t.value))
        why = f"has unknown type {given!r}" if given is not None else "has no type"
        here = f"; here the approved sentences take {{{inferred[i].upper()}}}" if i in inferred else ""
        a, b = _span(t)
        findings.append(
            _finding(
                template,
                "S203",
                f"sentence {n}: slot {{{t.value}}} {why}{here}; give it one with --slot-type {t.value}=TYPE, "
                "a .slots.yaml sidecar or a payload claim",
                sent,
                sent.start + a,
                sent.start + b,
                {"slot": str(t.value), "given": given, "inferred": inferred.get(i)},
            )
        )
    if tree is None:
        return findings, None, None
    analysis = _Analysis(lib.compiled, sent.index, sent.start, len(sent.text))
    analysis.walk(tree)
    analysis.uses = [u for u in analysis.uses if u.slot != SIGNED]
    for code, message, start, end, data in analysis.problems:
        findings.append(_finding(template, code, f"sentence {n}: {message}", sent, start, end, data))
    return findings, tree, analysis


def _signature(lib: Library, text: str, types: Mapping[str, str]) -> Tree[Any] | None:
    """The parse of a unit read with a person's name as its signature's string slot; only a signature line."""
    toks = lib.signed_reading(text, types)
    if toks is None:
        return None
    try:
        tree = lib.lark.parse(toks, start="start")
    except lark.exceptions.LarkError:
        return None
    return tree if _kind(tree) == "signature_line" else None


def _diagnose(
    template: str, lib: Library, sent: Sentence, toks: list[Token], failed: _Failed, types: Mapping[str, str]
) -> Finding:
    n = sent.index + 1
    idx = failed.index
    try:
        names = set(failed.state.accepts())
    except lark.exceptions.LarkError:
        names = set()
    groups = expected(names, lib)
    near = nearest(lib, sent.text, toks, idx, failed.state, names)
    prefix = sent.text[: _span(toks[idx])[0]].rstrip() if idx < len(toks) else sent.text
    data: dict[str, Any] = {"expected": groups, "nearest": near, "approved_prefix": prefix}
    if idx >= len(toks):
        start = end = sent.end
        data["unexpected"] = None
        msg = f"sentence {n} ends too early after {_tail(prefix)!r}; expected {_shown(groups)}"
        return _finding(template, "S201", msg, sent, max(sent.end - 1, sent.start), end, data)
    t = toks[idx]
    a, b = _span(t)
    start, end = sent.start + a, sent.start + b
    data["unexpected"] = str(t.value)
    if t.type in _TERMINAL_TYPES and groups.get("slots"):
        data["slot"], data["slot_type"] = str(t.value), _TERMINAL_TYPES[t.type]
        msg = (
            f"sentence {n}: slot {{{t.value}}} is {_TERMINAL_TYPES[t.type].upper()}, but here the approved "
            f"sentences take {' or '.join(groups['slots'])}"
        )
        return _finding(template, "S202", msg, sent, start, end, data)
    where = f"after {_tail(prefix)!r}" if prefix else "at the start"
    what = f"slot {{{t.value}}}" if t.type in _TERMINAL_TYPES or t.type == "UNTYPED_SLOT" else f"{str(t.value)!r}"
    word = str(t.value)
    hint2 = " (amounts, dates, times and numbers must be slots)" if word[:1].isdigit() or t.type == "OTHER" else ""
    msg = f"sentence {n} is not approved wording: unexpected {what}{hint2} {where}; expected {_shown(groups)}"
    return _finding(template, "S201", msg, sent, start, end, data)


def _tail(text: str, width: int = 40) -> str:
    return text if len(text) <= width else "..." + text[-width:]


# -- a payload's claims against the bindings ---------------------------------------------
def _norm(value: Any) -> str:
    return str(value).strip().lower().replace(" ", "_").replace("-", "_")


def bind(
    bindings: Bindings, claims: Sequence[Any], template: str, findings: Sequence[Finding]
) -> tuple[list[Finding], dict[str, Need]]:
    """Findings once a payload's claims are known: S206 for a slot showing a field its place is not bound to,
    S208 for a state asserted in prose that no claim witnesses (S205 dropped where one does), and F108 dropped
    for witness claims. Also the claims that witness a state, by key."""
    by_key = {c.key: c for c in claims}
    out = [f for f in findings if f.code != "S205"]
    for u in bindings.uses:
        c = by_key.get(u.slot)
        if c is None or not u.fields:
            continue
        shown = f"{c.entity}.{c.field}"
        if shown not in u.fields:
            out.append(
                Finding.make(
                    "S206",
                    f"sentence {u.sentence + 1}: slot {{{u.slot}}} claims {shown}, but {u.place!r} shows "
                    f"{' or '.join(u.fields)}",
                    sentence=u.sentence,
                    start=u.start,
                    end=u.end,
                    data={"slot": u.slot, "claimed": shown, "bound": list(u.fields), "place": u.place},
                )
            )
    witnessed: dict[str, Need] = {}
    for need in bindings.needs:
        key = _witness(need, claims)
        if key is not None:
            witnessed[key] = need
            continue
        out.append(
            Finding.make(
                "S208",
                f"sentence {need.sentence + 1} states {need.describe()} in words, and no claim of the payload says "
                "so; add that claim, or say it with a slot",
                sentence=need.sentence,
                start=need.start,
                end=need.end,
                data={"witness": need.describe()},
            )
        )
    if witnessed:
        out = [f for f in out if not (f.code == "F108" and f.data.get("key") in witnessed)]
    return out, witnessed


def _witness(need: Need, claims: Sequence[Any]) -> str | None:
    """The key of a claim that proves the state: its field is the witness's (which names its own entity, so a
    card's state may be witnessed by a payment field) and its value one the witness accepts."""
    for _, w in need.options:
        accepted = {_norm(v) for v in w.accepted}
        for c in claims:
            if f"{c.entity}.{c.field}" != w.field:
                continue
            if not accepted or _norm(c.value) in accepted:
                return str(c.key)
    return None

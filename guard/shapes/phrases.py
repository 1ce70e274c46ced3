"""The phrase notation of lexicon files: words, typed slots, options, alternatives and class references.

    shipped on {date}                    words and a date slot
    (was | has been) cancelled           one of the alternatives
    is [currently | now] {enum}          an optional part (itself alternatives)
    {date:order.shipped_at}              a slot bound to a policy field
    <place>                              a phrase class of the lexicon or of core
    on+your account                      "on your" as one token: where one word of lookahead cannot tell a
                                         modifier ("the email on your account") from a predicate ("on {date}")

A phrase parses to a small tree. The compiler either expands it to the finite set
of token sequences it stands for (subjects, predicates and attributes, which are
merged across entities) or writes it out as a Lark expression (everything else),
so the same notation serves both.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import product
from pathlib import Path

import regex

from guard.errors import GrammarError

SLOT_TYPES = ("identifier", "string", "integer", "decimal", "money", "date", "timestamp", "enum", "boolean")
PUNCT = frozenset(",.;:!?#()/&-")

_LEX = regex.compile(
    r"""
    (?P<space>\s+)
  | (?P<slot>\{(?P<type>[a-z]+)(?::(?P<field>[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*))?\})
  | (?P<ref><(?P<name>[a-z_][a-z0-9_]*)>)
  | (?P<word>'s\b|[a-z]+(?:'(?!s\b)[a-z]+|-[a-z]+)*(?:\+[a-z]+(?:'(?!s\b)[a-z]+|-[a-z]+)*)*)
  | (?P<open>[\[(])
  | (?P<close>[\])])
  | (?P<bar>\|)
  | (?P<punct>[,.;:!?#/&\-])
    """,
    regex.VERBOSE,
)


@dataclass(frozen=True)
class Word:
    text: str


@dataclass(frozen=True)
class Punct:
    text: str


@dataclass(frozen=True)
class Slot:
    type: str
    field: str | None = None


@dataclass(frozen=True)
class Ref:
    name: str


@dataclass(frozen=True)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    options: tuple[Node, ...]


@dataclass(frozen=True)
class Opt:
    body: Node


Node = Word | Punct | Slot | Ref | Seq | Alt | Opt
Atom = Word | Punct | Slot
"""A token of an expanded phrase."""


def parse_phrase(text: str, where: str) -> Node:
    """The tree of one phrase; a GrammarError names the phrase and what is wrong with it."""
    toks = list(_tokens(text, where))
    pos = 0

    def fail(msg: str) -> GrammarError:
        return GrammarError(f"{where}: phrase {text!r}: {msg}", location=where)

    depth = 0

    def alternatives(closer: str | None) -> Node:
        nonlocal pos, depth
        depth += closer is not None
        options = [sequence()]
        while pos < len(toks) and toks[pos] == ("bar", "|"):
            pos += 1
            options.append(sequence())
        if closer is not None:
            if pos >= len(toks) or toks[pos] != ("close", closer):
                raise fail(f"'{'(' if closer == ')' else '['}' is not closed")
            pos += 1
            depth -= 1
        return options[0] if len(options) == 1 else Alt(tuple(options))

    def sequence() -> Node:
        nonlocal pos
        items: list[Node] = []
        while pos < len(toks):
            kind, value = toks[pos]
            if kind in ("bar", "close"):
                break
            pos += 1
            if kind == "open":
                body = alternatives(")" if value == "(" else "]")
                items.append(Opt(body) if value == "[" else body)
            elif kind == "word":
                items.append(Word(value))
            elif kind == "punct":
                items.append(Punct(value))
            elif kind == "slot":
                items.append(_slot(value, fail))
            else:
                items.append(Ref(value))
        if not items:
            if pos >= len(toks) and depth:
                raise fail("a bracket is not closed")
            raise fail("an empty alternative (write the optional part in [ ] instead)")
        return items[0] if len(items) == 1 else Seq(tuple(items))

    tree = alternatives(None)
    if pos != len(toks):
        raise fail(f"unexpected '{toks[pos][1]}'")
    return tree


def _tokens(text: str, where: str) -> Iterator[tuple[str, str]]:
    pos = 0
    while pos < len(text):
        m = _LEX.match(text, pos)
        if m is None:
            bad = text[pos]
            hint = " (words are lower case letters; numbers and dates must be slots)"
            raise GrammarError(f"{where}: phrase {text!r}: unexpected {bad!r}{hint}", location=where)
        pos = m.end()
        kind = m.lastgroup
        if kind == "space":
            continue
        if kind == "slot":
            yield "slot", m.group("slot")
        elif kind == "ref":
            yield "ref", m.group("name")
        else:
            yield str(kind), m.group()


def _slot(text: str, fail: Callable[[str], GrammarError]) -> Slot:
    inner = text[1:-1]
    type_, _, field = inner.partition(":")
    if type_ not in SLOT_TYPES:
        raise fail(f"unknown slot type {type_!r}; types are {', '.join(SLOT_TYPES)}")
    return Slot(type_, field or None)


def expand(
    node: Node, classes: Callable[[str], list[tuple[Atom, ...]]], limit: int, where: str
) -> list[tuple[Atom, ...]]:
    """Every token sequence ``node`` stands for, in order, without repeats; more than ``limit`` is an error."""

    def go(n: Node) -> list[tuple[Atom, ...]]:
        if isinstance(n, (Word, Punct, Slot)):
            return [(n,)]
        if isinstance(n, Ref):
            return classes(n.name)
        if isinstance(n, Opt):
            return _capped([(), *go(n.body)], limit, where)
        if isinstance(n, Alt):
            out: list[tuple[Atom, ...]] = []
            for o in n.options:
                out.extend(go(o))
            return _capped(out, limit, where)
        parts = [go(i) for i in n.items]
        size = 1
        for p in parts:
            size *= len(p)
            if size > limit:
                raise GrammarError(
                    f"{where}: a phrase stands for more than {limit} wordings; use a <class> for the part that varies",
                    location=where,
                )
        return _capped([tuple(a for piece in combo for a in piece) for combo in product(*parts)], limit, where)

    return go(node)


def _capped(seqs: list[tuple[Atom, ...]], limit: int, where: str) -> list[tuple[Atom, ...]]:
    out = list(dict.fromkeys(seqs))
    if len(out) > limit:
        raise GrammarError(
            f"{where}: a phrase stands for more than {limit} wordings; use a <class> for the part that varies",
            location=where,
        )
    return out


def leaves(node: Node) -> Iterator[Word | Punct | Slot | Ref]:
    """Every word, punctuation mark, slot and class reference of a phrase tree, in order."""
    if isinstance(node, Seq):
        for i in node.items:
            yield from leaves(i)
    elif isinstance(node, Alt):
        for o in node.options:
            yield from leaves(o)
    elif isinstance(node, Opt):
        yield from leaves(node.body)
    else:
        yield node


def words(node: Node) -> Iterator[str]:
    """Every literal word of a phrase tree."""
    return (leaf.text for leaf in leaves(node) if isinstance(leaf, Word))


def refs(node: Node) -> Iterator[str]:
    """Every class a phrase tree refers to."""
    return (leaf.name for leaf in leaves(node) if isinstance(leaf, Ref))


__all__ = [
    "Word",
    "Punct",
    "Slot",
    "Ref",
    "Seq",
    "Alt",
    "Opt",
    "Node",
    "Atom",
    "SLOT_TYPES",
    "PUNCT",
    "parse_phrase",
    "expand",
    "words",
    "refs",
    "leaves",
]

SOURCE_DIGEST = hashlib.sha256(Path(__file__).read_bytes()).digest()
"""This module's source as imported: part of the grammar cache key (guard/shapes/tables.py)."""

"""Shapes as finite sets of token sequences: factoring, readable text and nearness.

A shape's variants are factored into a small tree (sequence, alternation,
option, token) that renders as readable text for authors and as regular
expressions or Lark rules for decoding engines; the same tree serves all three
so they cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Union

from guard.shapes.library import Grammar, Shape, Sym

Node = Union["Tok", "Seq", "Alt", "Opt"]


@dataclass(frozen=True)
class Tok:
    """One word or slot of a shape; ``first``: it opens the sentence, so no space goes before it."""

    sym: Sym
    first: bool = False


@dataclass(frozen=True)
class Seq:
    """Items in order."""

    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    """Exactly one of the options."""

    options: tuple[Node, ...]


@dataclass(frozen=True)
class Opt:
    """The body or nothing."""

    body: Node


Marked = tuple[tuple[Sym, bool], ...]


def mark(variants: Iterable[Sequence[Sym]], first: bool = False) -> list[Marked]:
    """Pair each token with whether it opens the sentence (and so takes no leading space)."""
    return [tuple((s, first and i == 0) for i, s in enumerate(v)) for v in variants]


def factor(seqs: Iterable[Marked]) -> Node:
    """A tree accepting exactly ``seqs``, sharing common prefixes and suffixes."""
    uniq = list(dict.fromkeys(seqs))
    if not uniq:
        raise ValueError("no sequences to factor")
    rest = [s for s in uniq if s]
    if len(rest) < len(uniq):
        return Seq(()) if not rest else Opt(factor(rest))
    if len(rest) == 1:
        return Seq(tuple(Tok(s, f) for s, f in rest[0]))
    p = _common_prefix(rest)
    rem = [s[p:] for s in rest]
    q = _common_suffix(rem)
    if p or q:
        mid = [s[: len(s) - q] for s in rem]
        head = tuple(Tok(s, f) for s, f in rest[0][:p])
        tail = tuple(Tok(s, f) for s, f in rest[0][len(rest[0]) - q :]) if q else ()
        return _seq(head + (factor(mid),) + tail)
    prod = _product(rest)
    if prod is not None:
        return prod
    groups: dict[tuple[Sym, bool], list[Marked]] = {}
    for s in rest:
        groups.setdefault(s[0], []).append(s)
    return Alt(tuple(factor(g) for g in groups.values()))


def _product(rest: list[Marked]) -> Node | None:
    """``(a | b) (c | d)`` when the set is every head with every tail, split at a shared token or before the last."""
    common = set(rest[0]).intersection(*rest[1:])
    splits: list[Callable[[Marked], int]] = [
        (lambda s, p=pivot: s.index(p))  # type: ignore[misc]
        for pivot in rest[0]
        if pivot in common
    ]
    splits.append(lambda s: len(s) - 1)
    for at in splits:
        heads = list(dict.fromkeys(s[: at(s)] for s in rest))
        tails = list(dict.fromkeys(s[at(s) :] for s in rest))
        if len(heads) > 1 and len(tails) > 1 and len(heads) * len(tails) == len(rest):
            return _seq((factor(heads), factor(tails)))
    return None


def _seq(items: tuple[Node, ...]) -> Node:
    flat: list[Node] = []
    for it in items:
        flat.extend(it.items if isinstance(it, Seq) else (it,))
    return flat[0] if len(flat) == 1 else Seq(tuple(flat))


def _common_prefix(seqs: list[Marked]) -> int:
    n = min(len(s) for s in seqs)
    i = 0
    while i < n and all(s[i] == seqs[0][i] for s in seqs):
        i += 1
    return i


def _common_suffix(seqs: list[Marked]) -> int:
    n = min(len(s) for s in seqs)
    i = 0
    while i < n and all(s[len(s) - 1 - i] == seqs[0][len(seqs[0]) - 1 - i] for s in seqs):
        i += 1
    return i


def sym_text(sym: Sym) -> str:
    """A symbol as a reader sees it: slots as ``{TYPE}``, words bare."""
    kind, text = sym
    return "{" + text.upper() + "}" if kind == "slot" else text


def readable_tokens(syms: Sequence[Sym]) -> str:
    """``Your order {IDENTIFIER} shipped on {DATE}.``: one variant as an author would write it."""
    out = ""
    for i, s in enumerate(syms):
        if i and s[0] != "punct":
            out += " "
        out += sym_text(s)
    return out


def readable(node: Node) -> str:
    """A factored tree as text: ``(a | b)`` for choices, ``[x]`` for optional parts."""
    return _readable(node)[0]


def _readable(node: Node) -> tuple[str, bool]:
    if isinstance(node, Tok):
        return sym_text(node.sym), node.sym[0] == "punct"
    if isinstance(node, Opt):
        text, punct = _readable(node.body)
        if isinstance(node.body, Alt):
            text = text[1:-1]
        return f"[{text}]", punct
    if isinstance(node, Alt):
        parts = [_readable(o) for o in node.options]
        return "(" + " | ".join(p[0] for p in parts) + ")", all(p[1] for p in parts)
    out, lead = "", False
    for i, it in enumerate(node.items):
        text, punct = _readable(it)
        if i == 0:
            lead = punct
        elif not punct:
            out += " "
        out += text
    return out, lead


def shape_text(shape: Shape) -> str:
    """The whole shape as readable text with its choices and optional parts."""
    return readable(factor(mark(shape.variants)))


def render(
    node: Node,
    tok: Callable[[Tok], str],
    alt: Callable[[list[str]], str],
    opt: Callable[[str], str],
    seq: Callable[[list[str]], str],
) -> str:
    """Fold a tree into a string with one function per node kind (regex and Lark exports use it)."""
    if isinstance(node, Tok):
        return tok(node)
    if isinstance(node, Opt):
        return opt(render(node.body, tok, alt, opt, seq))
    if isinstance(node, Alt):
        return alt([render(o, tok, alt, opt, seq) for o in node.options])
    return seq([render(i, tok, alt, opt, seq) for i in node.items])


def edit_distance(a: Sequence[object], b: Sequence[object], bound: int | None = None) -> int:
    """Token-level Levenshtein distance; gives up early (returns ``bound``+1) once it must exceed ``bound``."""
    if bound is not None and abs(len(a) - len(b)) > bound:
        return bound + 1
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i] * (len(b) + 1)
        low = i
        for j, y in enumerate(b, 1):
            v = prev[j - 1] + (x != y)
            d = prev[j] + 1
            if d < v:
                v = d
            d = cur[j - 1] + 1
            if d < v:
                v = d
            cur[j] = v
            if v < low:
                low = v
        if bound is not None and low > bound:
            return bound + 1
        prev = cur
    return prev[-1]


@dataclass(frozen=True)
class Nearest:
    """An approved shape close to a rejected sentence, offered as a fix."""

    shape: str
    text: str
    distance: int

    def to_dict(self) -> dict[str, object]:
        return {"shape": self.shape, "text": self.text, "distance": self.distance}


_BY_LENGTH: dict[int, tuple[Grammar, dict[int, list[tuple[int, str, tuple[Sym, ...]]]]]] = {}


def _by_length(grammar: Grammar) -> dict[int, list[tuple[int, str, tuple[Sym, ...]]]]:
    hit = _BY_LENGTH.get(id(grammar))
    if hit is not None and hit[0] is grammar:
        return hit[1]
    table: dict[int, list[tuple[int, str, tuple[Sym, ...]]]] = {}
    for order, shape in enumerate(grammar.shapes.values()):
        for v in shape.variants:
            table.setdefault(len(v), []).append((order, shape.name, v))
    _BY_LENGTH[id(grammar)] = (grammar, table)
    return table


def nearest_shapes(grammar: Grammar, syms: Sequence[Sym], k: int = 3) -> list[Nearest]:
    """The ``k`` shapes whose closest variant needs the fewest token edits to become ``syms``.

    Variants are visited by length nearest to the sentence's, and the search
    stops once the length difference alone exceeds the k-th best distance.
    """
    table = _by_length(grammar)
    n = len(syms)
    best: dict[str, tuple[int, int, tuple[Sym, ...]]] = {}
    kth = None
    for length in sorted(table, key=lambda L: abs(L - n)):
        if kth is not None and abs(length - n) > kth:
            break
        for order, name, v in table[length]:
            cur = best.get(name)
            limit = kth if cur is None else (cur[0] - 1 if kth is None else min(kth, cur[0] - 1))
            if limit is not None and abs(length - n) > limit:
                continue
            d = edit_distance(syms, v, limit)
            if limit is None or d <= limit:
                best[name] = (d, order, v)
                if len(best) >= k:
                    kth = sorted(b[0] for b in best.values())[k - 1]
    top = sorted(best.items(), key=lambda kv: (kv[1][0], kv[1][1]))[:k]
    return [Nearest(name, readable_tokens(v), d) for name, (d, _order, v) in top]


__all__ = [
    "Tok",
    "Seq",
    "Alt",
    "Opt",
    "Node",
    "mark",
    "factor",
    "readable",
    "readable_tokens",
    "shape_text",
    "render",
    "edit_distance",
    "nearest_shapes",
    "Nearest",
    "sym_text",
]

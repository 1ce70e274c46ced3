"""A domain's LALR(1) parser: built once from the compiled lexicon, cached on disk by guard, assembled fast.

Building. The compiler writes each group of word alternatives as one shared rule, which keeps the grammar
(and so the table and the time to read it) small. Where sharing a group makes the grammar not LALR(1) (two
groups, or a group and a literal, that end on the same words in one place), the group is written out in place
and the table built again; what is left is a conflict of the lexicon itself, reported with both rules.

Caching. Lark's own cache reads every rule and table entry back through its generic deserialiser: 2 s for
orders and 6 s for travel. guard stores the compiled lexicon and Lark's terminals with pickle, the rules as
plain tuples and the table as plain integers with marshal, and assembles the Lark parser from them without
building anything: a rule becomes a Lark ``Rule`` the first time the parser reduces it (unpickling all 23,000 of
orders' rules was two thirds of a warm load).
``tests/shapes/test_tables.py`` checks that the assembled parser has the table Lark builds itself with
``strict=True`` (the reference) and parses the same sentences.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import marshal
import os
import pickle
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import lark
from lark.common import LexerConf, ParserConf
from lark.grammar import NonTerminal, Rule, RuleOptions, Terminal
from lark.lark import LarkOptions
from lark.load_grammar import load_grammar
from lark.parse_tree_builder import ParseTreeBuilder
from lark.parser_frontends import ParsingFrontend
from lark.parsers.lalr_analysis import IntParseTable, Reduce, Shift
from lark.parsers.lalr_parser import LALR_Parser, _Parser
from lark.tree import Tree

from guard.errors import GrammarError
from guard.shapes.compiler import Compiled
from guard.shapes.conflicts import Conflict, analyse
from guard.shapes.lalr import Analyzer

_log = logging.getLogger("guard.shapes")
FORMAT = 3
"""Bumped whenever what the cache holds, or how :func:`build` writes groups out, changes (this module is not part
of the cache key, so that its formatting does not cost a rebuild)."""
MAX_ROUNDS = 8
"""Rebuilds allowed while writing conflicting word groups out in place."""


def options(lexer: type, starts: Iterable[str]) -> dict[str, Any]:
    """The Lark options every sentence library is built with (the reference build uses the same)."""
    return {
        "parser": "lalr",
        "lexer": lexer,
        "strict": True,
        "maybe_placeholders": False,
        "start": list(starts),
    }


def reference(source: str, lexer: type, starts: Iterable[str]) -> lark.Lark:
    """Lark building the parser itself, strictly: what :func:`build` must agree with."""
    return lark.Lark(source, **options(lexer, starts))


def lower(compiled: Compiled, starts: Iterable[str], where: str) -> tuple[list[Any], list[Any]]:
    """The generated source as Lark's terminals and rules, before any LALR analysis: a rule defined twice, an
    undefined name or a bad terminal is a ``GrammarError`` here, in seconds rather than a build's minutes."""
    try:
        grammar, _ = load_grammar(compiled.source, "<lexicon>", [], False)
        terminals, rules, _ignore = grammar.compile(list(starts), set())
    except lark.exceptions.LarkError as exc:
        first = " ".join(str(exc).strip().split())[:300]
        raise GrammarError(f"{where} could not be compiled: {first}", location=where) from None
    return terminals, rules


def build(
    compile_with: Callable[[frozenset[tuple[str, ...]]], Compiled],
    lexer: type,
    starts: Iterable[str],
    where: str,
    hint: frozenset[tuple[str, ...]] = frozenset(),
) -> tuple[Compiled, dict[str, Any]]:
    """Compile and analyse until no shared word group is in a conflict; the compiled lexicon and the parts
    :func:`assemble` needs (``parts["inline"]`` holds the groups written out). A conflict that involves no word
    group is a ``GrammarError`` naming both rules.

    ``hint`` names groups to write out from the first round: those of the last build of the same lexicon, which
    after a small edit saves most rounds. The language is the same whatever the hint; only the table's size
    differs."""
    starts = list(starts)
    inline: frozenset[tuple[str, ...]] = frozenset(hint)
    for _ in range(MAX_ROUNDS):
        compiled = compile_with(inline)
        terminals, rules = lower(compiled, starts, where)
        analysis = Analyzer(ParserConf(rules, {}, starts), debug=False, strict=False)
        found = analyse(analysis)
        if not found:
            analysis.compute_lalr1_states()
            return compiled, {**_parts(rules, terminals, analysis.parse_table), "inline": sorted(inline)}
        groups = {n for c in found for n in c.rules if n in compiled.groups}
        _log.debug("%s: %d conflicts, writing out %s", where, len(found), sorted(groups))
        if not groups:
            raise GrammarError(f"{where} is not LALR(1): {'; '.join(map(str, found[:5]))}", location=where)
        inline |= {compiled.groups[n] for n in groups}
    raise GrammarError(f"{where}: word groups still conflict after {MAX_ROUNDS} rounds", location=where)


def _parts(rules: list[Any], terminals: list[Any], table: Any) -> dict[str, Any]:
    index = {r: i for i, r in enumerate(rules)}
    states = [
        marshal.dumps({t: (0, a) if act is Shift else (1, index[a]) for t, (act, a) in table.states[s].items()})
        for s in range(len(table.states))
    ]
    return {
        "rules": marshal.dumps([_encode(r) for r in rules]),
        "terminals": terminals,
        "table": marshal.dumps((states, table.start_states, table.end_states)),
    }


def _encode(rule: Rule) -> tuple[Any, ...]:
    o = rule.options
    expansion = tuple(
        (str(s.name), bool(getattr(s, "filter_out", False))) if s.is_term else str(s.name) for s in rule.expansion
    )
    options = (
        bool(o.keep_all_tokens),
        bool(o.expand1),
        o.priority,
        _str(o.template_source),
        tuple(bool(x) for x in o.empty_indices),
    )
    return str(rule.origin.name), expansion, int(rule.order), _str(rule.alias), options


def _str(value: Any) -> str | None:
    """Lark's names are ``Token`` objects, a ``str`` subclass that marshal does not take."""
    return None if value is None else str(value)


def _decode(raw: tuple[Any, ...]) -> Rule:
    origin, expansion, order, alias, options = raw
    symbols = [NonTerminal(s) if isinstance(s, str) else Terminal(s[0], s[1]) for s in expansion]
    return Rule(NonTerminal(origin), symbols, order, alias, RuleOptions(*options))


class Rules(Sequence[Rule]):
    """A grammar's rules, each made a Lark ``Rule`` the first time it is asked for; ``shapes()`` reads the
    names alone without making any."""

    def __init__(self, raw: list[tuple[Any, ...]]) -> None:
        self.raw = raw
        self._made: list[Rule | None] = [None] * len(raw)

    def __len__(self) -> int:
        return len(self.raw)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self.raw)))]
        made = self._made[i]
        if made is None:
            made = self._made[i] = _decode(self.raw[i])
        return made

    def __iter__(self) -> Iterator[Rule]:
        return (self[i] for i in range(len(self.raw)))


def shapes(rules: Sequence[Rule]) -> Iterator[tuple[str, list[tuple[bool, str]]]]:
    """Each rule as its head and its symbols (is it a terminal, name), without making Lark rules."""
    if isinstance(rules, Rules):
        for origin, expansion, *_ in rules.raw:
            yield origin, [(False, s) if isinstance(s, str) else (True, s[0]) for s in expansion]
    else:
        for r in rules:
            yield r.origin.name, [(s.is_term, s.name) for s in r.expansion]


class _States(dict[int, dict[str, tuple[Any, Any]]]):
    """The parse table's states, each decoded the first time the parser enters it (a sentence visits a few
    dozen of tens of thousands)."""

    def __init__(self, blobs: list[bytes], rules: Sequence[Rule]) -> None:
        super().__init__()
        self.blobs, self.rules = blobs, rules

    def __missing__(self, state: int) -> dict[str, tuple[Any, Any]]:
        rules = self.rules
        acts = {
            t: (Shift, a) if k == 0 else (Reduce, rules[a]) for t, (k, a) in marshal.loads(self.blobs[state]).items()
        }
        self[state] = acts
        return acts

    def decoded(self) -> dict[int, dict[str, tuple[Any, Any]]]:
        """Every state (for tests and tools that walk the whole table)."""
        return {s: self[s] for s in range(len(self.blobs))}


class _Callbacks(dict[Any, Any]):
    """Lark's tree-building callbacks, made for a rule the first time it is reduced (as ``Lark`` makes them
    for every rule up front)."""

    def __bool__(self) -> bool:
        return True  # Lark's parser builds no tree when its callbacks are empty

    def __missing__(self, rule: Any) -> Any:
        made = ParseTreeBuilder([rule], Tree).create_callback(None)[rule]
        self[rule] = made
        return made


def assemble(parts: dict[str, Any], lexer: type, starts: Iterable[str]) -> lark.Lark:
    """A Lark parser from stored rules, terminals and table, set up as ``Lark.__init__`` and Lark's own cache
    loader set one up, without building or deserialising anything up front."""
    rules = Rules(marshal.loads(parts["rules"]))
    blobs, start_states, end_states = marshal.loads(parts["table"])
    table = IntParseTable(_States(blobs, rules), start_states, end_states)
    inst = lark.Lark.__new__(lark.Lark)
    inst.options = LarkOptions(options(lexer, starts))
    inst.source_path = "<guard>"
    inst.source_grammar = ""
    inst.rules = rules  # type: ignore[assignment]  # a Sequence, made on demand
    inst.terminals = parts["terminals"]
    inst.ignore_tokens = []
    inst._terminals_dict = {t.name: t for t in inst.terminals}
    inst.lexer_conf = LexerConf(inst.terminals, re, [], None, {}, 0, use_bytes=False, strict=True)
    inst.lexer_conf.lexer_type = lexer
    inst._callbacks = _Callbacks()
    parser_conf = ParserConf(rules, inst._callbacks, list(starts))  # type: ignore[arg-type]
    parser_conf.parser_type = "lalr"
    lalr = LALR_Parser.__new__(LALR_Parser)
    lalr._parse_table = table  # type: ignore[assignment]
    lalr.parser_conf = parser_conf
    lalr.parser = _Parser(table, inst._callbacks, False)
    inst.parser = ParsingFrontend(inst.lexer_conf, parser_conf, inst.options, parser=lalr)
    return inst


def states(parser: lark.Lark) -> dict[int, dict[str, tuple[Any, Any]]]:
    """Every state of a parser's table, whether Lark built it or :func:`assemble` did."""
    table = parser.parser.parser._parse_table.states
    return table.decoded() if isinstance(table, _States) else dict(table)


def cache_dir() -> Path:
    base = os.environ.get("GUARD_CACHE_DIR") or os.path.join(tempfile.gettempdir(), f"guard-cache-{os.getuid()}")
    path = Path(base)
    path.mkdir(parents=True, exist_ok=True)
    return path


def read_hint(path: Path) -> frozenset[tuple[str, ...]]:
    """The word groups the last build of a lexicon wrote out (empty when there is no readable hint)."""
    try:
        data = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return frozenset()
    if not isinstance(data, list) or not all(isinstance(g, tuple) and all(isinstance(w, str) for w in g) for g in data):
        return frozenset()
    return frozenset(data)


def write_hint(path: Path, inline: Iterable[tuple[str, ...]]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(marshal.dumps([tuple(g) for g in inline]))
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)


def key(domain: str, files: Iterable[Path]) -> str:
    """The cache key: the input files' bytes, guard's compiler and this format, and Lark's version."""
    h = hashlib.sha256(f"{domain}\0{FORMAT}\0{lark.__version__}\0".encode())
    for f in files:
        try:
            h.update(f.read_bytes())
        except OSError:
            h.update(b"\0missing\0")
        h.update(b"\0")
    h.update(_code_digest())
    return h.hexdigest()[:24]


@functools.cache
def _code_digest() -> bytes:
    """The compiler's source as this process imported it: a file edited while a process runs must not key tables
    built by the old code."""
    from guard.shapes import compiler, lexicon, phrases

    return b"".join(mod.SOURCE_DIGEST for mod in (compiler, phrases, lexicon))


def read(path: Path) -> tuple[Compiled, dict[str, Any]] | None:
    """A cached build, or None when there is none or it cannot be read (it is then rebuilt)."""
    try:
        with path.open("rb") as f:
            data = pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, ValueError, TypeError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    return data["compiled"], data["parts"]


def write(path: Path, compiled: Compiled, parts: dict[str, Any]) -> None:
    """Store a build atomically (a reader never sees half a file); a cache that cannot be written is skipped."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as f:
            pickle.dump({"format": FORMAT, "compiled": compiled, "parts": parts}, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)


__all__ = [
    "build",
    "assemble",
    "states",
    "reference",
    "options",
    "cache_dir",
    "key",
    "read",
    "write",
    "read_hint",
    "write_hint",
    "Conflict",
]

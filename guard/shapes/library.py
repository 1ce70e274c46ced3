"""Finding, reading and compiling grammar libraries (``core.lark`` + one ``<domain>.lark`` per domain).

Grammar files are written in Lark with two conveniences: a literal may hold
several words (``"shipped on"`` is two tokens) and the slot terminals
(``DATE_SLOT``, ``MONEY_SLOT``, ...) are always available from core. Every
alternative of the rule ``sentence`` names one shape rule, so a parse says
which approved shape a sentence matched.

Compiled grammars are cached per process and rebuilt when a file changes.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import Any

import lark
import regex
from lark.lexer import Lexer

from guard._resources import data_path
from guard.errors import GrammarError
from guard.payload import ClaimType
from guard.shapes.text import PUNCT, STOPS, literal_tokens

SLOT_TYPES = tuple(t.value for t in ClaimType)
SLOT_TERMINALS = {t: f"{t.upper()}_SLOT" for t in SLOT_TYPES}
TERMINAL_SLOT_TYPES = {v: k for k, v in SLOT_TERMINALS.items()}
START = "sentence"
CORE = "core"
MAX_VARIANTS = 4096
PARSERS = ("lalr", "earley")

Sym = tuple[str, str]
"""A shape token: ``("word", "order")``, ``("punct", ".")`` or ``("slot", "date")``."""


class _TokenListLexer(Lexer):
    """Lark lexer for input the validator has already tokenised (a list of ``lark.Token``)."""

    def __init__(self, conf: Any) -> None:
        self.conf = conf

    def lex(self, data: Any) -> Any:  # type: ignore[override]
        return iter(data)


@dataclass(frozen=True)
class Shape:
    """One approved sentence shape: its rule name and every token sequence it accepts."""

    name: str
    variants: tuple[tuple[Sym, ...], ...]

    @property
    def ending(self) -> str:
        """``stop`` if the shape ends a sentence with . ! ?, ``comma`` if it ends a line with a comma."""
        return "comma" if self.variants[0][-1] == ("punct", ",") else "stop"


@dataclass
class Grammar:
    """A compiled domain grammar: the Lark parser plus what diagnostics and exports need."""

    domain: str
    path: Path
    parser_kind: str
    lark: lark.Lark
    vocabulary: dict[str, str]
    terminals: dict[str, Sym]
    shapes: dict[str, Shape]
    files: list[Path] = field(default_factory=list)

    def token_type(self, kind: str, text: str, slot_type: str | None = None) -> str:
        """Lark terminal name of a template token (an unknown word gets a type no state accepts)."""
        if kind == "slot":
            return SLOT_TERMINALS.get(slot_type or "", "UNTYPED_SLOT")
        return self.vocabulary.get(text, "UNKNOWN_WORD")

    def describe(self, terminal: str) -> str:
        """A terminal as a template author would write it: ``"shipped"``, ``{DATE}``, end of sentence."""
        if terminal == "$END":
            return "end of sentence"
        sym = self.terminals.get(terminal)
        if sym is None:
            return terminal
        return render_sym(sym)


def render_sym(sym: Sym) -> str:
    """A symbol as grammar source shows it: slots as ``{TYPE}``, words quoted."""
    kind, text = sym
    if kind == "slot":
        return "{" + text.upper() + "}"
    return f'"{text}"'


def grammar_dirs(grammar_dir: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None = None) -> list[Path]:
    """Directories searched for grammars: the user's first, guard's shipped library last."""
    dirs: list[Path] = []
    if grammar_dir is not None:
        items = [grammar_dir] if isinstance(grammar_dir, (str, os.PathLike)) else list(grammar_dir)
        for d in items:
            p = Path(d)
            if not p.is_dir():
                raise GrammarError(f"grammar directory {str(p)!r} does not exist", location=str(p))
            dirs.append(p.resolve())
    dirs.append(_shipped())
    return dirs


@functools.lru_cache(maxsize=1)
def _shipped() -> Path:
    return data_path("grammars")


def list_domains(grammar_dir: Any = None) -> dict[str, Path]:
    """Every domain found, name to file; a user's domain hides a shipped one of the same name."""
    found: dict[str, Path] = {}
    for d in grammar_dirs(grammar_dir):
        for f in sorted(d.glob("*.lark")):
            if f.stem != CORE and f.stem not in found:
                found[f.stem] = f
    return found


_LITERAL = regex.compile(r'"(?:[^"\\\n]|\\.)*"(i?)|//[^\n]*|/(?:[^/\\\n]|\\.)+/[imslux]*')
_RULE_HEAD = regex.compile(r"^\s*[?!]?[_a-z][_a-z0-9]*(?:\{[^}]*\})?(?:\.-?\d+)?\s*:")
_TERM_HEAD = regex.compile(r"^\s*_?[A-Z][_A-Z0-9]*(?:\.-?\d+)?\s*:")


def rewrite_source(text: str, where: str) -> str:
    """Split multi-word literals in rules into one literal per token (``"shipped on"`` -> ``"shipped" "on"``)."""
    out: list[str] = []
    in_rule = False
    for lineno, line in enumerate(text.split("\n"), 1):
        if _RULE_HEAD.match(line):
            in_rule = True
        elif _TERM_HEAD.match(line) or line.lstrip().startswith("%"):
            in_rule = False
        if not in_rule:
            out.append(line)
            continue

        def fix(m: regex.Match[str], lineno: int = lineno) -> str:
            lit = m.group()
            if not lit.startswith('"'):
                return lit
            if m.group(1):
                raise GrammarError(
                    f"{where}:{lineno}: case-insensitive literal {lit} is not allowed; write each spelling out",
                    location=f"{where}:{lineno}",
                )
            body = lit[1:-1].replace('\\"', '"').replace("\\\\", "\\")
            toks = literal_tokens(body)
            if not toks:
                raise GrammarError(
                    f"{where}:{lineno}: literal {lit} must be words and , . ; : ! ? only", location=f"{where}:{lineno}"
                )
            quoted = " ".join('"' + t + '"' for t in toks)
            return quoted if len(toks) == 1 else f"({quoted})"

        out.append(_LITERAL.sub(fix, line))
    return "\n".join(out)


class _Loader:
    """Lark import loader over the grammar directories that applies :func:`rewrite_source`."""

    def __init__(self, dirs: list[Path]) -> None:
        self.dirs = dirs
        self.used: list[Path] = []

    def __call__(self, base_path: Any, grammar_path: str) -> tuple[str, str]:
        for d in self.dirs:
            f = d / grammar_path
            if f.is_file():
                self.used.append(f)
                return str(f), rewrite_source(f.read_text(encoding="utf-8"), f.name)
        raise OSError(f"{grammar_path} not found")


def _sym_of(term: Any) -> Sym | None:
    name = term.name
    if name in TERMINAL_SLOT_TYPES:
        return ("slot", TERMINAL_SLOT_TYPES[name])
    pat = term.pattern
    if type(pat).__name__ != "PatternStr" or pat.flags:
        return None
    toks = literal_tokens(pat.value)
    if toks != [pat.value]:
        return None
    return ("punct" if pat.value in PUNCT else "word", pat.value)


def _compile(domain: str, path: Path, dirs: list[Path], parser: str) -> Grammar:
    loader = _Loader(dirs)
    source = rewrite_source(path.read_text(encoding="utf-8"), path.name)
    source += "\n%import core (" + ", ".join(SLOT_TERMINALS.values()) + ")\n"
    try:
        lk = lark.Lark(
            source, start=START, parser=parser, lexer=_TokenListLexer, import_paths=[loader], source_path=str(path)
        )
    except GrammarError:
        raise
    except (lark.exceptions.LarkError, OSError, KeyError, AssertionError) as exc:
        msg = str(exc).strip().splitlines()
        hint = ""
        if "Collision" in str(exc) or "collision" in str(exc):
            hint = (
                "; two rules take the same words here: merge shapes that accept the same sentence, and "
                "write shared helper rules inline as (a | b) groups"
            )
        raise GrammarError(
            f"grammar {path.name} could not be compiled: {' '.join(m.strip() for m in msg[:6])}{hint}",
            location=str(path),
        ) from None
    terminals: dict[str, Sym] = {}
    vocabulary: dict[str, str] = {}
    for t in lk.terminals:
        sym = _sym_of(t)
        if sym is None:
            raise GrammarError(
                f"{path.name}: terminal {t.name} must be a single word or punctuation literal, "
                "or a slot terminal such as DATE_SLOT",
                location=str(path),
            )
        terminals[t.name] = sym
        if sym[0] != "slot":
            vocabulary[sym[1]] = t.name
    shapes = _shapes(lk, terminals, path)
    files = [path] + loader.used
    return Grammar(domain, path, parser, lk, vocabulary, terminals, shapes, files)


def _shapes(lk: lark.Lark, terminals: dict[str, Sym], path: Path) -> dict[str, Shape]:
    rules: dict[str, list[list[Any]]] = {}
    for r in lk.rules:
        rules.setdefault(r.origin.name, []).append(list(r.expansion))
    names: list[str] = []
    for exp in rules.get(START, []):
        if len(exp) != 1 or exp[0].is_term:
            raise GrammarError(
                f"{path.name}: every alternative of '{START}' must be one shape rule, "
                f"not {' '.join(s.name for s in exp) or 'nothing'}",
                location=str(path),
            )
        names.append(exp[0].name)
    memo: dict[str, list[tuple[Sym, ...]]] = {}

    def variants(name: str, stack: tuple[str, ...]) -> list[tuple[Sym, ...]]:
        if name in memo:
            return memo[name]
        if name in stack:
            raise GrammarError(
                f"{path.name}: rule {name} is recursive; approved shapes must be a finite "
                "set of sentences (no * or + repetition)",
                location=str(path),
            )
        out: list[tuple[Sym, ...]] = []
        for exp in rules[name]:
            parts = [[(terminals[s.name],)] if s.is_term else variants(s.name, stack + (name,)) for s in exp]
            for combo in product(*parts):
                out.append(tuple(sym for piece in combo for sym in piece))
                if len(out) > MAX_VARIANTS:
                    raise GrammarError(
                        f"{path.name}: rule {stack[0] if stack else name} has more than "
                        f"{MAX_VARIANTS} variants; split it into several shapes",
                        location=str(path),
                    )
        memo[name] = list(dict.fromkeys(out))
        return memo[name]

    shapes: dict[str, Shape] = {}
    for name in names:
        vs = variants(name, ())
        problems = []
        for v in vs:
            if not v or v[0][0] == "punct":
                problems.append("starts with punctuation or is empty")
            elif v[-1][0] != "punct" or v[-1][1] not in STOPS | {","}:
                problems.append("must end with . ! ? or ,")
            elif any(s[0] == "punct" and s[1] in STOPS for s in v[:-1]):
                problems.append("has . ! ? before its end (one shape is one sentence)")
        endings = {v[-1] == ("punct", ",") for v in vs if v}
        if len(endings) > 1:
            problems.append("mixes variants ending with ',' and with . ! ?")
        if problems:
            raise GrammarError(f"{path.name}: shape {name} {problems[0]}", location=str(path))
        shapes[name] = Shape(name, tuple(vs))
    return shapes


_CACHE: dict[tuple[Any, ...], tuple[Grammar, list[tuple[Path, int, int]], float]] = {}
RECHECK_SECONDS = 1.0
"""How long a compiled grammar is trusted before its files are stat()ed again."""
_LOCK = threading.Lock()


def _stamp(files: list[Path]) -> list[tuple[Path, int, int]]:
    out = []
    for f in files:
        try:
            st = f.stat()
            out.append((f, st.st_mtime_ns, st.st_size))
        except OSError:
            out.append((f, -1, -1))
    return out


def load_grammar(domain: str, *, grammar_dir: Any = None, parser: str = "lalr", cache: bool = True) -> Grammar:
    """The compiled grammar of ``domain``, from the user's ``grammar_dir`` or guard's library.

    >>> g = load_grammar("orders")
    >>> "order_shipped" in g.shapes
    True
    """
    if parser not in PARSERS:
        raise GrammarError(f"unknown parser {parser!r}; use one of {', '.join(PARSERS)}")
    dirs = grammar_dirs(grammar_dir)
    key = (domain, tuple(dirs), parser)
    if cache:
        hit = _CACHE.get(key)
        if hit is not None:
            now = time.monotonic()
            if now - hit[2] < RECHECK_SECONDS:
                return hit[0]
            if _stamp([s[0] for s in hit[1]]) == hit[1]:
                _CACHE[key] = (hit[0], hit[1], now)
                return hit[0]
    domains = list_domains(dirs[:-1] or None)
    if domain not in domains:
        known = ", ".join(sorted(domains)) or "none"
        raise GrammarError(f"unknown domain {domain!r}; known domains: {known}", location=domain)
    g = _compile(domain, domains[domain], dirs, parser)
    if cache:
        with _LOCK:
            _CACHE[key] = (g, _stamp(g.files), time.monotonic())
    return g


def clear_cache() -> None:
    """Forget compiled grammars (the benchmark uses it to time a cold compile)."""
    with _LOCK:
        _CACHE.clear()


__all__ = [
    "Grammar",
    "Shape",
    "Sym",
    "SLOT_TYPES",
    "SLOT_TERMINALS",
    "load_grammar",
    "list_domains",
    "grammar_dirs",
    "rewrite_source",
    "render_sym",
    "clear_cache",
]

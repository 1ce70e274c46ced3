"""The compositional sentence library (issue 15, in progress): a domain's lexicon compiled to one strict
LALR(1) Lark parser, and the lexer that turns one template line into its tokens.

Not yet wired into the shape stage: :mod:`guard.shapes.library` still serves the
shipped ``<domain>.lark`` libraries. This module is what replaces it; its data is
in ``grammars/lexicons/``.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lark
import regex
from lark import Token

from guard._resources import data_path
from guard.errors import GrammarError
from guard.shapes.compiler import SLOT_TERMINALS, Compiled, compile_files
from guard.shapes.library import _TokenListLexer

_WORD = regex.compile(r"'s\b|[a-z0-9]+(?:'(?!s\b)[a-z0-9]+|-[a-z0-9]+)*")
_PUNCT = frozenset(",.;:!?#()/&-")
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})
_SLOT = regex.compile(r'(["\']?)\{([A-Za-z_][A-Za-z0-9_]*)\}\1')


@dataclass(frozen=True)
class Tok:
    """One token of a line: ``kind`` is word, punct, slot or other; offsets are into the original text."""

    kind: str
    text: str
    start: int
    end: int


def tokens(text: str) -> list[Tok]:
    """Words (lower-cased, "'s" split off, curly apostrophes straightened), punctuation, slots (quotes around a
    slot dropped) and, for anything else, single ``other`` characters."""
    norm = text.translate(_QUOTES)
    out: list[Tok] = []
    i = 0
    while i < len(norm):
        ch = norm[i]
        if ch.isspace():
            i += 1
            continue
        m = _SLOT.match(norm, i)
        if m:
            out.append(Tok("slot", m.group(2), m.start(2) - 1, m.end(2) + 1))
            i = m.end()
            continue
        m = _WORD.match(norm.lower(), i)
        if m:
            out.append(Tok("word", m.group(), i, m.end()))
            i = m.end()
            continue
        out.append(Tok("punct" if ch in _PUNCT else "other", ch, i, i + 1))
        i += 1
    return out


class Library:
    """A domain's compiled sentence library."""

    def __init__(self, compiled: Compiled, parser: lark.Lark) -> None:
        self.compiled = compiled
        self.lark = parser
        self.vocabulary: dict[str, str] = {}
        for t in parser.terminals:
            if t.name.endswith("_SLOT") or t.name.startswith("NEVER"):
                continue
            self.vocabulary[str(t.pattern.value)] = t.name

    @property
    def domain(self) -> str:
        return self.compiled.domain

    def lark_tokens(self, text: str, slot_types: dict[str, str]) -> list[Token]:
        out = []
        for t in tokens(text):
            if t.kind == "slot":
                kind = SLOT_TERMINALS.get(slot_types.get(t.text, ""), "UNTYPED_SLOT")
            else:
                kind = self.vocabulary.get(t.text, "UNKNOWN_WORD")
            out.append(Token(kind, t.text, start_pos=t.start, end_pos=t.end))
        return out

    def parse(self, text: str, slot_types: dict[str, str]) -> lark.Tree[Any] | None:
        """The parse tree of one line, or None when it is not approved wording."""
        try:
            return self.lark.parse(self.lark_tokens(text, slot_types))
        except lark.exceptions.LarkError:
            return None


_LOCK = threading.Lock()
_LOADED: dict[tuple[str, str], Library] = {}
_STAMPED: dict[tuple[object, ...], Library] = {}
"""Libraries by their files' paths, mtimes and sizes: a warm load reads three stats and compiles nothing."""


def _cache_dir() -> Path:
    base = os.environ.get("GUARD_CACHE_DIR") or os.path.join(tempfile.gettempdir(), f"guard-cache-{os.getuid()}")
    path = Path(base)
    path.mkdir(parents=True, exist_ok=True)
    return path


def load_library(domain: str, lexicon_dir: Path | None = None) -> Library:
    """A domain's library from ``lexicon_dir`` (default: guard's ``grammars/lexicons``).

    The Lark tables are cached on disk by the digest of the generated grammar, so only the first load after a
    lexicon change pays for the LALR construction.
    """
    base = lexicon_dir or data_path("grammars") / "lexicons"
    path = base / f"{domain}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in base.glob("*.yaml") if p.stem != "core")
        raise GrammarError(f"unknown domain {domain!r}; known domains: {', '.join(known)}", location=domain)
    files = (path, base / "core.yaml", base / "compose.lark")
    stamp = (domain, *(_stat(f) for f in files))
    hit = _STAMPED.get(stamp)
    if hit is not None:
        return hit
    compiled = compile_files(domain, *files)
    key = (domain, compiled.digest)
    with _LOCK:
        hit = _LOADED.get(key)
        if hit is not None:
            _STAMPED[stamp] = hit
            return hit
        cache = _cache_dir() / f"{domain}-{compiled.digest[:16]}-{_lark_version()}.lark-cache"
        try:
            parser = lark.Lark(
                compiled.source,
                parser="lalr",
                lexer=_TokenListLexer,
                strict=True,
                maybe_placeholders=False,
                start="start",
                cache=str(cache),
            )
        except lark.exceptions.LarkError as exc:
            from guard.shapes.conflicts import conflicts

            first = " ".join(str(exc).strip().split())[:300]
            try:
                found = conflicts(compiled.source, limit=5)
            except lark.exceptions.LarkError:
                found = []
            if not found:
                raise GrammarError(f"{path.name} could not be compiled: {first}", location=str(path)) from None
            detail = "; ".join(map(str, found))
            raise GrammarError(f"{path.name} is not LALR(1): {detail}", location=str(path)) from None
        lib = Library(compiled, parser)
        _LOADED[key] = lib
        _STAMPED[stamp] = lib
        return lib


def _stat(path: Path) -> tuple[str, int, int]:
    try:
        st = path.stat()
    except OSError:
        return (str(path), -1, -1)
    return (str(path), st.st_mtime_ns, st.st_size)


def _lark_version() -> str:
    return hashlib.sha256(lark.__version__.encode()).hexdigest()[:8]


__all__ = ["Tok", "tokens", "Library", "load_library"]

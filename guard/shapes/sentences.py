"""A domain's sentence library: its lexicon compiled to one strict LALR(1) Lark parser (cached on disk), the
lexer that turns one template unit into tokens, and where domains are found (a user's grammar directories
first, ``grammars/lexicons/`` last)."""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import os
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lark
import regex
from lark import Token
from lark.lexer import Lexer

from guard._resources import data_path
from guard.errors import GrammarError
from guard.shapes import tables
from guard.shapes.compiler import NEVER, SCREEN, SLOT_TERMINALS, Compiled, compile_files
from guard.shapes.text import EMOJI

_WORD = regex.compile(r"'[sS]\b|[A-Za-z0-9]+(?:'(?![sS]\b)[A-Za-z0-9]+|-[A-Za-z0-9]+)*")
_PUNCT = frozenset(",.;:!?#()/&-")
# curly quotes read as straight ones; a dash or a middle dot between two parts of a line reads as a comma, a bar
# or a bullet or a slash as a semicolon, an arrow as a colon (one character for one, so positions stay)
_QUOTES = str.maketrans(
    {
        "\u2019": "'",
        "\u2018": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2014": ",",
        "\u2013": ",",
        "\u00b7": ",",
        "|": ";",
        "\u2022": ";",
        "\u2192": ":",
        "/": ";",
    }
)
_DASHES = regex.compile("[\u2014\u2013\u00b7]")
"""The second reading of a line with a dash or a middle dot: the first one is a colon, between a label and its
values ("Status \u2014 {status}", "Order {id} \u2014 {n} items \u2014 {total}"), where the first reading (a comma)
is a clause's aside."""
_EMOJI = regex.compile(rf"[{EMOJI}]")
# Markdown emphasis and code marks are formatting: "**Status:** {status}", "*{status}*", "`{order_id}`"
_EMPHASIS = regex.compile(r"\*\*|(?<![\w*])\*(?=[^\s*])|(?<=[^\s*])\*(?![\w*])")
# "e-mail" reads as "email" (the hyphen becomes a blank after the word, so positions stay)
_EMAIL = regex.compile(r"\b([eE])-([mM][aA][iI][lL][sS]?)\b")
# "item(s)" reads as "items", the plural people mean (three characters for three, so positions stay)
_PLURAL = regex.compile(r"(?<=[A-Za-z])\(s\)")


def _normal(text: str, colon: bool = False) -> str:
    text = _EMPHASIS.sub(lambda m: " " * len(m.group()), text.replace("`", "'"))
    if colon and (m := _DASHES.search(text)) is not None:
        text = f"{text[: m.start()]}:{text[m.end() :]}"
    return _EMAIL.sub(r"\1\2 ", _PLURAL.sub("s  ", text.translate(_QUOTES)))


SIGNED = "\x00signed"
"""The slot name :meth:`Library.signed_reading` gives a person's name in a signature: no template's slot is
spelled so, and the check binds nothing to it."""
_PERSON = regex.compile(
    r"(?:[-\u2013\u2014~][ ]*)?(?P<name>\p{Lu}\p{Ll}+(?:[ '\u2019-]\p{Lu}\p{Ll}*){0,3})(?=[ ]*(?:$|[,|\u2013\u2014-]))"
)
_SLOT = regex.compile(r'(["\']?)\{([A-Za-z_][A-Za-z0-9_]*)\}\1')
_FAST = regex.compile(
    r'(["\']?)\{([A-Za-z_][A-Za-z0-9_]*)\}\1'
    r"|('[sS]\b|[A-Za-z0-9]+(?:'(?![sS]\b)[A-Za-z0-9]+|-[A-Za-z0-9]+)*)"
    rf"|([^\s{EMOJI}])"
)
""":func:`tokens` in one pass of one expression (slot | word | any other visible character), for
:meth:`Library.lark_tokens`; tests/shapes/test_lexicon.py checks they agree."""


_FUNCTION = "to|and|then|or|on|in|at|for|with|from|by|of|the|a|an|your|if|when|you|we|it|is|are|so|next|under"
_SEGMENT = r"\p{Lu}[\p{L}\p{N}&'-]*(?:[ ](?!(?i:" + _FUNCTION + r")\b)[\p{L}\p{N}&'-]+){0,3}"
_SCREEN = regex.compile(
    r'"(?P<quoted>[^"{}\n]{1,60})"'
    r"|(?P<path>(?<![\p{L}\p{N}&'-])" + _SEGMENT + r"(?:[ ]?>[ ]?" + _SEGMENT + r")+)"
    r"|(?i:\b(?:tap|click|select|choose|press|pick|hit|open|go to|head to|navigate to|then|under))[ ]+"
    r"(?P<named>(?>" + _SEGMENT + r"))(?![ ]?>)"
    r"|(?i:\bthe)[ ]+(?P<place>" + _SEGMENT + r")(?=[ ](?i:page|tab|section|screen|menu|button|link|area)\b)"
)
_LABEL_WORD = regex.compile(r"[A-Za-z]+|\d")
_PATH_VERB = regex.compile(r"(?i:open|tap|click|select|choose|press|pick|hit|visit)[ ]+")
MAX_SCREEN_WORDS = 5


def _path_span(norm: str, start: int, end: int, claim: frozenset[str]) -> tuple[int, int]:
    """A path without the verb before it ("Open Settings > Security") and with its last segment cut before a
    claim word or digit ("... > Edit address before the parcel ships")."""
    verb = _PATH_VERB.match(norm, start, end)
    if verb is not None:
        start = verb.end()
    last = norm.rfind(">", start, end) + 1
    for w in _LABEL_WORD.finditer(norm, last, end):
        if w[0].isdigit() or w[0].lower() in claim:
            kept = norm[last : w.start()].rstrip()
            if kept.strip():
                end = last + len(kept)
            break
    return start, end


def screen_names(norm: str, claim: frozenset[str]) -> list[tuple[int, int]]:
    """Spans of ``norm`` (quotes already straightened) that name a screen, menu or button: a quoted name
    ("Track order"), a path (Settings > Security), capitalised words after a verb of the interface (select
    Cancel plan) or between "the" and "page", "tab", "button" and the like (the Invoices tab). None holds a
    digit or a claim word, so a name cannot carry what a sentence may not say; a bare name, and a path's last
    segment, is cut before its first claim word, and on a line in Title Case or capitals every word is
    capitalised, so only quotes and paths count there."""
    if '"' not in norm and ">" not in norm and not any(c.isupper() for c in norm[1:]):
        return []
    titled = not any(w[0].islower() for w in regex.findall(r"[A-Za-z]{2,}", norm))
    out: list[tuple[int, int]] = []
    for m in _SCREEN.finditer(norm):
        kind = m.lastgroup or "quoted"
        if kind in ("named", "place") and titled:
            continue
        start, end = (m.start(), m.end()) if kind == "quoted" else m.span(kind)
        words = _LABEL_WORD.findall(norm[start:end])
        if kind == "path":
            start, end = _path_span(norm, start, end, claim)
            words = _LABEL_WORD.findall(norm[start:end])
        if kind == "named":
            kept = 0
            for w in words:
                if w.isdigit() or w.lower() in claim:
                    break
                kept += 1
            if kept == 0:
                continue
            if kept < len(words):
                cut = list(regex.finditer(r"[A-Za-z]+", norm[start:end]))[kept - 1]
                end = start + cut.end()
            words = words[:kept]
        if not words or len(words) > MAX_SCREEN_WORDS or any(w.isdigit() or w.lower() in claim for w in words):
            continue
        out.append((start, end))
    return out


STARTS = ("start", "subject", "greet")
"""Rules the parser can start from: whole units, and for ``guard shapes suggest`` a subject or a greeting."""


class _TokenListLexer(Lexer):
    """Lark lexer for input guard has already tokenised (a list of ``lark.Token``)."""

    def __init__(self, conf: Any) -> None:
        self.conf = conf

    def lex(self, data: Any) -> Any:  # type: ignore[override]
        return iter(data)


@dataclass(frozen=True)
class Tok:
    """One token of a line: ``kind`` is word, punct, slot or other; offsets are into the original text."""

    kind: str
    text: str
    start: int
    end: int


def tokens(text: str, claim: frozenset[str] = frozenset()) -> list[Tok]:
    """Words (lower-cased, "'s" split off, curly apostrophes straightened), punctuation, slots (quotes around a
    slot dropped), screen names (:func:`screen_names`; ``claim`` the claim words a name may not hold) and, for
    anything else, single ``other`` characters."""
    norm = _normal(text)
    names = dict(screen_names(norm, claim))
    out: list[Tok] = []
    i = 0
    while i < len(norm):
        ch = norm[i]
        if ch.isspace() or _EMOJI.match(ch):
            i += 1
            continue
        if i in names:
            out.append(Tok("screen", norm[i : names[i]].strip('"'), i, names[i]))
            i = names[i]
            continue
        m = _SLOT.match(norm, i)
        if m:
            out.append(Tok("slot", m.group(2), m.start(2) - 1, m.end(2) + 1))
            i = m.end()
            continue
        m = _WORD.match(norm, i)
        if m:
            out.append(Tok("word", m.group().lower(), i, m.end()))
            i = m.end()
            continue
        out.append(Tok("punct" if ch in _PUNCT else "other", ch, i, i + 1))
        i += 1
    return out


class Library:
    """A domain's compiled sentence library."""

    def __init__(self, compiled: Compiled, parser: lark.Lark, files: tuple[Path, ...] = ()) -> None:
        self.compiled = compiled
        self.lark = parser
        self.files = files
        """The domain lexicon, core.yaml and compose.lark it was built from."""
        self.vocabulary: dict[str, str] = {}
        """Word or punctuation mark to its Lark terminal."""
        for t in parser.terminals:
            if t.name.endswith("_SLOT") or t.name.startswith(NEVER + "_"):  # not the word "never" (NEVER)
                continue
            self.vocabulary[str(t.pattern.value)] = t.name
        self.spelling = {v: k.replace("+", " ") for k, v in self.vocabulary.items()}
        """Lark terminal to its word or punctuation mark."""
        self.fused: dict[tuple[str, str], str] = {}
        """Two words the grammar also reads as one token ("on+your": :meth:`readings`), to their terminal."""
        for word, name in self.vocabulary.items():
            first, plus, second = word.partition("+")
            if plus and "+" not in second:
                self.fused[(first, second)] = name
        self.claim = compiled.claim_words
        self.screens = any(t.name == SCREEN for t in parser.terminals)
        """Whether the grammar takes screen names anywhere (a user's compose.lark may not)."""

    @property
    def domain(self) -> str:
        return self.compiled.domain

    @functools.cached_property
    def firsts(self) -> dict[str, frozenset[str]]:
        """The terminals each rule can begin with (for grouping what a failed parse expected)."""
        rules = list(tables.shapes(self.lark.rules))
        first: dict[str, set[str]] = {head: set() for head, _ in rules}
        nullable: set[str] = set()
        changed = True
        while changed:
            changed = False
            for head, expansion in rules:
                before = len(first[head])
                empty = True
                for is_term, name in expansion:
                    if is_term:
                        first[head].add(name)
                        empty = False
                        break
                    first[head] |= first.get(name, set())
                    if name not in nullable:
                        empty = False
                        break
                if empty and head not in nullable:
                    nullable.add(head)
                    changed = True
                changed = changed or len(first[head]) != before
        return {k: frozenset(v) for k, v in first.items()}

    def lark_tokens(
        self, text: str, slot_types: Mapping[str, str], screens: bool = True, colon: bool = False
    ) -> list[Token]:
        """The Lark tokens of one unit (:func:`tokens`, typed: a slot by its claim type, a word by the
        terminal that spells it; UNKNOWN_WORD, OTHER and UNTYPED_SLOT are accepted nowhere). With ``screens``
        off, screen names are read as words (a domain may list its menu items as words); with ``colon``, a dash
        or a middle dot reads as a colon."""
        norm = _normal(text, colon)
        names = screen_names(norm, self.claim) if screens and self.screens else []
        if not names:
            return list(self._plain(norm, 0, len(norm), slot_types))
        out: list[Token] = []
        at = 0
        for start, end in names:
            out += self._plain(norm, at, start, slot_types)
            out.append(Token(SCREEN, norm[start:end].strip('"'), start_pos=start, end_pos=end))
            at = end
        out += self._plain(norm, at, len(norm), slot_types)
        return out

    def _plain(self, norm: str, start: int, end: int, slot_types: Mapping[str, str]) -> Iterator[Token]:
        vocabulary = self.vocabulary
        for m in _FAST.finditer(norm, start, end):
            name, word, other = m.group(2, 3, 4)
            if name is not None:
                kind = SLOT_TERMINALS.get(slot_types.get(name, ""), "UNTYPED_SLOT")
                yield Token(kind, name, start_pos=m.start(2) - 1, end_pos=m.end(2) + 1)
            elif word is not None:
                word = word.lower()
                yield Token(vocabulary.get(word, "UNKNOWN_WORD"), word, start_pos=m.start(), end_pos=m.end())
            else:
                kind = vocabulary.get(other, "UNKNOWN_WORD") if other in _PUNCT else "OTHER"
                yield Token(kind, other, start_pos=m.start(), end_pos=m.end())

    def parse(self, text: str, slot_types: dict[str, str]) -> lark.Tree[Any] | None:
        """The parse tree of one line, or None when it is not approved wording."""
        for toks in self.readings(text, slot_types):
            try:
                return self.lark.parse(toks, start="start")
            except lark.exceptions.LarkError:
                continue
        return None

    def readings(self, text: str, slot_types: Mapping[str, str]) -> Iterator[list[Token]]:
        """The token lists a unit may be read as, in order: with screen names, then (when it has any) with them
        as plain words, since a domain may list menu items as words ("tap cancel order"); last, when it has a dash
        or a middle dot, with those read as a colon ("Order {id} \u2014 {status}")."""
        toks = self.lark_tokens(text, slot_types)
        yield toks
        if any(t.type == SCREEN for t in toks):
            yield self.lark_tokens(text, slot_types, screens=False)
        if self.fused:
            yield from self._fusions(toks)
        if _DASHES.search(text):
            yield self.lark_tokens(text, slot_types, colon=True)

    def signed_reading(self, text: str, slot_types: Mapping[str, str]) -> list[Token] | None:
        """A line after a sign-off that begins with a person's name ("Sam", "Priya - Support", "- Tom"): the name
        read as a string slot that no claim fills (:data:`SIGNED`), since a signature says who writes, not a fact
        about what the answer is about. None when the line begins with no name or the name holds a claim word."""
        m = _PERSON.match(text)
        if m is None or any(w.lower() in self.claim for w in regex.split(r"[ '\u2019-]", m["name"])):
            return None
        name = Token("STRING_SLOT", SIGNED, start_pos=m.start("name"), end_pos=m.end("name"))
        rest = self.lark_tokens(text[m.end() :], slot_types)
        for t in rest:
            t.start_pos = int(t.start_pos or 0) + m.end()
            t.end_pos = int(t.end_pos or 0) + m.end()
        return [name, *rest]

    def _fusions(self, toks: list[Token]) -> Iterator[list[Token]]:
        """Readings with two words made one fused token ("on your" as ``on+your``): each such pair alone, then
        all of them when there are several; so a unit costs at most one parse more per pair."""
        pairs = [
            (i, name)
            for i in range(len(toks) - 1)
            if (name := self.fused.get((str(toks[i].value), str(toks[i + 1].value)))) is not None
            and toks[i].type == self.vocabulary.get(str(toks[i].value))
            and toks[i + 1].type == self.vocabulary.get(str(toks[i + 1].value))
        ]
        chosen = [[p] for p in pairs]
        if len(pairs) > 1:
            chosen.append(pairs)
        for group in chosen:
            at = dict(group)
            out: list[Token] = []
            i = 0
            while i < len(toks):
                if i in at:
                    a, b = toks[i], toks[i + 1]
                    out.append(Token(at[i], f"{a.value} {b.value}", start_pos=a.start_pos, end_pos=b.end_pos))
                    i += 2
                else:
                    out.append(toks[i])
                    i += 1
            yield out


_LOCK = threading.Lock()
_LOADED: dict[tuple[str, str], Library] = {}
_STAMPED: dict[tuple[object, ...], Library] = {}
"""Libraries by their files' paths, mtimes and sizes: a warm load reads three stats and compiles nothing."""


def shipped_lexicons() -> Path:
    """guard's shipped lexicons."""
    return data_path("grammars") / "lexicons"


def _beside(base: Path, name: str) -> Path:
    """``name`` from ``base`` when the directory has its own, else guard's shipped one."""
    own = base / name
    return own if own.is_file() else shipped_lexicons() / name


def _hint_path(domain: str, lexicon: Path) -> Path:
    """Where the word groups the last build of this lexicon wrote out are kept (:func:`tables.build`)."""
    return tables.cache_dir() / f"{domain}-{hashlib.sha256(str(lexicon.resolve()).encode()).hexdigest()[:12]}.hint"


def _files(domain: str, lexicon_dir: Path | None) -> tuple[Path, Path, Path]:
    """The lexicon, core and composition files a domain is compiled from."""
    base = lexicon_dir or shipped_lexicons()
    path = base / f"{domain}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in base.glob("*.yaml") if p.stem != "core" and "." not in p.stem)
        raise GrammarError(f"unknown domain {domain!r}; known domains: {', '.join(known)}", location=domain)
    return (path, _beside(base, "core.yaml"), _beside(base, "compose.lark"))


@dataclass(frozen=True)
class Checked:
    """What :func:`check_library` found: the files read and the size of the grammar they make."""

    domain: str
    files: tuple[Path, Path, Path]
    rules: int
    terminals: int
    kinds: dict[str, int]
    """Generated rules with a meaning, by kind (statement, state, label, ...)."""


def check_library(domain: str, lexicon_dir: Path | None = None) -> Checked:
    """Compile a domain's lexicon and lower it to Lark rules without the LALR analysis: every error but a
    conflict (a phrase with a claim word, a name used and not defined, a rule defined twice) in seconds, for an
    author editing a lexicon; :func:`load_library` then finds conflicts, and names both rules. Where an earlier
    build wrote word groups out in place, the check lowers that form too (a group written out can repeat an
    alternative written beside it)."""
    files = _files(domain, lexicon_dir)
    compiled = compile_files(domain, *files)
    terminals, rules = tables.lower(compiled, STARTS, files[0].name)
    hint = tables.read_hint(_hint_path(domain, files[0]))
    if hint:
        tables.lower(compile_files(domain, *files, inline=hint), STARTS, files[0].name)
    kinds = Counter(m.kind for m in compiled.meta.values())
    return Checked(domain, files, len(rules), len(terminals), dict(sorted(kinds.items())))


def load_library(domain: str, lexicon_dir: Path | None = None) -> Library:
    """A domain's library from ``<lexicon_dir>/<domain>.yaml`` (default: guard's ``grammars/lexicons``), with
    that directory's ``core.yaml`` and ``compose.lark`` where it has them and guard's otherwise.

    The Lark tables are cached on disk by the digest of the generated grammar, so only the first load after a
    lexicon change pays for the LALR construction.
    """
    files = _files(domain, lexicon_dir)
    path = files[0]
    stamp = (domain, *(_stat(f) for f in files))
    hit = _STAMPED.get(stamp)
    if hit is not None:
        return hit
    digest = tables.key(domain, files)
    with _LOCK:
        hit = _LOADED.get((domain, digest))
        if hit is not None:
            if hit.files != files:
                hit = Library(hit.compiled, hit.lark, files)
            _STAMPED[stamp] = hit
            return hit
        cache = tables.cache_dir() / f"{domain}-{digest}.tables"
        with _collector_paused():
            stored = tables.read(cache)
            if stored is None:
                hint = _hint_path(domain, path)
                compiled, parts = tables.build(
                    lambda inline: compile_files(domain, *files, inline=inline),
                    _TokenListLexer,
                    STARTS,
                    path.name,
                    tables.read_hint(hint),
                )
                tables.write(cache, compiled, parts)
                tables.write_hint(hint, parts["inline"])
            else:
                compiled, parts = stored
            lib = Library(compiled, tables.assemble(parts, _TokenListLexer, STARTS), files)
        _LOADED[(domain, digest)] = lib
        _STAMPED[stamp] = lib
        return lib


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Reading a library makes hundreds of thousands of objects that all live on; Python's collector would scan
    them again and again while they are made (about 60% of a load)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _stat(path: Path) -> tuple[str, int, int]:
    try:
        st = path.stat()
    except OSError:
        return (str(path), -1, -1)
    return (str(path), st.st_mtime_ns, st.st_size)


def grammar_dirs(grammar_dir: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None = None) -> list[Path]:
    """Directories searched for lexicons: the user's first, guard's shipped lexicons last."""
    dirs: list[Path] = []
    if grammar_dir is not None:
        items = [grammar_dir] if isinstance(grammar_dir, (str, os.PathLike)) else list(grammar_dir)
        for d in items:
            p = Path(d)
            if not p.is_dir():
                raise GrammarError(f"grammar directory {str(p)!r} does not exist", location=str(p))
            dirs.append(p.resolve())
    dirs.append(shipped_lexicons())
    return dirs


_SHARED = ("core", "compose")


def list_domains(grammar_dir: Any = None) -> dict[str, Path]:
    """Every domain found, name to lexicon file; a user's domain hides a shipped one of the same name."""
    found: dict[str, Path] = {}
    for d in grammar_dirs(grammar_dir):
        for f in sorted(d.glob("*.yaml")):
            if f.stem not in _SHARED and "." not in f.stem and f.stem not in found:
                found[f.stem] = f
    return found


def load_domain(domain: str, grammar_dir: Any = None) -> Library:
    """The sentence library of ``domain`` from the user's grammar directories or guard's lexicons.

    A hand-written ``<domain>.lark`` (the format before lexicons) is an error, never silently skipped.
    """
    return load_library(domain, domain_dir(domain, grammar_dir))


def domain_dir(domain: str, grammar_dir: Any = None) -> Path:
    """The first grammar directory that holds ``<domain>.yaml``."""
    for d in grammar_dirs(grammar_dir):
        if (d / f"{domain}.yaml").is_file():
            return d
        if (d / f"{domain}.lark").is_file():
            raise GrammarError(
                f"{d / (domain + '.lark')}: hand-written .lark sentence libraries are no longer read; write the "
                f"domain as a lexicon, {domain}.yaml (see grammars/lexicons/README.md)",
                location=str(d / f"{domain}.lark"),
            )
    known = ", ".join(sorted(list_domains(grammar_dir))) or "none"
    raise GrammarError(f"unknown domain {domain!r}; known domains: {known}", location=domain)


__all__ = [
    "Tok",
    "tokens",
    "screen_names",
    "Library",
    "load_library",
    "load_domain",
    "check_library",
    "Checked",
    "domain_dir",
    "list_domains",
    "grammar_dirs",
    "shipped_lexicons",
]

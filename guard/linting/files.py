"""Files for ``guard lint``: which files to read, their slot types, which codes to keep, and a lint per file.

Which files are templates (the rule ``guard lint DIR`` follows, and ``--force-exclude`` applies to named files):

- ``*.tmpl`` and ``*.template`` are plain templates;
- ``*.txt`` is a plain template unless its name is one a repository uses for something else (licences,
  read-me and change files, ``requirements*.txt``, ``constraints*.txt``, ``robots.txt``, ``CMakeLists.txt``:
  :data:`NOT_TEMPLATES`);
- ``*.json`` is a payload when it holds an ``"answer_template"`` key, and is passed over otherwise
  (``package.json``, ``tsconfig.json``).

Directories that tools own (:data:`DEFAULT_EXCLUDES`, any virtual environment, ``*.egg-info``) are never
entered, paths matched by ``.gitignore`` files (from the repository's root down) are skipped, and so are
``--exclude`` / ``exclude`` patterns (gitignore syntax, relative to the configuration's directory).
A file named on the command line is linted whatever it is called, unless ``force_exclude`` is set.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from guard.linting.runner import LintResult, Stage, lint, lint_payload

SIDECAR_SUFFIX = ".slots.yaml"
TEMPLATE_SUFFIXES = (".txt", ".tmpl", ".template", ".json")
"""File kinds ``guard lint DIR`` may pick up; ``.json`` files are payloads, the rest plain templates."""

DEFAULT_EXCLUDES = (
    ".bzr",
    ".direnv",
    ".eggs",
    ".git",
    ".hg",
    ".hypothesis",
    ".ipynb_checkpoints",
    ".mypy_cache",
    ".nox",
    ".pytest_cache",
    ".ruff_cache",
    ".svn",
    ".tox",
    ".venv",
    ".vscode",
    ".idea",
    "__pycache__",
    "__pypackages__",
    "_build",
    "build",
    "dist",
    "node_modules",
    "site-packages",
    "venv",
)
"""Directory names never entered when walking a directory."""

NOT_TEMPLATES = (
    "licen[cs]e*",
    "copying*",
    "notice*",
    "readme*",
    "changelog*",
    "changes*",
    "history*",
    "authors*",
    "contributors*",
    "requirements*.txt",
    "*-requirements.txt",
    "*_requirements.txt",
    "constraints*.txt",
    "robots.txt",
    "cmakelists.txt",
)
"""File names (glob, any case) that are never templates even with a template suffix."""

_PAYLOAD_KEY = re.compile(r'"answer_template"\s*:')
_DISABLE = re.compile(r"[ \t]*(?:#|//)[ \t]*guard:[ \t]*disable[ \t]*=([^\n]*)(?:\n|\Z)")


def parse_slot_types(items: Sequence[str]) -> dict[str, str]:
    """``["eta=date", "total=money"]`` to ``{"eta": "date", "total": "money"}``."""
    from guard.errors import OptionError

    out: dict[str, str] = {}
    for item in items:
        name, sep, kind = item.partition("=")
        if not sep or not name.strip() or not kind.strip():
            raise OptionError(f"--slot-type {item!r} must look like NAME=TYPE, e.g. eta=date", location="--slot-type")
        out[name.strip()] = kind.strip()
    return out


def read_sidecar(path: Any) -> dict[str, str]:
    """Slot types from ``<template>.slots.yaml`` beside a template (a mapping of slot name to type)."""
    import yaml

    from guard.errors import PayloadError

    side = Path(str(path) + SIDECAR_SUFFIX)
    if not side.is_file():
        return {}
    try:
        data = yaml.safe_load(side.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise PayloadError(f"cannot read slot types from {side}: {exc}", location=str(side)) from None
    if data is None:
        return {}
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise PayloadError(f"{side} must map slot names to types, e.g. 'eta: date'", location=str(side))
    return dict(data)


def is_template(path: Any) -> bool:
    """Whether a file is a template or payload by the rule in this module's docstring."""
    import fnmatch

    p = Path(path)
    name = p.name.lower()
    if name.endswith(SIDECAR_SUFFIX) or p.suffix.lower() not in TEMPLATE_SUFFIXES:
        return False
    if any(fnmatch.fnmatchcase(name, pattern) for pattern in NOT_TEMPLATES):
        return False
    if p.suffix.lower() == ".json":
        try:
            with p.open("rb") as fh:
                head = fh.read(1 << 20).decode("utf-8", "replace")
        except OSError:
            return True  # named so that the report says it could not be read
        return _PAYLOAD_KEY.search(head) is not None
    return True


def _is_tool_dir(d: Path) -> bool:
    return d.name in DEFAULT_EXCLUDES or d.name.endswith(".egg-info") or (d / "pyvenv.cfg").is_file()


@dataclass
class _Ignores:
    """``.gitignore`` files (each with its directory) and the user's exclude patterns (with theirs)."""

    root: Path
    exclude: Any = None
    gitignore: bool = True
    specs: list[tuple[Path, Any]] = field(default_factory=list)
    read: dict[Path, Any] = field(default_factory=dict)

    @classmethod
    def build(cls, root: Path, exclude: Sequence[str], gitignore: bool) -> _Ignores:
        import pathspec

        spec = pathspec.GitIgnoreSpec.from_lines(exclude) if exclude else None
        return cls(root.resolve(), spec, gitignore)

    def add_gitignore(self, d: Path) -> None:
        import pathspec

        if not self.gitignore:
            return
        d = d.resolve()
        if d not in self.read:
            f = d / ".gitignore"
            try:
                lines = f.read_text(encoding="utf-8", errors="replace").splitlines() if f.is_file() else None
            except OSError:
                lines = None
            self.read[d] = None if lines is None else pathspec.GitIgnoreSpec.from_lines(lines)
        if self.read[d] is not None:
            self.specs.append((d, self.read[d]))

    def ancestors(self, top: Path) -> None:
        """The ``.gitignore`` files from the repository's root (the nearest ``.git`` above) down to ``top``."""
        top = top.resolve()
        chain = [top, *top.parents]
        repo = next((d for d in chain if (d / ".git").exists()), None)
        if repo is None:
            return
        for d in reversed(chain[: chain.index(repo) + 1]):
            if d != top:
                self.add_gitignore(d)

    def ignored(self, path: Path, is_dir: bool) -> bool:
        path = path.resolve()
        tail = "/" if is_dir else ""
        if self.exclude is not None:
            try:
                rel = path.relative_to(self.root).as_posix()
            except ValueError:
                rel = None
            if rel and self.exclude.match_file(rel + tail):
                return True
        out = False
        for base, spec in self.specs:
            try:
                rel = path.relative_to(base).as_posix()
            except ValueError:
                continue
            result = spec.check_file(rel + tail)
            if result.include is not None:
                out = result.include
        return out


def find_templates(
    paths: Sequence[Any],
    *,
    exclude: Sequence[str] = (),
    root: Any = None,
    respect_gitignore: bool = True,
    force_exclude: bool = False,
    accept: Any = None,
) -> list[Any]:
    """Files to lint: each file as given, and every template file under each directory (sorted).

    ``exclude`` holds gitignore-style patterns relative to ``root`` (default: the working directory);
    ``accept`` replaces :func:`is_template` as the test of which files to take.
    """
    accept = accept or is_template
    paths = [Path(p) for p in paths]
    out: list[Path] = []
    if not force_exclude and not any(p.is_dir() for p in paths):
        return paths  # files named on the command line are linted as given: no ignore rules to read
    ignores = _Ignores.build(Path(root) if root is not None else Path.cwd(), exclude, respect_gitignore)
    for p in paths:
        if p.is_dir():
            out.extend(sorted(_walk(p, ignores, accept)))
        elif not force_exclude or (accept(p) and not _excluded_file(p, ignores)):
            out.append(p)
    return out


def _excluded_file(p: Path, ignores: _Ignores) -> bool:
    ignores.ancestors(p.parent)
    if ignores.ignored(p, False):
        return True
    return any(_is_tool_dir(d) or ignores.ignored(d, True) for d in p.resolve().parents)


def _walk(top: Path, ignores: _Ignores, accept: Any) -> Iterable[Path]:
    ignores.ancestors(top)
    n_specs = len(ignores.specs)
    for dirpath, dirnames, filenames in os.walk(top):
        d = Path(dirpath)
        del ignores.specs[n_specs:]  # a nested .gitignore applies to its own directory only
        for parent in [*reversed(d.relative_to(top).parents), d.relative_to(top)]:
            ignores.add_gitignore(top / parent)
        dirnames[:] = sorted(x for x in dirnames if not _is_tool_dir(d / x) and not ignores.ignored(d / x, True))
        for name in filenames:
            f = d / name
            if accept(f) and not ignores.ignored(f, False):
                yield f


def inline_disables(text: str) -> tuple[frozenset[str], int]:
    """Codes switched off by header lines (``# guard: disable=R401,S2``) and how many characters they take.

    Header lines are the first lines of a template file that start with ``#`` or ``//`` and say
    ``guard: disable=``; they are not part of the template.
    """
    codes: set[str] = set()
    pos = 0
    while m := _DISABLE.match(text, pos):
        codes.update(c.strip().upper() for c in m.group(1).split(",") if c.strip())
        pos = m.end()
    return frozenset(codes), pos


@dataclass(frozen=True)
class CodeFilter:
    """Which finding codes to report: ``select`` and ``ignore`` hold codes or prefixes (``S2``, ``T``),
    ``per_file`` pairs gitignore-style patterns (relative to ``root``) with codes ignored in matching files."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file: tuple[tuple[str, tuple[str, ...]], ...] = ()
    root: Any = None

    def for_file(self, path: Any, disabled: Iterable[str] = ()) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The select and ignore lists for one file."""
        ignore = list(self.ignore) + list(disabled)
        if self.per_file and str(path) != "-":
            import pathspec

            p = Path(path).resolve()
            try:
                rel = p.relative_to(Path(self.root or Path.cwd()).resolve()).as_posix()
            except ValueError:
                rel = p.as_posix()
            for pattern, codes in self.per_file:
                if pathspec.GitIgnoreSpec.from_lines([pattern]).match_file(rel):
                    ignore.extend(codes)
        return self.select, tuple(ignore)

    def keep(self, code: str, select: Sequence[str], ignore: Sequence[str]) -> bool:
        """Whether a finding of ``code`` is reported under these lists (ignore beats select)."""
        if select and not any(code.startswith(s) for s in select):
            return False
        return not any(code.startswith(i) for i in ignore)


def check_codes(selectors: Iterable[str], where: str) -> tuple[str, ...]:
    """Codes or code prefixes, upper-cased; one that no finding code starts with is an OptionError."""
    from guard.errors import OptionError
    from guard.findings import CATALOGUE
    from guard.linting.config import did_you_mean

    out = []
    for raw in selectors:
        for s in (x.strip().upper() for x in str(raw).split(",")):
            if not s:
                continue
            if not any(c.startswith(s) for c in CATALOGUE):
                hint = did_you_mean(s, CATALOGUE) or "; see guard rules"
                raise OptionError(f"{where}: no finding code starts with {s!r}{hint}", location=where)
            out.append(s)
    return tuple(out)


@dataclass(frozen=True)
class FileLint:
    """The lint result of one file; ``template`` is the text the findings' offsets index.

    ``offset`` is where the template starts in the file (after inline-disable header lines); ``disabled``
    the codes those lines switch off.
    """

    path: str
    template: str
    file_text: str
    payload: bool
    result: LintResult
    offset: int = 0
    disabled: frozenset[str] = frozenset()


def lint_file(
    path: Any,
    *,
    domain: str,
    slot_types: Mapping[str, str] | None = None,
    grammar_dir: Any = None,
    stages: Sequence[tuple[str, Stage]] | None = None,
) -> FileLint:
    """Lint a template file (slot types from its sidecar, then ``slot_types``) or a payload ``.json``."""
    from guard.errors import PayloadError

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PayloadError(f"cannot read {p}: {getattr(exc, 'strerror', None) or exc}", location=str(p)) from None
    if p.suffix == ".json":
        result = lint_payload(text, domain=domain, grammar_dir=grammar_dir, stages=stages)
        return FileLint(str(path), result.template, text, True, result)
    disabled, offset = inline_disables(text)
    types = {**read_sidecar(p), **dict(slot_types or {})}
    template = text[offset:]
    result = lint(template, domain=domain, slot_types=types, grammar_dir=grammar_dir, stages=stages)
    return FileLint(str(path), template, text, False, result, offset, disabled)


__all__ = [
    "parse_slot_types",
    "read_sidecar",
    "find_templates",
    "is_template",
    "inline_disables",
    "CodeFilter",
    "check_codes",
    "lint_file",
    "FileLint",
    "SIDECAR_SUFFIX",
    "TEMPLATE_SUFFIXES",
    "DEFAULT_EXCLUDES",
    "NOT_TEMPLATES",
]

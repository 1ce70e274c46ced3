"""Files for ``guard lint``: which files to read, their slot types, and a lint per file."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from guard.linting.runner import LintResult, Stage, lint, lint_payload

SIDECAR_SUFFIX = ".slots.yaml"
TEMPLATE_SUFFIXES = (".txt", ".tmpl", ".template", ".json")
"""File kinds ``guard lint DIR`` picks up; ``.json`` files are payloads, the rest plain templates."""


def parse_slot_types(items: Sequence[str]) -> dict[str, str]:
    """``["eta=date", "total=money"]`` to ``{"eta": "date", "total": "money"}``."""
    from guard.errors import PayloadError

    out: dict[str, str] = {}
    for item in items:
        name, sep, kind = item.partition("=")
        if not sep or not name.strip() or not kind.strip():
            raise PayloadError(f"--slot-type {item!r} must look like NAME=TYPE, e.g. eta=date", location="--slot-type")
        out[name.strip()] = kind.strip()
    return out


def read_sidecar(path: Any) -> dict[str, str]:
    """Slot types from ``<template>.slots.yaml`` beside a template (a mapping of slot name to type)."""
    from pathlib import Path

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


def find_templates(paths: Sequence[Any]) -> list[Any]:
    """Files to lint: each file as given, and every template file under each directory (sorted)."""
    from pathlib import Path

    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(
                sorted(
                    f
                    for f in p.rglob("*")
                    if f.is_file() and f.suffix in TEMPLATE_SUFFIXES and not f.name.endswith(SIDECAR_SUFFIX)
                )
            )
        else:
            out.append(p)
    return out


@dataclass(frozen=True)
class FileLint:
    """The lint result of one file; ``template`` is the text the findings' offsets index."""

    path: str
    template: str
    file_text: str
    payload: bool
    result: LintResult


def lint_file(
    path: Any,
    *,
    domain: str,
    slot_types: Mapping[str, str] | None = None,
    grammar_dir: Any = None,
    stages: Sequence[tuple[str, Stage]] | None = None,
) -> FileLint:
    """Lint a template file (slot types from its sidecar, then ``slot_types``) or a payload ``.json``."""
    from pathlib import Path

    from guard.errors import PayloadError

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PayloadError(f"cannot read {p}: {getattr(exc, 'strerror', None) or exc}", location=str(p)) from None
    if p.suffix == ".json":
        result = lint_payload(text, domain=domain, grammar_dir=grammar_dir, stages=stages)
        return FileLint(str(path), result.template, text, True, result)
    types = {**read_sidecar(p), **dict(slot_types or {})}
    result = lint(text, domain=domain, slot_types=types, grammar_dir=grammar_dir, stages=stages)
    return FileLint(str(path), text, text, False, result)


__all__ = [
    "parse_slot_types",
    "read_sidecar",
    "find_templates",
    "lint_file",
    "FileLint",
    "SIDECAR_SUFFIX",
    "TEMPLATE_SUFFIXES",
]

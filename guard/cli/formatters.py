"""Output formats for findings over many files: text (with a caret), JSON, SARIF 2.1.0 and GitHub annotations.

Every command that reports findings builds one :class:`FileReport` per input
and passes the list to :func:`render`. Finding offsets index
``FileReport.source`` (the template); ``FileReport.file_offsets`` maps them into
the file itself when the template sits inside a larger file (a payload).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from guard import __version__
from guard.errors import OptionError
from guard.findings import CATALOGUE, Finding, Severity, line_col

FORMATS = ("text", "json", "sarif", "github")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


@dataclass
class FileReport:
    """The findings for one input file, or the error that stopped it being checked."""

    path: str
    source: str = ""
    findings: list[Finding] = field(default_factory=list)
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    file_text: str | None = None
    file_offsets: list[int] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and not any(f.severity == Severity.ERROR for f in self.findings)

    def file_position(self, offset: int) -> tuple[int, int]:
        """1-based line and column in the file of a template offset."""
        text = self.source
        if self.file_text is not None:
            text = self.file_text
            offset = self.file_offsets[min(offset, len(self.file_offsets) - 1)] if self.file_offsets else 0
        return line_col(text, offset)


def json_string_offsets(file_text: str, key: str) -> list[int] | None:
    """File offset of every character of the JSON string value of ``key`` (plus one past its end)."""
    import re

    m = re.search(r'"' + re.escape(key) + r'"\s*:\s*"', file_text)
    if not m:
        return None
    out: list[int] = []
    i = m.end()
    while i < len(file_text) and file_text[i] != '"':
        out.append(i)
        if file_text[i] == "\\":
            if file_text[i + 1 : i + 2] == "u":
                code = int(file_text[i + 2 : i + 6], 16)
                i += 12 if 0xD800 <= code < 0xDC00 and file_text[i + 6 : i + 8] == "\\u" else 6
            else:
                i += 2
        else:
            i += 1
    out.append(i)
    return out


def counts(reports: Sequence[FileReport]) -> dict[str, int]:
    fs = [f for r in reports for f in r.findings]
    return {
        "files": len(reports),
        "files_with_findings": sum(1 for r in reports if r.findings),
        "files_with_errors": sum(1 for r in reports if r.error),
        "findings": len(fs),
        "errors": sum(1 for f in fs if f.severity == Severity.ERROR),
        "warnings": sum(1 for f in fs if f.severity == Severity.WARNING),
    }


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def format_text(reports: Sequence[FileReport]) -> str:
    """One block per finding: location, code and message, the template line with a caret, fixes."""
    out: list[str] = []
    for r in reports:
        if r.error:
            out.append(f"{r.path}: error: {r.error}")
            continue
        for f in r.findings:
            line, col = r.file_position(f.start)
            out.append(f"{r.path}:{line}:{col}: {f.severity.value} {f.code} {f.name}: {f.message}")
            out.extend(_context(r.source, f.start, f.end))
            near = f.data.get("nearest") or []
            if near:
                out.append("    nearest approved wording:")
                out.extend(f"      {n}" for n in near)
    out.append(_summary(reports))
    return "\n".join(out) + "\n"


def _summary(reports: Sequence[FileReport]) -> str:
    c = counts(reports)
    checked = c["files"] - c["files_with_errors"]
    summary = (
        f"{_plural(checked, 'file')} checked: {_plural(c['findings'], 'finding')} "
        f"({_plural(c['errors'], 'error')}, {_plural(c['warnings'], 'warning')})"
        f" in {_plural(c['files_with_findings'], 'file')}"
    )
    if c["files_with_errors"]:
        summary += f"; {_plural(c['files_with_errors'], 'file')} could not be checked"
    return summary


def _context(source: str, start: int, end: int) -> list[str]:
    """The finding's line and a caret under its span, as a terminal shows them.

    Written here rather than taken from a library: rich draws no caret under a span and the snippet
    renderers (annotate-snippets, codespan) are Rust. Only the width of what a terminal shows is rich's
    (``rich.cells.cell_len``: a CJK character or an emoji takes two columns, a combining mark none), and
    only for a line that is not ASCII, so the usual template pays no import for it.
    """
    if not source:
        return []
    start = max(0, min(start, len(source)))
    ls = source.rfind("\n", 0, start) + 1
    le = source.find("\n", start)
    le = len(source) if le < 0 else le
    text = source[ls:le].replace("\t", " ")
    before, span = text[: start - ls], text[start - ls : max(start, min(end, le)) - ls]
    if text.isascii():
        pad, width = len(before), len(span)
    else:
        from rich.cells import cell_len

        pad, width = cell_len(before), cell_len(span)
    return [f"    {text}", "    " + " " * pad + "^" * max(1, width)]


def format_json(reports: Sequence[FileReport]) -> str:
    import json  # imported here: a text report needs no json module

    files = []
    for r in reports:
        item: dict[str, Any] = {"path": r.path, "ok": r.ok, "error": r.error, "findings": []}
        for f in r.findings:
            d = f.to_dict()
            d["line"], d["column"] = r.file_position(f.start)
            item["findings"].append(d)
        item.update(r.extra)
        files.append(item)
    doc = {
        "tool": "guard",
        "version": __version__,
        "ok": all(r.ok for r in reports),
        "summary": counts(reports),
        "files": files,
    }
    return json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n"


SRCROOT = "%SRCROOT%"


def _location(path: str, root: Path | None) -> dict[str, Any]:
    """An artifact location: relative to ``%SRCROOT%`` when the file is under ``root``, an absolute URI
    otherwise (standard input keeps its name)."""
    from urllib.parse import quote

    if path in ("<stdin>", "-"):
        return {"uri": quote("<stdin>")}
    p = Path(path).resolve()
    if root is not None:
        try:
            return {"uri": quote(p.relative_to(root).as_posix()), "uriBaseId": SRCROOT}
        except ValueError:
            pass
    return {"uri": p.as_uri()}


def _fingerprint(r: FileReport, f: Finding, seen: dict[str, int]) -> str:
    """Stable across edits elsewhere in the file: the code, the flagged words and their line's text, and the
    how-manieth such finding in the file (not the line number, which any edit above would move)."""
    import hashlib

    ls = r.source.rfind("\n", 0, f.start) + 1
    le = r.source.find("\n", f.start)
    line = " ".join(r.source[ls : le if le >= 0 else len(r.source)].split())
    key = "\0".join((f.code, line, r.source[f.start : f.end]))
    seen[key] = seen.get(key, 0) + 1
    return hashlib.sha256(f"{key}\0{seen[key]}".encode()).hexdigest()[:32] + f":{seen[key]}"


def _rule(code: str, help_uri: str | None = None) -> dict[str, Any]:
    from guard.cli.rules import rule_markdown, rule_text

    entry = CATALOGUE.get(code)
    if entry is None:
        return {"id": code, "name": code, "shortDescription": {"text": code}}
    page = rule_text(code)
    full = " ".join(x for x in (entry.explanation, entry.why) if x) or entry.summary
    rule = {
        "id": code,
        "name": entry.name,
        "shortDescription": {"text": entry.summary},
        "fullDescription": {"text": full},
        "help": {"text": page, "markdown": rule_markdown(code)},
        "defaultConfiguration": {"level": _SARIF_LEVEL[entry.severity]},
        "properties": {"stage": entry.stage, "tags": [entry.stage]},
    }
    if help_uri is not None:
        rule["helpUri"] = help_uri.replace("{code}", code)
    return rule


def sarif(reports: Sequence[FileReport], root: Path | None = None, help_uri: str | None = None) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run: a rule per finding code used, a result per finding.

    Locations are relative to ``%SRCROOT%`` (``root``, default the working directory); columns count
    Unicode code points; each result has a ``partialFingerprints`` entry that survives edits to other lines.
    ``help_uri`` (``{code}`` replaced by each rule's code) becomes the rules' ``helpUri``: SARIF wants an
    absolute URI and guard has no site of its own, so it is the user's, pointing at pages that
    ``guard rules --write-docs`` wrote.
    """
    root = (root or Path.cwd()).resolve()
    codes = sorted({f.code for r in reports for f in r.findings})
    index = {c: i for i, c in enumerate(codes)}
    rules = [_rule(c, help_uri) for c in codes]
    results = []
    notifications = []
    for r in reports:
        where = _location(r.path, root)
        if r.error:
            notifications.append(
                {
                    "level": "error",
                    "message": {"text": r.error},
                    "locations": [{"physicalLocation": {"artifactLocation": where}}],
                }
            )
            continue
        seen: dict[str, int] = {}
        for f in r.findings:
            line, col = r.file_position(f.start)
            end_line, end_col = r.file_position(max(f.end, f.start + 1))
            text = f.message
            near = f.data.get("nearest") or []
            if near:
                text += " Nearest approved wording: " + " | ".join(near)
            results.append(
                {
                    "ruleId": f.code,
                    "ruleIndex": index[f.code],
                    "level": _SARIF_LEVEL[f.severity],
                    "message": {"text": text},
                    "locations": [
                        {
                            "physicalLocation": {
                                "artifactLocation": where,
                                "region": {
                                    "startLine": line,
                                    "startColumn": col,
                                    "endLine": end_line,
                                    "endColumn": end_col,
                                },
                            }
                        }
                    ],
                    "partialFingerprints": {"guardFinding/v1": _fingerprint(r, f, seen)},
                    "properties": {"name": f.name, "sentence": f.sentence, "data": f.data},
                }
            )
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "guard", "version": __version__, "rules": rules}},
                "originalUriBaseIds": {SRCROOT: {"uri": root.as_uri() + "/"}},
                "columnKind": "unicodeCodePoints",
                "invocations": [
                    {"executionSuccessful": not notifications, "toolExecutionNotifications": notifications}
                ],
                "results": results,
            }
        ],
    }


def format_sarif(reports: Sequence[FileReport], root: Path | None = None, help_uri: str | None = None) -> str:
    import json  # imported here: a text report needs no json module

    return json.dumps(sarif(reports, root, help_uri), indent=2, ensure_ascii=False, default=str) + "\n"


_GH_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def format_github(reports: Sequence[FileReport]) -> str:
    """GitHub Actions workflow commands (``::error file=...,line=...::message``), one per finding, then the
    text summary; a file that could not be checked is an error annotation on the file."""
    out: list[str] = []
    for r in reports:
        name = _gh_prop(PurePath(r.path).as_posix())
        if r.error:
            out.append(f"::error file={name},title={_gh_prop('guard: file not checked')}::{_gh_data(r.error)}")
            continue
        for f in r.findings:
            line, col = r.file_position(f.start)
            end_line, end_col = r.file_position(max(f.end, f.start + 1))
            where = f"file={name},line={line},col={col},endLine={end_line}"
            if end_line == line:
                where += f",endColumn={end_col}"
            title = _gh_prop(f"{f.code} {f.name}")
            out.append(f"::{_GH_LEVEL[f.severity]} {where},title={title}::{_gh_data(f.message)}")
    out.append(_summary(reports))
    return "\n".join(out) + "\n"


def render(reports: Sequence[FileReport], fmt: str, root: Path | None = None, help_uri: str | None = None) -> str:
    """``reports`` in ``fmt`` (one of :data:`FORMATS`); SARIF locations are relative to ``root``."""
    if fmt == "json":
        return format_json(reports)
    if fmt == "sarif":
        return format_sarif(reports, root, help_uri)
    if fmt == "text":
        return format_text(reports)
    if fmt == "github":
        return format_github(reports)
    raise OptionError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}", location="--format")


__all__ = [
    "FileReport",
    "FORMATS",
    "render",
    "format_text",
    "format_json",
    "format_sarif",
    "format_github",
    "sarif",
    "counts",
    "json_string_offsets",
    "line_col",
]

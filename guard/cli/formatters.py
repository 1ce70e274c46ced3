"""Output formats for findings over many files: text (with a caret), JSON and SARIF 2.1.0.

Every command that reports findings builds one :class:`FileReport` per input
and passes the list to :func:`render`. Finding offsets index
``FileReport.source`` (the template); ``FileReport.file_offsets`` maps them into
the file itself when the template sits inside a larger file (a payload).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from guard import __version__
from guard.errors import OptionError
from guard.findings import CATALOGUE, Finding, Severity, line_col

FORMATS = ("text", "json", "sarif")
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
    c = counts(reports)
    summary = (
        f"{_plural(c['files'], 'file')} checked: {_plural(c['findings'], 'finding')} "
        f"({_plural(c['errors'], 'error')}, {_plural(c['warnings'], 'warning')})"
        f" in {_plural(c['files_with_findings'], 'file')}"
    )
    if c["files_with_errors"]:
        summary += f"; {_plural(c['files_with_errors'], 'file')} could not be checked"
    out.append(summary)
    return "\n".join(out) + "\n"


def _context(source: str, start: int, end: int) -> list[str]:
    if not source:
        return []
    start = max(0, min(start, len(source)))
    ls = source.rfind("\n", 0, start) + 1
    le = source.find("\n", start)
    le = len(source) if le < 0 else le
    text = source[ls:le].replace("\t", " ")
    width = max(1, min(end, le) - start)
    return [f"    {text}", "    " + " " * (start - ls) + "^" * width]


def format_json(reports: Sequence[FileReport]) -> str:
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


def _uri(path: str) -> str:
    return PurePath(path).as_posix()


def sarif(reports: Sequence[FileReport]) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run: a rule per finding code used, a result per finding."""
    codes = sorted({f.code for r in reports for f in r.findings})
    index = {c: i for i, c in enumerate(codes)}
    rules = []
    for c in codes:
        entry = CATALOGUE.get(c)
        rules.append(
            {
                "id": c,
                "name": entry.name if entry else c,
                "shortDescription": {"text": entry.summary if entry else c},
                "defaultConfiguration": {"level": _SARIF_LEVEL[entry.severity] if entry else "error"},
            }
        )
    results = []
    notifications = []
    for r in reports:
        if r.error:
            notifications.append(
                {
                    "level": "error",
                    "message": {"text": r.error},
                    "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(r.path)}}}],
                }
            )
            continue
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
                                "artifactLocation": {"uri": _uri(r.path)},
                                "region": {
                                    "startLine": line,
                                    "startColumn": col,
                                    "endLine": end_line,
                                    "endColumn": end_col,
                                },
                            }
                        }
                    ],
                    "properties": {"name": f.name, "sentence": f.sentence, "data": f.data},
                }
            )
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "guard", "version": __version__, "rules": rules}},
                "invocations": [
                    {"executionSuccessful": not notifications, "toolExecutionNotifications": notifications}
                ],
                "results": results,
            }
        ],
    }


def format_sarif(reports: Sequence[FileReport]) -> str:
    return json.dumps(sarif(reports), indent=2, ensure_ascii=False, default=str) + "\n"


def render(reports: Sequence[FileReport], fmt: str) -> str:
    """``reports`` in ``fmt`` (one of :data:`FORMATS`)."""
    if fmt == "json":
        return format_json(reports)
    if fmt == "sarif":
        return format_sarif(reports)
    if fmt == "text":
        return format_text(reports)
    raise OptionError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}", location="--format")


__all__ = [
    "FileReport",
    "FORMATS",
    "render",
    "format_text",
    "format_json",
    "format_sarif",
    "sarif",
    "counts",
    "json_string_offsets",
    "line_col",
]

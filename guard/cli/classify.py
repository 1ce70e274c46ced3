"""``guard classify``: flag comparative, quantity, causal and temporal claims, one result per input line."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import typer

FORMATS = ("text", "json", "jsonl")
BATCH = 4096


def classify_cmd(
    file: str = typer.Argument("-", help="Text file with one sentence per line, or - for standard input."),
    fmt: str = typer.Option("text", "--format", "-f", help="Output format: text, json or jsonl."),
    model: Path | None = typer.Option(None, "--model", help="Model file (default: the model shipped with guard)."),
) -> None:
    """Print labels, per-label scores and evidence spans for every line (lines end at a line feed; CRLF too)."""
    from guard.cli._common import read_lines
    from guard.cli.main import skip_teardown
    from guard.errors import OptionError
    from guard.freetext.model import load

    if fmt not in FORMATS:
        raise OptionError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}", location="--format")
    lines = read_lines(file)
    # one pass in a process that ends after it: the model's caches hold no cycles, and a collection
    # between batches would walk all of them again
    enabled = gc.isenabled()
    gc.disable()
    clf = load(model)
    try:
        _classify(lines, clf, fmt)
    finally:
        if enabled:
            gc.enable()
    skip_teardown(clf)


def _classify(lines: list[str], clf, fmt: str) -> None:
    from guard.freetext.model import json_lines

    out = sys.stdout
    if fmt == "json":
        out.write("[")
    first = True
    for i in range(0, len(lines), BATCH):
        preds = clf.predict(lines[i : i + BATCH])
        if fmt == "text":
            out.write("".join(_text_line(p) for p in preds))
        elif fmt == "jsonl":
            out.write("".join([line + "\n" for line in json_lines(preds)]))
        else:
            chunk = ",\n".join(json_lines(preds))
            if chunk:
                out.write(("\n" if first else ",\n") + chunk)
                first = False
    if fmt == "json":
        out.write("\n]\n")


def _text_line(p) -> str:
    labels = ",".join(p.labels) or "-"
    evidence = "; ".join(f"{lab}: " + ", ".join(repr(s.text) for s in spans) for lab, spans in p.spans.items() if spans)
    return f"{labels}\t{p.text}" + (f"\t[{evidence}]" if evidence else "") + "\n"


def register(app: typer.Typer) -> None:
    app.command("classify")(classify_cmd)

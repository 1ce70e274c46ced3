"""``guard lint``: check templates and payloads against a domain's sentence library and the other lint stages."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from guard.cli import exitcodes
from guard.cli.formatters import FORMATS, FileReport, json_string_offsets, render
from guard.errors import GuardError

PROGRESS_AFTER = 20


def lint_cmd(
    paths: list[Path] = typer.Argument(
        ..., help="Template files (.txt, .tmpl, ...), payload .json files or directories of them."
    ),
    domain: str = typer.Option(..., "--domain", "-d", help="Grammar domain, e.g. orders (see guard grammars list)."),
    fmt: str = typer.Option("text", "--format", "-f", help="text, json or sarif."),
    slot_type: list[str] = typer.Option(
        [], "--slot-type", "-s", help="NAME=TYPE for a template's slot (repeatable; beats the .slots.yaml sidecar)."
    ),
    grammar_dir: Path | None = typer.Option(
        None,
        "--grammar-dir",
        help="Directory with your own <domain>.yaml lexicons (and core.yaml or compose.lark to override guard's).",
    ),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the report here, not stdout."),
    freetext: bool | None = typer.Option(
        None,
        "--freetext/--no-freetext",
        help="Free-text classifier findings (T3xx); default: when the model is installed.",
    ),
    model: Path | None = typer.Option(None, "--model", help="A classifier model other than the shipped one."),
    ratio: bool = typer.Option(True, "--ratio/--no-ratio", help="Slot-ratio findings (R4xx)."),
    max_prose_per_slot: float = typer.Option(8.0, "--max-prose-per-slot", help="R401 threshold."),
    max_words_without_slot: int = typer.Option(12, "--max-words-without-slot", help="R402 threshold."),
) -> None:
    """Lint templates: exit 0 when clean, 1 on findings, 2 on usage or input errors."""
    from guard.linting import default_stages, find_templates, lint_file, parse_slot_types
    from guard.linting.ratio import RatioThresholds
    from guard.shapes.sentences import load_domain

    if fmt not in FORMATS:
        _fail(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    try:
        types = parse_slot_types(slot_type)
        load_domain(domain, grammar_dir)
        classifier = None
        if model is not None and freetext is not False:
            from guard.linting.freetext import load_classifier

            classifier = load_classifier(model)
        stages = default_stages(
            freetext=freetext,
            ratio=ratio,
            classifier=classifier,
            thresholds=RatioThresholds(
                max_prose_per_slot=max_prose_per_slot, max_words_without_slot=max_words_without_slot
            ),
        )
    except GuardError as exc:
        _fail(str(exc))
    except ValueError as exc:
        _fail(f"bad threshold: {exc}")
    stdin = any(str(p) == "-" for p in paths)
    files = find_templates([p for p in paths if str(p) != "-"])
    if stdin:
        files.append(Path("-"))
    if not files:
        _fail("no template files found")
    reports = [_one(f, domain, types, grammar_dir, lint_file, stages) for f in _progress(files)]
    text = render(reports, fmt)
    if output is not None:
        output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    if any(r.error for r in reports):
        raise typer.Exit(exitcodes.USAGE)
    raise typer.Exit(exitcodes.OK if all(r.ok for r in reports) else exitcodes.FINDINGS)


def _one(path: Path, domain: str, types: dict[str, str], grammar_dir: Path | None, lint_file, stages) -> FileReport:
    if str(path) == "-":
        return _stdin(domain, types, grammar_dir, stages)
    try:
        fl = lint_file(path, domain=domain, slot_types=types, grammar_dir=grammar_dir, stages=stages)
    except GuardError as exc:
        return FileReport(str(path), error=str(exc).replace("\n", " "))
    extra = {"payload": fl.payload, "sentences": [s.to_dict() for s in fl.result.sentences]}
    offsets = json_string_offsets(fl.file_text, "answer_template") if fl.payload else None
    return FileReport(
        fl.path,
        fl.template,
        fl.result.findings,
        extra=extra,
        file_text=fl.file_text if fl.payload else None,
        file_offsets=offsets,
    )


def _stdin(domain: str, types: dict[str, str], grammar_dir: Path | None, stages) -> FileReport:
    """Standard input: a payload when it is a JSON object, otherwise a plain template."""
    from guard.linting import lint, lint_payload

    text = sys.stdin.read()
    try:
        if text.lstrip().startswith("{"):
            result = lint_payload(text, domain=domain, grammar_dir=grammar_dir, stages=stages)
        else:
            result = lint(text, domain=domain, slot_types=types, grammar_dir=grammar_dir, stages=stages)
    except GuardError as exc:
        return FileReport("<stdin>", error=str(exc).replace("\n", " "))
    return FileReport(
        "<stdin>",
        result.template,
        result.findings,
        extra={"payload": False, "sentences": [s.to_dict() for s in result.sentences]},
    )


def _progress(files: list[Path]):
    if len(files) < PROGRESS_AFTER or not sys.stderr.isatty():
        yield from files
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("linting", total=len(files))
        for f in files:
            yield f
            bar.advance(task)


def _fail(message: str) -> None:
    typer.echo(f"guard: error: {message}", err=True)
    raise typer.Exit(exitcodes.USAGE)


def register(app: typer.Typer) -> None:
    app.command("lint")(lint_cmd)

"""``guard lint``: check templates and payloads against a domain's sentence library and the other lint stages.

Settings come from the nearest ``.guard.yaml`` or ``[tool.guard]`` table (see :mod:`guard.linting.config`);
options given here override them. Exit 0 when clean, 1 on findings (``--fail-on``) or on a file that cannot be
read or parsed, 2 on a usage error (an option, the domain, no files).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from guard.cli import exitcodes
from guard.cli._common import check_domain, pydantic_plugins_off, write_output
from guard.cli.formatters import FORMATS, FileReport, json_string_offsets, render
from guard.errors import FileError, GuardError, OptionError

PROGRESS_AFTER = 20
DEFAULT_PROSE_PER_SLOT = 8.0
DEFAULT_WORDS_WITHOUT_SLOT = 12


def lint_cmd(
    paths: list[Path] = typer.Argument(
        None,
        help="Template files (.txt, .tmpl, .template), payload .json files or directories of them; - reads stdin. "
        "Default: the configuration's paths.",
        show_default=False,
    ),
    domain: str | None = typer.Option(
        None, "--domain", "-d", help="Grammar domain, e.g. orders (see guard grammars list)."
    ),
    fmt: str | None = typer.Option(None, "--format", "-f", help="text, json, sarif or github (workflow annotations)."),
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
    ratio: bool | None = typer.Option(None, "--ratio/--no-ratio", help="Slot-ratio findings (R4xx); default on."),
    max_prose_per_slot: float | None = typer.Option(
        None, "--max-prose-per-slot", help=f"R401 threshold (default {DEFAULT_PROSE_PER_SLOT})."
    ),
    max_words_without_slot: int | None = typer.Option(
        None, "--max-words-without-slot", help=f"R402 threshold (default {DEFAULT_WORDS_WITHOUT_SLOT})."
    ),
    select: list[str] = typer.Option(
        [], "--select", help="Only these codes or prefixes (S201, S2, T); comma-separated or repeated."
    ),
    ignore: list[str] = typer.Option([], "--ignore", help="Leave out these codes or prefixes."),
    exclude: list[str] = typer.Option(
        [], "--exclude", help="Skip paths matching this gitignore-style pattern (repeatable)."
    ),
    force_exclude: bool = typer.Option(
        False, "--force-exclude", help="Apply exclusions and the template-file rule to files named here too."
    ),
    fail_on: str | None = typer.Option(
        None, "--fail-on", help="Exit 1 on findings of this severity or worse: error (default) or warning."
    ),
    help_uri: str | None = typer.Option(
        None, "--help-uri", help="SARIF helpUri for each rule: an absolute URI, {code} replaced by the code."
    ),
    settings: Path | None = typer.Option(
        None, "--settings", help="Read settings from this .guard.yaml or pyproject.toml instead of searching."
    ),
    isolated: bool = typer.Option(False, "--isolated", help="Read no configuration file."),
) -> None:
    """Lint templates: exit 0 when clean, 1 on findings or unreadable input, 2 on usage errors."""
    options = locals()
    try:
        with pydantic_plugins_off():
            _lint(**options)
    except OptionError as exc:
        _fail(str(exc), exitcodes.USAGE)
    except GuardError as exc:
        _fail(str(exc), exitcodes.INVALID_INPUT)


def _lint(
    *,
    paths: list[Path] | None,
    domain: str | None,
    fmt: str | None,
    slot_type: list[str],
    grammar_dir: Path | None,
    output: Path | None,
    freetext: bool | None,
    model: Path | None,
    ratio: bool | None,
    max_prose_per_slot: float | None,
    max_words_without_slot: int | None,
    select: list[str],
    ignore: list[str],
    exclude: list[str],
    force_exclude: bool,
    fail_on: str | None,
    help_uri: str | None,
    settings: Path | None,
    isolated: bool,
) -> None:
    from guard.linting import default_stages, find_templates, parse_slot_types
    from guard.linting.config import LintConfig, check_help_uri, find_config, load_config
    from guard.linting.files import CodeFilter, check_codes
    from guard.linting.ratio import RatioThresholds

    paths = list(paths or [])
    if isolated:
        cfg = LintConfig()
    elif settings is not None:
        cfg = load_config(settings)
    else:
        first = next((p for p in paths if str(p) != "-"), None)
        cfg = find_config(first)
    s = cfg.settings
    fmt = fmt or s.format or "text"
    if fmt not in FORMATS:
        raise OptionError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}", location="--format")
    fail_on = fail_on or s.fail_on or "error"
    if fail_on not in ("error", "warning"):
        raise OptionError(f"--fail-on must be error or warning, not {fail_on!r}", location="--fail-on")
    if help_uri is not None:
        try:
            check_help_uri(help_uri)
        except ValueError as exc:
            raise OptionError(str(exc), location="--help-uri") from None
    help_uri = help_uri or s.help_uri
    domain = domain or s.domain
    if not domain:
        raise OptionError("no domain: give --domain or set domain in the configuration", location="--domain")
    grammar_dir = grammar_dir or cfg.path(s.grammar_dir)
    model = model or cfg.path(s.model)
    check_domain(domain, grammar_dir)
    types = {**s.slot_types, **parse_slot_types(slot_type)}
    codes = CodeFilter(
        select=check_codes(select or s.select, "--select"),
        ignore=check_codes([*s.ignore, *ignore], "--ignore"),
        per_file=tuple((pat, check_codes(c, f"per-file-ignores {pat!r}")) for pat, c in s.per_file_ignores.items()),
        root=cfg.root,
    )
    try:
        thresholds = RatioThresholds(
            max_prose_per_slot=_pick(max_prose_per_slot, s.max_prose_per_slot, DEFAULT_PROSE_PER_SLOT),
            max_words_without_slot=_pick(max_words_without_slot, s.max_words_without_slot, DEFAULT_WORDS_WITHOUT_SLOT),
        )
    except ValueError as exc:
        raise OptionError(f"bad threshold: {exc}", location="--max-prose-per-slot") from None
    freetext = _pick(freetext, s.freetext, None)
    classifier = None
    if model is not None and freetext is not False:
        from guard.linting.freetext import load_classifier

        classifier = load_classifier(model)
    stages = default_stages(
        freetext=freetext, ratio=_pick(ratio, s.ratio, True), classifier=classifier, thresholds=thresholds
    )
    if not paths:
        paths = [cfg.root / p for p in s.paths]
        if not paths:
            raise OptionError("no paths given and none configured (paths = [...] in [tool.guard])", location="PATHS")
    missing = [p for p in paths if str(p) != "-" and not p.exists()]
    if missing:
        raise FileError(f"{missing[0]}: no such file or directory", location=str(missing[0]))
    files = find_templates(
        [p for p in paths if str(p) != "-"],
        exclude=[*s.exclude, *exclude],
        root=cfg.root,
        respect_gitignore=s.respect_gitignore,
        force_exclude=force_exclude,
    )
    if any(str(p) == "-" for p in paths):
        files.append(Path("-"))
    if not files:
        if force_exclude:  # pre-commit passed only files that are not templates
            raise typer.Exit(exitcodes.OK)
        raise OptionError("no template files found", location="PATHS")
    reports = [_one(f, domain, types, grammar_dir, stages, codes) for f in _progress(files)]
    text = render(reports, fmt, root=cfg.root, help_uri=help_uri)
    if output is not None:
        write_output(output, text)
    else:
        sys.stdout.write(text)
    raise typer.Exit(exit_code(reports, fail_on))


def exit_code(reports: list[FileReport], fail_on: str) -> int:
    """1 when a file could not be checked or a finding is at least as severe as ``fail_on``."""
    from guard.findings import Severity

    failing = {Severity.ERROR} if fail_on == "error" else {Severity.ERROR, Severity.WARNING}
    bad = any(r.error for r in reports) or any(f.severity in failing for r in reports for f in r.findings)
    return exitcodes.FINDINGS if bad else exitcodes.OK


def _pick(cli: Any, configured: Any, default: Any) -> Any:
    return cli if cli is not None else configured if configured is not None else default


def _one(path: Path, domain: str, types: dict[str, str], grammar_dir: Path | None, stages, codes) -> FileReport:
    from guard.linting import lint_file

    if str(path) == "-":
        return _stdin(domain, types, grammar_dir, stages, codes)
    try:
        fl = lint_file(path, domain=domain, slot_types=types, grammar_dir=grammar_dir, stages=stages)
    except GuardError as exc:
        return FileReport(str(path), error=str(exc).replace("\n", " "))
    select, ignore = codes.for_file(path, fl.disabled)
    findings = [f for f in fl.result.findings if codes.keep(f.code, select, ignore)]
    extra = {"payload": fl.payload, "sentences": [s.to_dict() for s in fl.result.sentences]}
    if fl.payload:
        offsets = json_string_offsets(fl.file_text, "answer_template")
    elif fl.offset:
        offsets = list(range(fl.offset, len(fl.file_text) + 1))
    else:
        offsets = None
    return FileReport(
        fl.path,
        fl.template,
        findings,
        extra=extra,
        file_text=fl.file_text if offsets is not None or fl.payload else None,
        file_offsets=offsets,
    )


def _stdin(domain: str, types: dict[str, str], grammar_dir: Path | None, stages, codes) -> FileReport:
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
    select, ignore = codes.for_file("-")
    return FileReport(
        "<stdin>",
        result.template,
        [f for f in result.findings if codes.keep(f.code, select, ignore)],
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


def _fail(message: str, code: int) -> None:
    typer.echo(f"guard: error: {message}", err=True)
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command("lint")(lint_cmd)

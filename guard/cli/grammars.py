"""``guard grammars list|show|check|export``: the sentence libraries, for template authors and decoding engines."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import TracebackType

import typer

from guard.cli import exitcodes
from guard.errors import GuardError

grammars_app = typer.Typer(help="List, show and export the domains' sentence libraries.", no_args_is_help=True)

GRAMMAR_DIR = typer.Option(None, "--grammar-dir", help="Directory with your own <domain>.yaml lexicons.")


@grammars_app.command("list")
def list_cmd(grammar_dir: Path | None = GRAMMAR_DIR) -> None:
    """Every domain with its entities and the lexicon it comes from."""
    from guard.shapes import list_domains, load_domain

    with _errors():
        for name, path in list_domains(grammar_dir).items():
            lib = load_domain(name, grammar_dir)
            entities = ", ".join(lib.compiled.entities)
            typer.echo(f"{name:<16} {entities:<40} {path}")


@grammars_app.command("show")
def show_cmd(
    domain: str = typer.Argument(..., help="Domain name."),
    grammar_dir: Path | None = GRAMMAR_DIR,
    fmt: str = typer.Option("text", "--format", "-f", help="text or json."),
) -> None:
    """DOMAIN's approved sentences as readable patterns: how sentences compose, and each class's phrases."""
    from guard.shapes import load_domain
    from guard.shapes.show import describe, render

    if fmt not in ("text", "json"):
        _fail(f"--format must be text or json, not {fmt!r}")
    with _errors():
        info = describe(load_domain(domain, grammar_dir))
    if fmt == "json":
        sys.stdout.write(json.dumps(info, indent=2) + "\n")
    else:
        sys.stdout.write(render(info))


@grammars_app.command("check")
def check_cmd(
    domains: list[str] = typer.Argument(None, help="Domains to check (default: every domain found)."),
    grammar_dir: Path | None = GRAMMAR_DIR,
    full: bool = typer.Option(False, "--full", help="Also build the LALR(1) tables, which finds conflicts (minutes)."),
) -> None:
    """Compile each lexicon and lower it to Lark rules: every error but a conflict, in seconds per domain."""
    from guard.shapes.sentences import check_library, domain_dir, list_domains, load_library

    with _errors():
        names = list(domains or list_domains(grammar_dir))
        for name in names:
            base = domain_dir(name, grammar_dir)
            found = check_library(name, base)
            if full:
                load_library(name, base)
            kinds = ", ".join(f"{n} {k}" for k, n in found.kinds.items())
            tables = "; LALR(1) tables built" if full else ""
            typer.echo(f"{name}: ok, {found.rules} rules, {found.terminals} terminals ({kinds}){tables}")


@grammars_app.command("export")
def export_cmd(
    domain: str = typer.Argument(..., help="Domain name."),
    fmt: str = typer.Option("lark", "--format", "-f", help="lark (llguidance subset) or regex (small domains only)."),
    slot_type: list[str] = typer.Option(
        [], "--slot-type", "-s", help="NAME=TYPE: only these slot names, typed (repeatable; default any {name})."
    ),
    grammar_dir: Path | None = GRAMMAR_DIR,
    output: Path | None = typer.Option(None, "--output", "-o", help="Write here instead of stdout."),
) -> None:
    """DOMAIN as a grammar for constrained decoding: llguidance Lark, or one regular expression."""
    from guard.linting import parse_slot_types
    from guard.shapes import export, load_domain

    with _errors():
        names: dict[str, list[str]] = {}
        for name, kind in parse_slot_types(slot_type).items():
            names.setdefault(kind, []).append(name)
        text = export(load_domain(domain, grammar_dir), fmt, names or None)
    if output is not None:
        from guard.cli._common import write_output

        write_output(output, text)
    else:
        sys.stdout.write(text)


class _errors:
    """Turn a GuardError into a one-line message and exit code 2 (usage or input error)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if isinstance(exc, GuardError):
            _fail(str(exc))


def _fail(message: str) -> None:
    typer.echo(f"guard: error: {message}", err=True)
    raise typer.Exit(exitcodes.USAGE)


def register(app: typer.Typer) -> None:
    app.add_typer(grammars_app, name="grammars")

"""``guard grammars list|show|export``: the approved-shape libraries, for authors and decoding engines."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import TracebackType

import typer

from guard.cli import exitcodes
from guard.errors import GuardError

grammars_app = typer.Typer(help="List, show and export the approved sentence shape grammars.", no_args_is_help=True)

GRAMMAR_DIR = typer.Option(None, "--grammar-dir", help="Directory with your own <domain>.lark files.")


@grammars_app.command("list")
def list_cmd(grammar_dir: Path | None = GRAMMAR_DIR) -> None:
    """Every domain with its number of shapes and the file it comes from."""
    from guard.shapes import list_domains, load_grammar

    with _errors():
        for name, path in list_domains(grammar_dir).items():
            g = load_grammar(name, grammar_dir=grammar_dir)
            typer.echo(f"{name:<16} {len(g.shapes):>3} shapes  {path}")


@grammars_app.command("show")
def show_cmd(
    domain: str = typer.Argument(..., help="Domain name."),
    grammar_dir: Path | None = GRAMMAR_DIR,
    fmt: str = typer.Option("text", "--format", "-f", help="text or json."),
) -> None:
    """Every approved shape of DOMAIN as readable text, with slot types in braces."""
    from guard.shapes import load_grammar, shape_text

    with _errors():
        g = load_grammar(domain, grammar_dir=grammar_dir)
        shapes = {name: shape_text(s) for name, s in g.shapes.items()}
    if fmt == "json":
        sys.stdout.write(json.dumps({"domain": domain, "shapes": shapes}, indent=2) + "\n")
    elif fmt == "text":
        width = max(map(len, shapes))
        for name, text in shapes.items():
            typer.echo(f"{name:<{width}}  {text}")
    else:
        _fail(f"--format must be text or json, not {fmt!r}")


@grammars_app.command("export")
def export_cmd(
    domain: str = typer.Argument(..., help="Domain name."),
    fmt: str = typer.Option("lark", "--format", "-f", help="lark (llguidance subset) or regex."),
    slot_type: list[str] = typer.Option(
        [], "--slot-type", "-s", help="NAME=TYPE: only these slot names, typed (repeatable; default any {name})."
    ),
    grammar_dir: Path | None = GRAMMAR_DIR,
    output: Path | None = typer.Option(None, "--output", "-o", help="Write here instead of stdout."),
) -> None:
    """DOMAIN as a grammar for constrained decoding: llguidance Lark or one regular expression."""
    from guard.linting import parse_slot_types
    from guard.shapes import export, load_grammar

    with _errors():
        names: dict[str, list[str]] = {}
        for name, kind in parse_slot_types(slot_type).items():
            names.setdefault(kind, []).append(name)
        text = export(load_grammar(domain, grammar_dir=grammar_dir), fmt, names or None)
    if output is not None:
        output.write_text(text, encoding="utf-8")
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

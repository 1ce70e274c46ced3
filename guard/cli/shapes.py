"""``guard shapes suggest``: lexicon entries proposed for sentences a domain rejects, vetted, applied only with
``--write``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from guard.cli._common import read_text
from guard.errors import OptionError

if TYPE_CHECKING:
    from guard.shapes.suggest import Sample

shapes_app = typer.Typer(help="Review the long tail of a domain's sentence library.", no_args_is_help=True)


@shapes_app.command("suggest")
def suggest_cmd(
    paths: list[Path] = typer.Argument(..., help="Template files or payload .json files (or directories of them)."),
    domain: str = typer.Option(..., "--domain", "-d", help="The domain whose lexicon would grow."),
    grammar_dir: Path | None = typer.Option(None, "--grammar-dir", help="Directory with your own <domain>.yaml."),
    freetext: bool = typer.Option(True, "--freetext/--no-freetext", help="Vet with the free-text classifier."),
    write: bool = typer.Option(False, "--write", help="Append the proposals to the domain's lexicon file."),
) -> None:
    """Propose lexicon entries (a YAML patch) for the sentences that fail, and list what was refused and why.

    Exit 0 with the patch; 1 when a file, the lexicon or the model cannot be read; 2 for a usage mistake (an
    unknown domain or grammar directory). The errors reach :func:`guard.cli.main.main`, which maps them.
    """
    from guard.cli._common import check_domain
    from guard.linting import find_templates, read_sidecar
    from guard.shapes import load_domain
    from guard.shapes.suggest import apply, suggest

    if grammar_dir is not None and not grammar_dir.is_dir():
        raise OptionError(f"grammar directory {str(grammar_dir)!r} does not exist", location="--grammar-dir")
    check_domain(domain, grammar_dir)
    lib = load_domain(domain, grammar_dir)
    samples = [_sample(p, read_sidecar) for p in find_templates(paths)]
    classifier = None
    if freetext:
        from guard.linting.freetext import load_classifier

        classifier = load_classifier()
    found = suggest(samples, lib, classifier)
    if write and found.proposals:
        apply(lib.files[0], found.proposals)
    sys.stdout.write(found.patch(domain))
    if found.refused:
        typer.echo("\n# refused:")
        for r in found.refused:
            typer.echo(f"#   {r.sentence}\n#     {r.reason}")
    if write and found.proposals:
        typer.echo(f"\n# written to {lib.files[0]}")


def _sample(path: Path, read_sidecar: Callable[[Path], dict[str, str]]) -> Sample:
    from guard.payload import load_payload, scan_template
    from guard.shapes.suggest import Sample

    text = read_text(str(path))
    if path.suffix != ".json":
        return Sample(text, read_sidecar(path))
    p = load_payload(text)
    slots = {s.name for s in scan_template(p.answer_template)[0]}
    return Sample(
        p.answer_template,
        {c.key: c.type.value for c in p.claims},
        {c.key: f"{c.entity}.{c.field}" for c in p.claims},
        [(f"{c.entity}.{c.field}", c.value) for c in p.claims if c.key not in slots],
    )


def register(app: typer.Typer) -> None:
    app.add_typer(shapes_app, name="shapes")


__all__ = ["register"]

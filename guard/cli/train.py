"""``guard train``: fit the free-text classifier on a labelled corpus and write model + card."""

from __future__ import annotations

import sys
from pathlib import Path

import typer


def train_cmd(
    corpus: Path = typer.Option(Path("corpora"), "--corpus", help="Directory of <domain>.jsonl files (or one file)."),
    out: Path = typer.Option(
        Path("models/freetext.joblib"), "--out", help="Model file to write; the card goes beside it as .json."
    ),
    jobs: int = typer.Option(1, "--jobs", "-j", help="Parallel cross-validation jobs (joblib); -1 for all cores."),
    folds: int = typer.Option(5, "--folds", help="Stratified cross-validation folds."),
    sample: int | None = typer.Option(None, "--sample", help="Train on a stratified sample of about N sentences."),
    seed: int = typer.Option(0, "--seed", help="Seed for folds and sampling."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar on stderr."),
) -> None:
    """Cross-validate, tune thresholds on dev, measure dev and test beside two baselines, write the model."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from guard.cli._common import writable_file
    from guard.freetext.training import challenge_table, report_table, train, write

    writable_file(out)
    err = Console(stderr=True)
    with Progress(
        TextColumn("cross-validation"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not progress,
    ) as bar:
        task = bar.add_task("cv", total=None)
        result = train(
            corpus,
            jobs=jobs,
            folds=folds,
            sample=sample,
            seed=seed,
            on_step=lambda done, total: bar.update(task, completed=done, total=total),
        )
    card = write(result, out)
    console = Console(file=sys.stdout, width=120)
    console.print(report_table(card))
    if card.get("challenge"):
        console.print(challenge_table(card))
    cv = card["training"]["cv"]
    console.print(
        f"cross-validation ({cv['folds']} folds) chose {cv['best']} (mean macro-F1 "
        f"{cv['mean_macro_f1'][_key(cv['best'])]:.3f})"
    )
    console.print(f"thresholds (tuned on dev): {card['thresholds']}")
    console.print(f"wrote {out} ({card['model_file']['bytes'] / 1e6:.2f} MB) and {Path(out).with_suffix('.json')}")
    losing = [f"{s}/{lab}" for s, row in card["beats_baselines"].items() for lab, ok in row.items() if not ok]
    if losing:
        console.print(f"[bold red]warning:[/] the model does not beat both baselines on: {', '.join(losing)}")


def _key(params: dict) -> str:
    import json

    return json.dumps(params, sort_keys=True)


def register(app: typer.Typer) -> None:
    app.command("train")(train_cmd)

"""Out-of-domain quality: the shipped free-text model and both baselines on the challenge set.

The challenge set (corpora/challenge/, see its README) is never trained on. Prints
precision/recall/F1 per label and F1 per domain for the shipped model
(``guard.freetext.load()``), the keyword rule and the bag-of-words model (fitted on
the main corpus's train+dev split, as ``guard train`` fits it); ``--errors`` also
lists the model's false negatives and false positives with the patterns that fired.

    .venv/bin/python benchmarks/eval_challenge.py [--challenge corpora/challenge] [--errors] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--corpus", type=Path, default=ROOT / "corpora", help="main corpus (fits the bag-of-words baseline)"
    )
    ap.add_argument("--challenge", type=Path, default=ROOT / "corpora" / "challenge", help="challenge set directory")
    ap.add_argument("--model", type=Path, default=None, help="model file (default: the shipped model)")
    ap.add_argument("--errors", action="store_true", help="list the model's false negatives and false positives")
    ap.add_argument("--json", type=Path, default=None, help="also write the metrics (and errors) as JSON")
    args = ap.parse_args()

    from rich.console import Console

    from guard.freetext.evaluation import (
        baseline_predictors,
        evaluate_challenge,
        model_errors,
        model_predictor,
        read_challenge,
        report_tables,
    )
    from guard.freetext.model import load

    clf = load(args.model) if args.model else load()
    examples = read_challenge(args.challenge)
    predictors = {"model": model_predictor(clf), **baseline_predictors(args.corpus)}
    result = evaluate_challenge(examples, predictors)
    console = Console(file=sys.stdout, width=140)
    for table in report_tables(result):
        console.print(table)
    errors = model_errors(examples, clf) if args.errors or args.json else []
    if args.errors:
        for kind in ("FN", "FP"):
            for lab in sorted({r["label"] for r in errors}):
                rows = [r for r in errors if r["kind"] == kind and r["label"] == lab]
                if not rows:
                    continue
                console.print(f"\n[bold]{kind} {lab}[/] ({len(rows)})")
                for r in rows:
                    console.print(
                        f"  {r['score']:.2f} [{r['domain']}] {r['text']}  patterns={','.join(r['patterns']) or '-'}",
                        markup=False,
                        highlight=False,
                    )
    if args.json:
        args.json.write_text(json.dumps({"metrics": result, "errors": errors}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Aggregate scores of a model on a blind challenge split, and nothing else: no errors, no sentences.

Prints P/R/F1 per label, macro F1, macro F1 per file, and the share of clean sentences flagged
(any label) per file, shop e-mail first. It never prints a sentence, so running it does not spoil
the split (corpora/challenge/README.md: blind splits are only ever reported).

    .venv/bin/python benchmarks/score_blind.py [--challenge corpora/challenge/blind3] [--model m.joblib] [--json out]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--challenge", type=Path, default=ROOT / "corpora" / "challenge" / "blind3")
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()

    import numpy as np

    from guard.freetext.corpus import LABELS
    from guard.freetext.evaluation import evaluate_challenge, model_predictor, read_challenge
    from guard.freetext.model import load

    clf = load(args.model) if args.model else load()
    examples = read_challenge(args.challenge)
    predict = model_predictor(clf)
    result = evaluate_challenge(examples, {"model": predict})["systems"]["model"]
    flags = predict([e.text for e in examples]).any(axis=1)
    clean: dict[str, list[int]] = {}
    for e, flagged in zip(examples, flags, strict=True):
        if not e.labels:
            clean.setdefault(e.domain, [0, 0])
            clean[e.domain][0] += int(flagged)
            clean[e.domain][1] += 1
    print(f"{args.challenge.name}: {len(examples)} sentences")
    print(f"{'label':<12} {'P':>6} {'R':>6} {'F1':>6} {'support':>8}")
    for lab in LABELS:
        m = result["labels"][lab]
        print(f"{lab:<12} {m['precision']:>6.3f} {m['recall']:>6.3f} {m['f1']:>6.3f} {m['support']:>8}")
    print(f"macro F1 {result['macro_f1']:.3f}")
    gold_any = np.array([bool(e.labels) for e in examples])
    for dom, f1 in result["domain_macro_f1"].items():
        per = " ".join(f"{lab[:4]} {m['f1']:.3f}" for lab, m in result["domains"][dom].items() if m["support"])
        idx = np.array([e.domain == dom for e in examples])
        tp = int((gold_any & flags & idx).sum())
        p_any, r_any = tp / max(int((flags & idx).sum()), 1), tp / max(int((gold_any & idx).sum()), 1)
        f_any = 2 * p_any * r_any / (p_any + r_any) if p_any + r_any else 0.0
        print(f"  {dom:<12} macro F1 {f1:.3f}  ({per}; any label {f_any:.3f})")
    for dom, (k, n) in sorted(clean.items(), key=lambda kv: kv[0] != "shop_email"):
        print(f"  clean {dom:<12} flagged {k}/{n} ({k / n:.1%})")
    if args.json:
        out = {"metrics": result, "clean_flagged": clean}
        args.json.write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

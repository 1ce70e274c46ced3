"""Inter-annotator agreement on the corpus: Cohen's kappa per label between two annotations.

``corpora/agreement/second_annotation.jsonl`` holds a stratified sample of corpus sentences
with the stored labels at the time of sampling (``first``), a second annotation made from
GUIDELINES.md with the first labels hidden (``second``), and the labels after the
disagreements were resolved (``resolved``, which the corpus now carries). Prints kappa,
raw agreement and positives per label, and lists the disagreements.

    .venv/bin/python benchmarks/agreement.py [--file corpora/agreement/second_annotation.jsonl] [--quiet]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, default=ROOT / "corpora" / "agreement" / "second_annotation.jsonl")
    ap.add_argument("--quiet", action="store_true", help="figures only, no list of disagreements")
    args = ap.parse_args()

    from guard.freetext.corpus import agreement

    rows = [json.loads(line) for line in args.file.read_text(encoding="utf-8").splitlines() if line.strip()]
    figures = agreement(args.file.parents[1]) if args.file.name == "second_annotation.jsonl" else None
    if figures is None:
        raise SystemExit(f"{args.file}: expected <corpus>/agreement/second_annotation.jsonl")
    print(f"{figures['n']} sentences, {figures['identical']} with the same label set")
    print(f"{'label':12s} {'kappa':>6s} {'agree':>7s} {'first+':>7s} {'second+':>8s}")
    for lab, f in figures["labels"].items():
        print(f"{lab:12s} {f['kappa']:6.3f} {f['agree']:4d}/{figures['n']} {f['first']:7d} {f['second']:8d}")
    if not args.quiet:
        for r in rows:
            if r["first"] != r["second"]:
                print(f"- first {r['first']} second {r['second']} resolved {r['resolved']}: {r['text']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

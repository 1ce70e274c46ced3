"""How much of the corpus is in the registers issue 16 found missing: hedged, correlational, intensified, first person.

The issue compared the training corpus with external sets (Yu et al. 2019 science findings: modal
or hedged verbs in 13.5% of sentences, correlational verbs in 16.8%; Jindal & Liu 2006 reviews:
intensifiers in 12%, first person in 25%). This prints the same shares for a corpus directory, with
the word lists below, plus the sentence lengths.

    .venv/bin/python benchmarks/corpus_registers.py [--corpus corpora]
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: One regular expression per register; a sentence counts once per register it matches.
REGISTERS = {
    "modal or hedge": r"\b(may|might|could|likely|probably|possibly|perhaps|appears?|seems?|suggests?|"
    r"plausibl\w*|thought to)\b",
    "correlational": r"\b(associated|association|correlat\w*|linked?|related|coincid\w*|tends?|tended)\b",
    "intensifier": r"\b(very|really|especially|particularly|extremely|quite|pretty|incredibly|truly|highly|super|"
    r"totally|absolutely|so)\b",
    "first person": r"\b(i|i'm|i've|i'd|i'll|my|me|mine)\b",
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=ROOT / "corpora")
    args = ap.parse_args()

    from guard.freetext.corpus import read_corpus

    examples = read_corpus(args.corpus)
    n = len(examples)
    lengths = sorted(len(e.text.split()) for e in examples)
    print(
        f"{n} sentences; words mean {sum(lengths) / n:.1f}, 90th percentile {lengths[int(0.9 * n)]}, "
        f"max {lengths[-1]}, 25 or more {sum(x >= 25 for x in lengths)}"
    )
    for name, pattern in REGISTERS.items():
        rx = re.compile(pattern, re.IGNORECASE)
        share = sum(bool(rx.search(e.text)) for e in examples) / n
        print(f"{name:15s} {share:6.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

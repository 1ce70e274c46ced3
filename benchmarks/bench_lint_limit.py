"""Lint time of a template at the payload limit (8,000 characters), beside an ordinary template, same run.

Issue 18 (#15): every stage linear in its input, and a template at the payload limit linted in at most
50 ms. A lint is run on the gate's default stages for the ``orders`` domain (format, shape, the shipped
free-text classifier, ratio), uncached, on hostile shapes of text at the limit: sentences with slots, runs of
punctuation, braces, one long sentence of prose. The baseline is the demo's ordinary one-sentence template,
linted in the same interleaved rounds, so the ratio shows the cost of size rather than of the machine.

    .venv/bin/python benchmarks/bench_lint_limit.py [--seconds 2] [--rounds 10]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import options, paired_ratio, rounds  # noqa: E402

from guard import demo  # noqa: E402
from guard.linting.runner import default_stages, lint  # noqa: E402
from guard.payload import Limits  # noqa: E402

TARGET_MS = 50.0


def at_limit(unit: str) -> str:
    limit = Limits().max_template_chars
    return (unit * (limit // len(unit) + 1))[:limit]


def main() -> None:
    args = options(__doc__, rounds=10)
    stages = default_stages(domain="orders")
    types = {"a": "identifier", "b": "date"}
    baseline = demo.payloads()["answer"]["answer_template"]
    cases = {
        "baseline (demo template)": baseline,
        "sentences with slots": at_limit("Your order {a} shipped on {b}. "),
        "punctuation run": at_limit(".,"),
        "braces": at_limit("{"),
        "one long sentence": at_limit("we are very sorry about the wait and "),
    }
    fns = {name: (lambda t=t: lint(t, domain="orders", slot_types=types, stages=stages)) for name, t in cases.items()}
    got = rounds(fns, args.seconds * len(fns), args.rounds)
    base = got["baseline (demo template)"]
    limit = Limits().max_template_chars
    print(f"{'case':28} {'ms/lint':>8} {'x baseline':>11}  target <= {TARGET_MS:g} ms at {limit} chars")
    worst = 0.0
    for name, per_s in got.items():
        ms = 1000 / max(per_s)
        ratio, _, _ = paired_ratio(base, per_s)
        worst = max(worst, ms) if name != "baseline (demo template)" else worst
        print(f"{name:28} {ms:8.2f} {ratio:11.1f}")
    verdict = "meets" if worst <= TARGET_MS else "MISSES"
    print(f"worst at the limit: {worst:.2f} ms ({verdict} the {TARGET_MS:g} ms target)")


if __name__ == "__main__":
    main()

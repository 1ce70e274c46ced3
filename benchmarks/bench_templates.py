"""Shape validation speed: LALR (guard's choice) against Earley on the same grammar, in one run.

Prints templates validated per second for 1-, 3- and 6-sentence templates
(valid and invalid ones; an invalid one also gets its diagnosis and nearest
shapes), the LALR/Earley ratio, the exported regex as a yes/no baseline, and
grammar compile time cold against cached.

    .venv/bin/python benchmarks/bench_templates.py [--seconds 1.0] [--domain orders]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import regex  # noqa: E402

from guard._resources import data_path  # noqa: E402
from guard.linting import lint  # noqa: E402
from guard.payload import scan_template  # noqa: E402
from guard.shapes import load_grammar, to_regex, validate_template  # noqa: E402
from guard.shapes.library import clear_cache  # noqa: E402


def corpus(domain: str) -> tuple[list[str], dict[str, str]]:
    raw = yaml.safe_load((data_path("grammars") / f"{domain}.examples.yaml").read_text())
    one = [e["text"] for e in raw["accept"] if "\n" not in e["text"] and len(e.get("shapes", [])) == 1]
    return one, raw["slots"]


def templates(sentences: list[str], size: int, broken: bool) -> list[str]:
    out = []
    for i in range(len(sentences)):
        parts = [sentences[(i + k) % len(sentences)] for k in range(size)]
        if broken:
            parts[-1] = parts[-1][:-1] + " because it was busy."
        out.append(" ".join(parts))
    return out


def rate(fn, items: list[str], seconds: float) -> float:
    """Items per second, best of three rounds of at least ``seconds``/3 each."""
    best = 0.0
    for _ in range(3):
        n, start = 0, time.perf_counter()
        while True:
            for t in items:
                fn(t)
            n += len(items)
            el = time.perf_counter() - start
            if el >= seconds / 3:
                break
        best = max(best, n / el)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--domain", default="orders")
    args = ap.parse_args()

    lalr = load_grammar(args.domain, parser="lalr")
    earley = load_grammar(args.domain, parser="earley")
    sentences, types = corpus(args.domain)

    def check(grammar):
        def run(t: str) -> None:
            slots, _ = scan_template(t)
            validate_template(t, grammar, slots, types)

        return run

    def facade(t: str) -> None:
        lint(t, domain=args.domain, slot_types=types)

    names: dict[str, list[str]] = {}
    for name, kind in types.items():
        names.setdefault(kind, []).append(name)
    pattern = regex.compile(to_regex(lalr, names))

    def exported(t: str) -> None:
        pattern.fullmatch(t)

    print(f"domain {args.domain}: {len(lalr.shapes)} shapes, {len(sentences)} one-sentence examples")
    print(
        f"{'sentences':>9} {'kind':>7} | {'lint() LALR':>12} {'LALR':>10} {'Earley':>10} | {'LALR/Earley':>11}"
        f" | {'regex export':>12}"
    )
    for size in (1, 3, 6):
        for broken in (False, True):
            items = templates(sentences, size, broken)
            for t in items:
                assert lint(t, domain=args.domain, slot_types=types).ok is (not broken), t
            f = rate(facade, items, args.seconds)
            a = rate(check(lalr), items, args.seconds)
            b = rate(check(earley), items, args.seconds)
            r = rate(exported, items, args.seconds)
            kind = "invalid" if broken else "valid"
            print(f"{size:>9} {kind:>7} | {f:>10.0f}/s {a:>8.0f}/s {b:>8.0f}/s | {a / b:>10.1f}x | {r:>10.0f}/s")

    for parser in ("lalr", "earley"):
        cold = []
        for _ in range(5):
            clear_cache()
            s = time.perf_counter()
            load_grammar(args.domain, parser=parser)
            cold.append(time.perf_counter() - s)
        load_grammar(args.domain, parser=parser)
        n, s = 2000, time.perf_counter()
        for _ in range(n):
            load_grammar(args.domain, parser=parser)
        warm = (time.perf_counter() - s) / n
        c = statistics.median(cold)
        print(f"compile {parser:<6}: cold {c * 1000:8.1f} ms   cached {warm * 1e6:8.1f} us   ratio {c / warm:8.0f}x")


if __name__ == "__main__":
    main()

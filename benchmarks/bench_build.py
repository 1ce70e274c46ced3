"""Building a sentence library's LALR table: Lark's own analysis against guard's indexed one, in one run.

One analysis round (LR(0) states, relations, lookaheads, conflicts) of a domain's grammar compiled with every
word group shared, as the first round of a cold build does; then the whole cold build (every round, no hint)
and a build that starts from the last build's hint, each in a fresh cache directory.

    .venv/bin/python benchmarks/bench_build.py [--domain account]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lark.common import ParserConf  # noqa: E402
from lark.load_grammar import load_grammar  # noqa: E402
from lark.parsers.lalr_analysis import LALR_Analyzer  # noqa: E402

from guard.shapes import sentences  # noqa: E402
from guard.shapes.compiler import compile_files  # noqa: E402
from guard.shapes.conflicts import analyse  # noqa: E402
from guard.shapes.lalr import Analyzer  # noqa: E402
from guard.shapes.sentences import STARTS  # noqa: E402

LEXICONS = Path(__file__).resolve().parents[1] / "grammars" / "lexicons"


def one_round(domain: str) -> None:
    compiled = compile_files(domain, LEXICONS / f"{domain}.yaml", LEXICONS / "core.yaml", LEXICONS / "compose.lark")
    grammar, _ = load_grammar(compiled.source, "<lexicon>", [], False)
    _terminals, rules, _ignore = grammar.compile(list(STARTS), set())
    times = {}
    for name, cls in (("lark LALR_Analyzer", LALR_Analyzer), ("guard Analyzer", Analyzer)):
        t = time.perf_counter()
        found = analyse(cls(ParserConf(rules, {}, list(STARTS))))
        times[name] = time.perf_counter() - t
        print(f"{domain}: one round, {name:<20} {times[name]:7.2f} s  ({len(found)} conflicts, {len(rules)} rules)")
    print(f"{domain}: ratio {times['lark LALR_Analyzer'] / times['guard Analyzer']:.1f}x")


def cold_and_hinted(domain: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["GUARD_CACHE_DIR"] = tmp
        for label in ("cold build, no hint", "build from the hint"):
            sentences._LOADED.clear()
            sentences._STAMPED.clear()
            for f in Path(tmp).glob("*.tables"):
                f.unlink()
            t = time.perf_counter()
            sentences.load_domain(domain)
            print(f"{domain}: {label:<22} {time.perf_counter() - t:7.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--domain", default="account")
    args = ap.parse_args()
    one_round(args.domain)
    cold_and_hinted(args.domain)


if __name__ == "__main__":
    main()

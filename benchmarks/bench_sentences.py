"""Sentence-library speed: the lexicon library's LALR parser against Earley on the same grammar, in one run.

Prints templates checked per second for 1- and 3-sentence templates made of corpus sentences the library
accepts (valid) and the same with an unverified clause appended (invalid: the check also diagnoses them and
searches for the nearest approved wording), for the whole check (`check_template`: parse, agreement,
bindings), the bare LALR parse and an Earley parse of the same grammar; then the time per failing sentence of
the diagnosis, and library load times: built from the lexicon, loaded from the disk cache, and warm.

    .venv/bin/python benchmarks/bench_sentences.py [--seconds 1.0] [--domain orders]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lark  # noqa: E402

import guard.shapes.sentences as sentences  # noqa: E402
from guard.shapes import tables  # noqa: E402
from guard.shapes.check import check_template  # noqa: E402
from guard.shapes.coverage import CLEAN_KINDS, read_records, slot_types  # noqa: E402
from guard.shapes.sentences import load_library, tokens  # noqa: E402
from guard.shapes.text import split_sentences  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "corpora" / "templates"
BROKEN = " because it was busy."


def accepted(domain: str, lib: sentences.Library) -> tuple[list[str], dict[str, str]]:
    """One-unit corpus sentences the library accepts, with one slot-type map for all of them."""
    types: dict[str, str] = {}
    out = []
    for rec in read_records([CORPUS / f"{domain}.jsonl"], ("train", "dev")):
        if rec["kind"] not in CLEAN_KINDS or len(split_sentences(rec["text"])) != 1:
            continue
        t = slot_types(rec)
        if any(types.get(k, v) != v for k, v in t.items()):
            continue
        if check_template(rec["text"], lib, t).ok and rec["text"].rstrip()[-1:] in ".!?":
            out.append(rec["text"].strip())
            types.update(t)
    return out, types


def templates(items: list[str], size: int, broken: bool) -> list[str]:
    out = []
    for i in range(len(items)):
        parts = [items[(i + k) % len(items)] for k in range(size)]
        if broken:
            parts[-1] = parts[-1][:-1] + BROKEN
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


def earley_parser(lib: sentences.Library) -> lark.Lark:
    """The same grammar for Earley, reading the lexer's tokens written out as text ("your order <date> .")."""
    return lark.Lark(lib.compiled.source + '\n%ignore " "\n', parser="earley", start="start")


def as_text(lib: sentences.Library, unit: str, types: dict[str, str]) -> str:
    out = []
    for t in tokens(unit):
        out.append(f"<{types.get(t.text, 'string')}>" if t.kind == "slot" else t.text)
    return " ".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--domain", default="orders")
    args = ap.parse_args()

    lib = load_library(args.domain)
    items, types = accepted(args.domain, lib)
    earley = earley_parser(lib)

    def full(t: str) -> None:
        check_template(t, lib, types)

    def lalr(t: str) -> None:
        for u in split_sentences(t):
            with contextlib.suppress(lark.exceptions.LarkError):
                lib.lark.parse(lib.lark_tokens(u.text, types), start="start")

    def early(t: str) -> None:
        for u in split_sentences(t):
            with contextlib.suppress(lark.exceptions.LarkError):
                earley.parse(as_text(lib, u.text, types))

    print(f"domain {args.domain}: {len(items)} accepted one-sentence corpus templates")
    print(f"{'sentences':>9} {'kind':>7} | {'check':>10} {'LALR parse':>11} {'Earley':>9} | {'LALR/Earley':>11}")
    for size in (1, 3):
        for broken in (False, True):
            batch = templates(items, size, broken)
            for t in batch:
                assert check_template(t, lib, types).ok is (not broken), t
            f = rate(full, batch, args.seconds)
            a = rate(lalr, batch, args.seconds)
            b = rate(early, batch, args.seconds / 3)
            kind = "invalid" if broken else "valid"
            print(f"{size:>9} {kind:>7} | {f:>8.0f}/s {a:>9.0f}/s {b:>7.0f}/s | {a / b:>10.1f}x")

    failing = templates(items, 1, True)
    start = time.perf_counter()
    for t in failing:
        check_template(t, lib, types)
    per = (time.perf_counter() - start) / len(failing) * 1000
    print(f"diagnosis with nearest wording: {per:.2f} ms per failing sentence (target <= 5 ms)")

    cache = Path(tempfile.mkdtemp(prefix="guard-bench-cache-"))
    os.environ["GUARD_CACHE_DIR"] = str(cache)
    try:
        sentences._STAMPED.clear()
        sentences._LOADED.clear()
        s = time.perf_counter()
        load_library(args.domain)
        built = time.perf_counter() - s
        cold = []
        for _ in range(3):
            sentences._STAMPED.clear()
            sentences._LOADED.clear()
            s = time.perf_counter()
            load_library(args.domain)
            cold.append(time.perf_counter() - s)
        n, s = 2000, time.perf_counter()
        for _ in range(n):
            load_library(args.domain)
        warm = (time.perf_counter() - s) / n
        # the baseline: Lark's own cache of the same grammar (what guard used before guard/shapes/tables.py)
        lark_cache = str(cache / "lark.cache")
        lark.Lark(lib.compiled.source, **tables.options(sentences._TokenListLexer, sentences.STARTS), cache=lark_cache)
        lark_cold = []
        for _ in range(3):
            s = time.perf_counter()
            lark.Lark(
                lib.compiled.source, **tables.options(sentences._TokenListLexer, sentences.STARTS), cache=lark_cache
            )
            lark_cold.append(time.perf_counter() - s)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print(
        f"library load: built from the lexicon {built:.2f} s, cold from guard's cache {min(cold):.2f} s "
        f"(target <= 1 s; Lark's own cache of the same grammar {min(lark_cold):.2f} s, "
        f"{min(lark_cold) / min(cold):.1f}x slower), warm {warm * 1000:.3f} ms (target <= 50 ms)"
    )


if __name__ == "__main__":
    main()

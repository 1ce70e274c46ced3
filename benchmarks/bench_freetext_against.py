"""Free-text predict speed of this tree's model against another tree's (a baseline), same sentences, same run.

A retrained model may carry a new featurizer version that an older guard cannot load (and the
reverse), so each tree runs in its own process with its own code and model; the two alternate,
best of N fresh processes each (in each, a cold pass, then the best of three warm passes), and the
ratios are reported. The baseline is usually a checkout of main.

    .venv/bin/python benchmarks/bench_freetext_against.py --baseline /path/to/main [--sentences 20000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_WORKER = textwrap.dedent(
    """
    import json, sys, time
    from guard.freetext import load
    texts = json.load(open(sys.argv[1], encoding="utf-8"))
    clf = load()
    w0 = time.perf_counter()
    clf.predict(texts)
    cold = time.perf_counter() - w0
    wall = cpu = proba = float("inf")
    for _ in range(3):  # warm: the caches hold every sentence's windows, as in a long-running process
        w0, c0 = time.perf_counter(), time.process_time()
        clf.predict(texts)
        wall, cpu = min(wall, time.perf_counter() - w0), min(cpu, time.process_time() - c0)
        w1 = time.perf_counter()
        clf.predict_proba(texts)
        proba = min(proba, time.perf_counter() - w1)
    n = len(texts)
    print(json.dumps({"predict": n / wall, "predict_cpu": n / max(cpu, 1e-9), "proba": n / proba,
                      "predict_cold": n / cold}))
    """
)


def _run(tree: Path, data: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run(
        [sys.executable, "-c", _WORKER, str(data)], capture_output=True, text=True, check=True, cwd=tree, env=env
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", type=Path, required=True, help="another guard tree (its code and shipped model)")
    ap.add_argument("--sentences", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_freetext import corpus_texts, distinct_sentences

    texts = distinct_sentences(corpus_texts(), args.sentences)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "texts.json"
        data.write_text(json.dumps(texts), encoding="utf-8")
        best: dict[str, dict[str, float]] = {"this": {}, "baseline": {}}
        for _ in range(args.repeat):
            for name, tree in (("this", ROOT), ("baseline", args.baseline.resolve())):
                for key, value in _run(tree, data).items():
                    best[name][key] = max(best[name].get(key, 0.0), value)
    print(f"{len(texts)} distinct sentences; best of {args.repeat} fresh processes each, alternating")
    for key in ("predict", "predict_cpu", "proba", "predict_cold"):
        a, b = best["this"][key], best["baseline"][key]
        print(f"  {key:12s} this {a:9,.0f}/s   baseline {b:9,.0f}/s   ratio {a / b:.2f}")


if __name__ == "__main__":
    main()

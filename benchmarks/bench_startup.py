"""Start-up: whole ``guard`` processes beside ``python -c pass`` in the same run, as a user waits for them.

Each command runs as a new process, in interleaved rounds (the order reversed every other round), and the
report gives the median wall time, the ratio to the bare interpreter of the same round, and the issue-19
targets: ``guard --help`` 0.2 s, ``guard lint`` of one file with the format and shape stages 0.3 s, with the
classifier 1.0 s.

    .venv/bin/python benchmarks/bench_startup.py [--rounds 5] [--domain orders]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = "Your order {order_id} shipped on {ship_date}.\n"
TYPES = "order_id: identifier\nship_date: date\n"


def wall(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()[:300]}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--domain", default="orders")
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    py = [sys.executable]
    guard = [*py, "-m", "guard"]
    with tempfile.TemporaryDirectory() as tmp:
        here = Path(tmp)
        (here / "t.txt").write_text(TEMPLATE)
        (here / "t.txt.slots.yaml").write_text(TYPES)
        lint = [*guard, "lint", "t.txt", "--domain", args.domain, "--isolated"]
        commands = {
            "python -c pass": ([*py, "-c", "pass"], None),
            "guard --help": ([*guard, "--help"], 0.2),
            "guard lint (format, shape, ratio)": ([*lint, "--no-freetext"], 0.3),
            "guard lint (with the classifier)": (lint, 1.0),
        }
        for argv, _ in commands.values():  # warm the disk caches (grammar tables, the model, .pyc files)
            wall(argv, env, here)
        times: dict[str, list[float]] = {name: [] for name in commands}
        names = list(commands)
        for r in range(args.rounds):
            for name in names if r % 2 == 0 else reversed(names):
                times[name].append(wall(commands[name][0], env, here))
    base = times["python -c pass"]
    print(f"{'command':<36} {'median s':>9} {'x python':>9} {'target s':>9}")
    for name, (_, target) in commands.items():
        ratio = statistics.median(t / b for t, b in zip(times[name], base, strict=True))
        med = statistics.median(times[name])
        shown = f"{target:.1f}" if target else "-"
        print(f"{name:<36} {med:>9.3f} {ratio:>9.1f} {shown:>9}{'  over' if target and med > target else ''}")


if __name__ == "__main__":
    main()

"""Start-up: whole ``guard`` processes beside ``python -c pass`` in the same run, as a user waits for them.

Each command runs as a new process, in interleaved rounds (the order reversed every other round), and the
report gives the median wall time, the ratio to the bare interpreter of the same round, the CPU time (user
and system; a busy machine disturbs it less), the CPU of the grammar load and the CPU without it, and the
issue-19 targets: ``guard --help`` 0.2 s, ``guard lint`` of one file with the format and shape stages 0.3 s, with the
classifier 1.0 s.

The lint commands run through a small wrapper that times the sentence library's load
(``guard.shapes.sentences.load_library``) inside the process, so the report also shows the start-up's CPU
without it. ``PYTHONDONTWRITEBYTECODE`` is dropped from the children's environment: an installed guard has its
``.pyc`` files, and compiling every module from source on each run is not what a user waits for.

    .venv/bin/python benchmarks/bench_startup.py [--rounds 5] [--domain orders]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = "Your order {order_id} shipped on {ship_date}.\n"
TYPES = "order_id: identifier\nship_date: date\n"


#: Runs ``guard`` as ``python -m guard`` would, timing the CPU the sentence library's load takes; prints it
#: last on stderr. The timer is put on ``load_library`` when guard imports the module, not by importing it
#: first: guard.shapes and what it imports would then be imported before ``main`` raises the collector's
#: threshold, which costs 3.5% more instructions than the command a user runs.
TIMED = """
import sys, time
spent = [0.0]
class Timer:
    def find_spec(self, name, path, target=None):
        if name != "guard.shapes.sentences":
            return None
        sys.meta_path.remove(self)
        spec = next(s for f in sys.meta_path if (s := f.find_spec(name, path, target)) is not None)
        run = spec.loader.exec_module
        def exec_module(module):
            run(module)
            real = module.load_library
            def timed(*a, **k):
                t0 = time.process_time()
                try:
                    return real(*a, **k)
                finally:
                    spent[0] += time.process_time() - t0
            module.load_library = timed
        spec.loader.exec_module = exec_module
        return spec
sys.meta_path.insert(0, Timer())
from guard.cli.main import main
try:
    code = main()
finally:
    print(f"grammar-load {spent[0]:.6f}", file=sys.stderr)
sys.exit(code)
"""


def wall(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, float]:
    """Wall time of the whole process, the CPU time spent loading the grammar (0 when not timed), and the
    process's CPU time (user and system), which a busy machine disturbs less than the wall time."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()[:300]}")
    last = proc.stderr.strip().rsplit("\n", 1)[-1]
    return elapsed, float(last.split()[1]) if last.startswith("grammar-load ") else 0.0, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--domain", default="orders")
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    py = [sys.executable]
    guard = [*py, "-m", "guard"]
    timed = [*py, "-c", TIMED]
    with tempfile.TemporaryDirectory() as tmp:
        here = Path(tmp)
        (here / "t.txt").write_text(TEMPLATE)
        (here / "t.txt.slots.yaml").write_text(TYPES)
        lint = [*timed, "lint", "t.txt", "--domain", args.domain, "--isolated"]
        commands = {
            "python -c pass": ([*py, "-c", "pass"], None),
            "guard --help": ([*guard, "--help"], 0.2),
            "guard lint (format, shape, ratio)": ([*lint, "--no-freetext"], 0.3),
            "guard lint (with the classifier)": (lint, 1.0),
        }
        for argv, _ in commands.values():  # warm the disk caches (grammar tables, the model, .pyc files)
            wall(argv, env, here)
        times: dict[str, list[float]] = {name: [] for name in commands}
        loads: dict[str, list[float]] = {name: [] for name in commands}
        cpus: dict[str, list[float]] = {name: [] for name in commands}
        names = list(commands)
        for r in range(args.rounds):
            for name in names if r % 2 == 0 else reversed(names):
                t, load, cpu = wall(commands[name][0], env, here)
                times[name].append(t)
                loads[name].append(load)
                cpus[name].append(cpu)
    base = times["python -c pass"]
    print(f"{'command':<36} {'wall s':>7} {'x python':>9} {'target s':>9} {'cpu s':>7} {'grammar':>8} {'cpu-gram':>9}")
    for name, (_, target) in commands.items():
        ratio = statistics.median(t / b for t, b in zip(times[name], base, strict=True))
        med = statistics.median(times[name])
        shown = f"{target:.1f}" if target else "-"
        cpu = statistics.median(cpus[name])
        load = statistics.median(loads[name])
        rest = statistics.median(c - g for c, g in zip(cpus[name], loads[name], strict=True))
        over = "  over" if target and med > target else ""
        print(f"{name:<36} {med:>7.3f} {ratio:>9.1f} {shown:>9} {cpu:>7.3f} {load:>8.3f} {rest:>9.3f}{over}")


if __name__ == "__main__":
    main()

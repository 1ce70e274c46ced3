"""Run every benchmark in this folder, one process each, and show their reports in turn."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

here = Path(__file__).parent
failed = []
for script in sorted(here.glob("bench_*.py")):
    print(f"\n=== {script.name} ===", flush=True)
    if subprocess.run([sys.executable, str(script)]).returncode != 0:
        failed.append(script.name)
if failed:
    print(f"\nfailed: {', '.join(failed)}")
    sys.exit(1)

"""``guard demo`` as a new user runs it: on an 80-column terminal, leaving nothing behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_demo_fits_80_columns_and_removes_its_temporary_database(tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "80", "TMPDIR": str(tmp_path), "TERM": "dumb"}
    proc = subprocess.run(
        [sys.executable, "-m", "guard", "demo", "--orders", "50"], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert {"answer", "refuse", "regenerate_from_facts"} <= {w for line in lines for w in line.split()}
    too_wide = [line for line in lines if len(line) > 80]
    assert not too_wide, too_wide
    assert "temporary SQLite database (removed at exit)" in proc.stdout
    assert list(tmp_path.iterdir()) == []  # the database and its directory are gone

"""Issue 18 #9: Prometheus multiprocess mode does what the documentation says, and a bad folder is a FileError.

prometheus_client chooses its multiprocess value store when it is imported, so the scenarios run in a fresh
interpreter with ``PROMETHEUS_MULTIPROC_DIR`` set, as a gunicorn or uvicorn worker would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from guard import demo
from guard.decision import Action
from guard.errors import FileError
from guard.observe.metrics import Metrics
from guard.pipeline import Guard

ROOT = Path(__file__).resolve().parents[2]


def in_worker(folder: Path, code: str) -> dict:
    """Run ``code`` in a fresh interpreter in multiprocess mode; it prints one JSON object."""
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(folder), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-W", "always", "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "stderr": done.stderr}


def test_two_metrics_in_one_worker_report_the_same_shared_series(tmp_path):
    """Multiprocess series are per folder, not per instance: both instances report, and expose, the shared count,
    and making a second one says so."""
    got = in_worker(
        tmp_path,
        """
        import json, warnings
        from guard.observe.metrics import Metrics
        a = Metrics()
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            b = Metrics()
        a.observe({"event": "decision", "action": "answer", "findings": []})
        print(json.dumps({
            "a": a.value("guard_decisions_total", action="answer"),
            "b": b.value("guard_decisions_total", action="answer"),
            "exposed": b.expose().decode().count('guard_decisions_total{action="answer"} 1.0'),
            "warned": [str(w.message) for w in seen],
        }))
        """,
    )
    assert got["a"] == got["b"] == 1.0 and got["exposed"] == 1
    assert any("share" in w and "PROMETHEUS_MULTIPROC_DIR" in w for w in got["warned"])


def test_single_process_metrics_stay_isolated():
    a, b = Metrics(), Metrics()
    a.observe({"event": "decision", "action": "answer", "findings": []})
    assert a.value("guard_decisions_total", action="answer") == 1.0
    assert b.value("guard_decisions_total", action="answer") == 0.0


@pytest.mark.parametrize("make", ["missing", "file"])
def test_multiprocess_folder_that_is_not_a_folder_is_a_file_error(tmp_path, monkeypatch, make):
    folder = tmp_path / "metrics"
    if make == "file":
        folder.write_text("", encoding="utf-8")
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(folder))
    with pytest.raises(FileError, match="PROMETHEUS_MULTIPROC_DIR") as info:
        Metrics()
    assert info.value.location == str(folder)


def test_missing_multiprocess_folder_in_a_worker_is_a_file_error_not_a_traceback(tmp_path):
    got = in_worker(
        tmp_path / "missing",
        """
        import json
        from guard.errors import FileError
        from guard.observe.metrics import Metrics
        try:
            Metrics().observe({"event": "decision", "action": "answer", "findings": []})
            print(json.dumps({"raised": None}))
        except FileError as exc:
            print(json.dumps({"raised": "FileError", "message": str(exc)}))
        """,
    )
    assert got["raised"] == "FileError" and "PROMETHEUS_MULTIPROC_DIR" in got["message"]


class FailingMetrics(Metrics):
    """The caller's own metrics whose store fails on every count (a full disk under its files, say)."""

    def observe(self, event):
        raise FileError("cannot write the metrics store", location="metrics")


def test_metrics_that_fail_to_count_keep_the_decision(sqlite_demo):
    _, policy, store = sqlite_demo
    config = {"domains": {"orders": {"stages": {"shape": "off", "freetext": "off", "ratio": "off"}}}}
    g = Guard(policy, store, domain="orders", config=config, metrics=FailingMetrics())
    with pytest.warns(RuntimeWarning, match="could not count the decision in its metrics"):
        d = g.run(demo.payloads()["answer"], principal=demo.PRINCIPAL, now=demo.NOW)
    assert d.action is Action.ANSWER

"""The shipped alert rules: promtool accepts them, their unit tests fire, and they name real metrics."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from guard.observe.metrics import Metrics

RULES_DIR = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
RULES = RULES_DIR / "guard-alerts.yml"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool is not installed (apt-get install prometheus; .ci/run installs it)"
)


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run([PROMTOOL, *args], cwd=RULES_DIR, capture_output=True, text=True, timeout=120)


@needs_promtool
def test_promtool_accepts_the_rules() -> None:
    done = _promtool("check", "rules", RULES.name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


@needs_promtool
def test_rule_unit_tests_fire_on_a_jump_and_stay_quiet_otherwise() -> None:
    done = _promtool("test", "rules", "guard-alerts.test.yml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_rules_use_only_metrics_guard_exports() -> None:
    m = Metrics()
    m.observe({"event": "claim", "entity": "e", "field": "f", "status": "confirmed"})
    m.observe({"event": "decision", "action": "answer", "findings": ["R401"], "prose_per_slot": 1.0})
    exported = {
        line.split("{")[0].split(" ")[0] for line in m.expose().decode().splitlines() if line and line[0] != "#"
    }
    groups = yaml.safe_load(RULES.read_text(encoding="utf-8"))["groups"]
    exprs = [rule["expr"] for group in groups for rule in group["rules"]]
    used = {name for expr in exprs for name in re.findall(r"\b(guard_[a-z_]+)", expr)}
    assert used and used <= exported, used - exported
    alerts = {rule["alert"] for group in groups for rule in group["rules"] if "alert" in rule}
    assert alerts == {
        "GuardContradictionRateJump",
        "GuardNotFoundRateJump",
        "GuardSlotRatioDrift",
        "GuardLogWriteFailures",
    }

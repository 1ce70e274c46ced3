"""`guard lint` and the lint facade carry every stage's findings in one shape and one set of formats."""

from __future__ import annotations

import json

import pytest

from guard.cli.main import main
from guard.linting import default_stages, lint
from guard.linting.ratio import RatioThresholds, measure

SEED = (
    "Your order {order_id} shipped on {ship_date} and is expected to arrive on {eta}. It contains {item_count} items."
)
TYPES = {"order_id": "identifier", "ship_date": "date", "eta": "date", "item_count": "integer"}


def test_ratio_measures():
    r = measure(SEED)
    assert (r.prose_words, r.slots, r.sentence_words) == (13, 4, ((10, 3), (3, 1)))
    assert r.prose_per_slot == pytest.approx(3.25) and r.coverage == 1.0
    assert measure("Thanks for waiting.").prose_per_slot == float("inf")
    assert measure("").prose_per_slot == 0.0


def test_ratio_findings_through_lint_facade():
    wordy = SEED + " We really hope you enjoy everything in it and that it all arrives in lovely condition."
    stages = default_stages(freetext=False, thresholds=RatioThresholds(max_prose_per_slot=5))
    r = lint(wordy, domain="orders", slot_types=TYPES, stages=stages)
    codes = [f.code for f in r.findings]
    assert "R401" in codes and "R402" in codes and "S201" in codes
    for f in r.findings:
        assert f.stage in {"shape", "ratio"} and f.to_dict()["name"]
    assert lint(SEED, domain="orders", slot_types=TYPES, stages=stages).ok


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_cli_formats_carry_ratio_findings(tmp_path, capsys, fmt):
    t = tmp_path / "t.txt"
    t.write_text(
        "Your order {order_id} is ready. We are thrilled to let you know that our whole team worked hard on it."
    )
    code = main(["lint", str(t), "-d", "orders", "-s", "order_id=identifier", "--no-freetext", "-f", fmt])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    text = json.dumps(out)
    assert "R402" in text and "S201" in text


def test_lint_reads_standard_input():
    import subprocess
    import sys

    def lint_stdin(text, *args):
        return subprocess.run(
            [sys.executable, "-m", "guard.cli.main", "lint", "-", "-d", "orders", "--no-freetext", *args],
            input=text,
            capture_output=True,
            text=True,
            timeout=120,
        )

    ok = lint_stdin(SEED, *[f"--slot-type={k}={v}" for k, v in TYPES.items()])
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = lint_stdin("Your order {order_id} shipped on 3 May.", "-s", "order_id=identifier", "-f", "json")
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["files"][0]["findings"][0]["code"] == "S201"
    payload = lint_stdin(json.dumps({"answer_template": "Hi {x.y}", "claims": []}))
    assert payload.returncode == 1 and "F101" in payload.stdout

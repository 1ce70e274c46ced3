"""Every catalogue entry's examples are real: the failing one raises its code, the passing one does not."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from guard.findings import CATALOGUE, Example
from guard.linting import default_stages, lint, lint_payload

CODES = sorted(CATALOGUE)


def _codes(ex: Example, stages) -> list[str]:
    if ex.claims is None:
        result = lint(ex.template, domain=ex.domain, slot_types=dict(ex.slot_types), stages=stages)
    else:
        claims = []
        for k, spec in ex.claims.items():
            t, _, v = spec.partition(" = ")
            claims.append({"key": k, "type": t, "entity": "order", "entity_id": "ord_1", "field": k, "value": v or "x"})
        result = lint_payload({"answer_template": ex.template, "claims": claims}, domain=ex.domain, stages=stages)
    return [f.code for f in result.findings]


@pytest.fixture(scope="module")
def stages():
    return default_stages(freetext=True, domain="orders")


@pytest.mark.parametrize("code", CODES)
def test_failing_example_raises_the_code_and_passing_example_does_not(code, stages):
    entry = CATALOGUE[code]
    assert entry.bad is not None and entry.good is not None, f"{code} needs a failing and a passing example"
    assert code in _codes(entry.bad, stages)
    assert code not in _codes(entry.good, stages)


def _guard(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "guard.cli.main", *args], capture_output=True, text=True, timeout=120)


def test_guard_rules_lists_every_code_with_its_name():
    out = _guard("rules")
    assert out.returncode == 0, out.stderr
    listed = {line.split()[0]: line.split()[1] for line in out.stdout.splitlines()}
    assert listed == {c: CATALOGUE[c].name for c in CATALOGUE}


def test_guard_rules_code_explains_it_from_the_catalogue():
    out = _guard("rules", "s201")
    assert out.returncode == 0, out.stderr
    entry = CATALOGUE["S201"]
    for part in (
        "What it catches",
        "Why",
        "Fails",
        "Passes",
        entry.bad.template,
        entry.good.template,
        "sentence N is not worded in a way I am allowed to use",
    ):
        assert part in out.stdout
    doc = json.loads(_guard("rules", "T303", "--format", "json").stdout)
    assert doc["name"] == "freetext.causal" and doc["examples"]["bad"]["template"] == CATALOGUE["T303"].bad.template


def test_guard_rules_unknown_code_is_a_usage_error():
    out = _guard("rules", "S299")
    assert out.returncode == 2 and "no finding code 'S299'" in out.stderr and "S201" in out.stderr
    assert "Traceback" not in out.stderr

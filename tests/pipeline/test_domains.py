"""Domains fail closed: an unknown domain is an error everywhere, and a domain from a grammar directory is
enforced like a shipped one; a user's gate config extends the shipped one."""

from __future__ import annotations

import json
import shutil

import pytest

from guard import demo
from guard.audit import AuditSettings, audit
from guard.cli.main import main
from guard.errors import ConfigError, GuardError
from guard.pipeline import Guard, load_gate_config
from guard.shapes import list_domains

STRAY = "Your order {order_id} is on its way and will be with you very soon."


def _payload(template: str) -> dict:
    p = json.loads(json.dumps(demo.payloads()["answer"]))
    p["answer_template"] = template + " " + p["answer_template"]
    return p


@pytest.mark.parametrize("domain", ["Orders", "order", "orders ", "shop"])
def test_an_unknown_domain_is_an_error_not_a_gate_without_its_library(sqlite_demo, domain):
    url, policy, store = sqlite_demo
    with pytest.raises(ConfigError) as err:
        Guard(policy, store, domain=domain)
    assert repr(domain) in str(err.value)
    assert "orders" in str(err.value)
    assert err.value.location == "domain"


def test_the_cli_reports_an_unknown_domain_without_a_traceback(sqlite_demo, tmp_path, capsys):
    url, policy, _ = sqlite_demo
    (tmp_path / "p.yaml").write_text(json.dumps(policy.model_dump(mode="json", exclude_none=True)))
    (tmp_path / "payload.json").write_text(json.dumps(demo.payloads()["answer"]))
    code = main(
        ["run", str(tmp_path / "payload.json"), "--policy", str(tmp_path / "p.yaml"), "--db", url, "--domain", "Orders"]
    )
    err = capsys.readouterr().err
    assert code != 0
    assert "unknown domain 'Orders'" in err
    assert "Traceback" not in err


def test_audit_refuses_an_unknown_domain(sqlite_demo, tmp_path):
    url, policy, _ = sqlite_demo
    (tmp_path / "a.json").write_text(json.dumps([demo.payloads()["answer"]]))
    settings = AuditSettings(
        policy=policy.model_dump(mode="json", exclude_none=True), db=url, domain="Orders", now=demo.NOW.isoformat()
    )
    with pytest.raises(GuardError, match="unknown domain 'Orders'"):
        list(audit([str(tmp_path / "a.json")], settings))


def test_a_domain_from_a_grammar_dir_is_enforced_like_a_shipped_one(sqlite_demo, tmp_path):
    url, policy, store = sqlite_demo
    shipped = list_domains()["orders"]
    shutil.copy(shipped, tmp_path / f"shop{shipped.suffix}")
    assert "shop" in list_domains(tmp_path)
    with Guard(policy, store, domain="shop", grammar_dir=tmp_path) as gate:
        assert gate.modes["shape"].value == "enforce"
        refused = gate.run(_payload(STRAY), principal=demo.PRINCIPAL, now=demo.NOW)
        answered = gate.run(demo.payloads()["answer"], principal=demo.PRINCIPAL, now=demo.NOW)
    assert refused.action.value == "refuse"
    assert any(f.code.startswith("S2") for f in refused.findings)
    assert answered.action.value == "answer"


def test_a_user_config_extends_the_shipped_one(tmp_path):
    path = tmp_path / "gate.yaml"
    path.write_text("domains:\n  orders:\n    stages: {ratio: enforce}\n")
    cfg = load_gate_config(path)
    orders = cfg.for_domain("orders")
    assert orders.mode("ratio").value == "enforce"
    assert orders.mode("shape").value == "enforce"
    assert orders.mode("freetext").value == "enforce"
    assert cfg.for_domain(None).mode("shape").value == "off"
    assert load_gate_config({"default": {"stages": {"ratio": "off"}}}).for_domain(None).mode("freetext").value == (
        "enforce"
    )


def test_a_gate_config_that_is_not_a_mapping_is_an_error(tmp_path):
    path = tmp_path / "gate.yaml"
    path.write_text("- orders\n")
    with pytest.raises(ConfigError, match="must be a mapping"):
        load_gate_config(path)

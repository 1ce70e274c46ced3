"""The stage registry: a stage registered from Python works in lint, Guard.run and audit, and config reads it."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ConfigDict

from guard import demo
from guard.audit import AuditSettings, audit
from guard.decision import Action
from guard.errors import ConfigError
from guard.findings import CATALOGUE, Code, Finding, Severity
from guard.linting import default_stages, lint, registry
from guard.linting.registry import Mode, Stage, StageSetup
from guard.pipeline import Guard, load_gate_config

BANNED = Code(
    "X901",
    "shout.exclamation",
    "shout",
    Severity.ERROR,
    "exclamation mark in a template",
    explanation="An exclamation mark.",
    why="Guard's answers do not shout.",
)


class ShoutOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    mark: str = "!"


def _build(setup: StageSetup):
    mark = setup.options.mark if setup.options else "!"

    def check(ctx):
        at = ctx.template.find(mark)
        if at < 0:
            return []
        return [Finding.make("X901", f"'{mark}' at column {at + 1}", sentence=0, start=at, end=at + 1)]

    return check


@pytest.fixture
def shout():
    stage = registry.register(
        Stage(
            "shout",
            _build,
            codes=(BANNED,),
            refusal="sentence {n} raises its voice",
            default_mode=Mode.REPORT,
            options=ShoutOptions,
        )
    )
    yield stage
    registry.unregister("shout")
    assert "X901" not in CATALOGUE and "shout" not in registry.names()


SHOUTING = {
    "answer_template": "Your order {order_id} shipped on {ship_date}!",
    "claims": [
        {
            "key": "order_id",
            "type": "identifier",
            "entity": "order",
            "entity_id": "ord_88431",
            "field": "id",
            "value": "ord_88431",
        },
        {
            "key": "ship_date",
            "type": "date",
            "entity": "order",
            "entity_id": "ord_88431",
            "field": "shipped_at",
            "value": "2026-07-30",
        },
    ],
}


def _config(mode: str, **options):
    return {
        "domains": {
            "orders": {
                "stages": {"format": "enforce", "shape": "off", "freetext": "off", "ratio": "off", "shout": mode},
                **options,
            }
        }
    }


def test_registered_stage_runs_in_lint(shout):
    checks = registry.build(["format", "shout"], StageSetup(domain="orders"))
    assert [name for name, _ in checks] == ["format", "shout"]
    r = lint("Hello {a}!", domain="orders", slot_types={"a": "identifier"}, stages=checks)
    assert [f.code for f in r.findings] == ["X901"] and r.findings[0].stage == "shout"
    assert CATALOGUE["X901"].refusal == "sentence {n} raises its voice"


def test_registered_stage_enforced_by_the_gate_refuses_before_any_lookup(shout, sqlite_demo):
    url, policy, store = sqlite_demo
    gate = Guard(policy, store, domain="orders", config=_config("enforce"))
    d = gate.run(SHOUTING, principal=demo.PRINCIPAL, now=demo.NOW)
    assert d.action is Action.REFUSE and not d.results
    assert "raises its voice" in d.message and "sentence 1" in d.message
    reported = Guard(policy, store, domain="orders", config=_config("report")).run(
        SHOUTING, principal=demo.PRINCIPAL, now=demo.NOW
    )
    assert reported.action is Action.ANSWER and [f.code for f in reported.findings] == ["X901"]


def test_registered_stage_options_come_from_the_gate_config(shout, sqlite_demo):
    url, policy, store = sqlite_demo
    gate = Guard(policy, store, domain="orders", config=_config("enforce", shout={"mark": "shipped"}))
    assert gate.run(SHOUTING, principal=demo.PRINCIPAL, now=demo.NOW).findings[0].start == SHOUTING[
        "answer_template"
    ].index("shipped")
    with pytest.raises(ConfigError) as err:
        Guard(policy, store, domain="orders", config=_config("enforce", shout={"volume": 11}))
    assert "domains.orders.shout.volume" in str(err.value)


def test_registered_stage_runs_in_audit(shout, sqlite_demo, tmp_path):
    url, policy, store = sqlite_demo
    (tmp_path / "p.json").write_text(json.dumps(SHOUTING))
    (tmp_path / "t.txt").write_text("Your order {order_id} is on its way!")
    settings = AuditSettings(
        policy=policy.model_dump(mode="json"),
        db=url,
        domain="orders",
        config=_config("enforce"),
        now=demo.NOW.isoformat(),
        default_principal=demo.PRINCIPAL,
    )
    report = audit([tmp_path / "p.json", tmp_path / "t.txt"], settings)
    payload, template = report.records
    assert payload["action"] == "refuse" and payload["findings"] == ["X901"]
    assert template["ok"] is False and template["findings"] == ["X901"]


def test_unknown_stage_in_the_gate_config_is_an_error():
    with pytest.raises(ConfigError) as err:
        load_gate_config({"domains": {"orders": {"stages": {"format": "enforce", "shoutt": "enforce"}}}}).for_domain(
            "orders"
        )
    assert "shoutt" in str(err.value) and "format, shape, freetext, ratio" in str(err.value)


def test_unknown_stage_name_is_an_error():
    with pytest.raises(ConfigError, match="unknown lint stage 'nope'"):
        registry.build(["format", "nope"], StageSetup())


def test_a_code_of_another_stage_cannot_be_claimed():
    with pytest.raises(ConfigError, match="belongs to stage 'format'"):
        registry.register(Stage("thief", _build, codes=("F101",)))
    assert "thief" not in registry.names()


def test_redefining_a_known_code_is_an_error():
    other = Code("F101", "format.other", "format", Severity.ERROR, "something else")
    with pytest.raises(ConfigError, match="already defined"):
        CATALOGUE.add(other)
    assert CATALOGUE["F101"].name == "format.attribute"


def test_builtin_stages_in_order_and_every_code_documented():
    assert registry.names()[:4] == ("format", "shape", "freetext", "ratio")
    for s in registry.stages():
        for code in s.code_names:
            entry = CATALOGUE[code]
            assert entry.stage == s.name and entry.refusal, code
            assert entry.summary and entry.explanation and entry.why, code
    advisory = {"F108", "S204", "S205"}
    assert {c for c in CATALOGUE if not CATALOGUE[c].blocks} == advisory


def test_default_stages_builds_through_the_registry():
    checks = default_stages(freetext=False, thresholds=None, domain="orders")
    assert [n for n, _ in checks] == ["format", "shape", "ratio"]

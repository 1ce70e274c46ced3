"""Issue 18 #11: a value that is not a value of its type is ``malformed``, not ``contradicted``; the machine
format ``guard schema`` advertises is read in every locale.

Real parts: a SQLite database built by :mod:`guard.demo`, the policy loader, ``verify`` and ``Guard.run``,
Prometheus metrics, the event log and ``guard monitor``.
"""

from __future__ import annotations

import copy
import json
from decimal import Decimal
from typing import Any

import pytest

from guard import demo
from guard.cli.main import main
from guard.decision import Action
from guard.observe.events import EventLog
from guard.observe.metrics import Metrics
from guard.pipeline import Guard, verify
from guard.records.checker import Status
from guard.records.policy import load_policy
from guard.records.store import RecordStore

CHECKER_ONLY = {
    "domains": {"orders": {"stages": {"format": "enforce", "shape": "off", "freetext": "off", "ratio": "off"}}}
}


@pytest.fixture(scope="module")
def stores(sqlite_demo):
    """(policy, store) for the demo policy in en_GB and in de_DE, on the same database."""
    url, policy, store = sqlite_demo
    data = policy.model_dump(mode="json", exclude_none=True)
    data["locale"] = "de_DE"
    german = load_policy(data)
    de_store = RecordStore(url, german)
    yield {"en_GB": (policy, store), "de_DE": (german, de_store)}
    de_store.close()


def with_value(name: str, key: str, value: Any) -> dict[str, Any]:
    p = copy.deepcopy(demo.payloads()[name])
    for c in p["claims"]:
        if c["key"] == key:
            c["value"] = value
    return p


def status_of(stores, locale: str, name: str, key: str, value: Any) -> Status:
    policy, store = stores[locale]
    d = verify(with_value(name, key, value), policy, store, principal=demo.PRINCIPAL, now=demo.NOW)
    return next(r.status for r in d.results if r.key == key)


def true_total(stores) -> str:
    """The order total in the machine format the schema advertises (major units, '.' decimal point)."""
    policy, store = stores["en_GB"]
    d = verify(demo.payloads()["regenerate"], policy, store, principal=demo.PRINCIPAL, now=demo.NOW)
    return str(Decimal(d.facts["total"]["value"]).scaleb(-2))


@pytest.mark.parametrize("locale", ["en_GB", "de_DE"])
def test_machine_format_is_read_in_every_locale(stores, locale):
    total = true_total(stores)
    assert "." in total
    assert status_of(stores, locale, "regenerate", "total", total) is Status.CONFIRMED
    assert status_of(stores, locale, "answer", "eta", "2026-08-03") is Status.CONFIRMED


@pytest.mark.parametrize(
    ("name", "key", "value"),
    [
        ("regenerate", "total", "€45.99"),
        ("regenerate", "total", "45.99 EUR"),
        ("regenerate", "total", "forty pounds"),
        ("regenerate", "total", "12.345"),  # more places than GBP has
        ("regenerate", "total", "1," * 30 + "000"),  # digits grouped in ones
        ("answer", "eta", "22/07/2026"),
        ("answer", "eta", "next Tuesday"),
        ("answer", "item_count", "three"),
        ("answer", "item_count", 2.5),
    ],
)
@pytest.mark.parametrize("locale", ["en_GB", "de_DE"])
def test_value_that_is_not_of_its_type_is_malformed(stores, locale, name, key, value):
    assert status_of(stores, locale, name, key, value) is Status.MALFORMED


@pytest.mark.parametrize(
    ("name", "key", "value"),
    [("regenerate", "total", "1.00"), ("answer", "eta", "2026-01-01"), ("answer", "item_count", 7)],
)
def test_well_formed_wrong_value_is_still_contradicted(stores, name, key, value):
    assert status_of(stores, "en_GB", name, key, value) is Status.CONTRADICTED


def test_malformed_value_decides_regenerate_with_the_facts(stores):
    policy, store = stores["en_GB"]
    d = verify(with_value("answer", "eta", "22/07/2026"), policy, store, principal=demo.PRINCIPAL, now=demo.NOW)
    assert d.action is Action.REGENERATE
    assert "eta" in d.contradicted and d.facts["eta"]["value"] == "2026-08-03"
    assert [r.key for r in d.results if r.status is Status.MALFORMED] == ["eta"]
    assert d.to_dict()["results"][2]["status"] == "malformed"


def test_malformed_is_counted_apart_in_metrics_and_monitor(stores, tmp_path, capsys):
    policy, store = stores["en_GB"]
    path = tmp_path / "guard.jsonl"
    metrics = Metrics()
    with EventLog(path) as log:
        g = Guard(policy, store, domain="orders", config=CHECKER_ONLY, log=log, metrics=metrics)
        for value in ("22/07/2026", "22/07/2026", "2026-01-01", "2026-08-03"):
            g.run(with_value("answer", "eta", value), principal=demo.PRINCIPAL, now=demo.NOW)
    labels = {"entity": "order", "field": "estimated_delivery"}
    assert metrics.value("guard_claims_total", status="malformed", **labels) == 2
    assert metrics.value("guard_claims_total", status="contradicted", **labels) == 1
    assert main(["monitor", str(path), "--format", "json", "--window", "1d"]) in (0, 1)
    report = json.loads(capsys.readouterr().out)
    text = json.dumps(report)
    assert '"malformed": 2' in text and '"contradicted": 1' in text

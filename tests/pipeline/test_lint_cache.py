"""The gate lints a template once per process: later payloads with the same template skip every stage."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guard import demo
from guard.errors import ConfigError
from guard.linting import registry
from guard.linting.registry import Mode, Stage
from guard.linting.runner import LintResult
from guard.observe.metrics import Metrics
from guard.pipeline import Guard, LintCache

CALLS: list[str] = []


def _counting(setup):
    def check(ctx):
        CALLS.append(ctx.template)
        return []

    return check


@pytest.fixture
def counted():
    registry.register(Stage("counted", _counting, default_mode=Mode.REPORT))
    CALLS.clear()
    yield
    registry.unregister("counted")


def _config():
    return {
        "domains": {
            "orders": {
                "stages": {
                    "format": "enforce",
                    "shape": "enforce",
                    "freetext": "off",
                    "ratio": "report",
                    "counted": "report",
                }
            }
        }
    }


def _payload(order_id: str, shipped: str) -> dict:
    return {
        "answer_template": "Your order {order_id} shipped on {ship_date}.",
        "claims": [
            {
                "key": "order_id",
                "type": "identifier",
                "entity": "order",
                "entity_id": order_id,
                "field": "id",
                "value": order_id,
            },
            {
                "key": "ship_date",
                "type": "date",
                "entity": "order",
                "entity_id": order_id,
                "field": "shipped_at",
                "value": shipped,
            },
        ],
    }


def test_repeated_template_is_linted_once_and_counted(counted, sqlite_demo):
    url, policy, store = sqlite_demo
    metrics = Metrics()
    gate = Guard(policy, store, domain="orders", config=_config(), metrics=metrics)
    first = gate.run(_payload("ord_88431", "2026-07-30"), principal=demo.PRINCIPAL, now=demo.NOW)
    second = gate.run(_payload("ord_88431", "2026-07-01"), principal=demo.PRINCIPAL, now=demo.NOW)
    assert len(CALLS) == 1
    assert first.findings == second.findings and first.action.value == "answer"
    assert second.action.value == "regenerate_from_facts"
    assert (gate.lint_cache.hits, gate.lint_cache.misses) == (1, 1)
    assert metrics.value("guard_lint_cache_total", result="hit") == 1
    assert metrics.value("guard_lint_cache_total", result="miss") == 1


def test_other_slot_types_or_keys_are_linted_again(counted, sqlite_demo):
    url, policy, store = sqlite_demo
    gate = Guard(policy, store, domain="orders", config=_config())
    p = _payload("ord_88431", "2026-07-30")
    gate.run(p, principal=demo.PRINCIPAL, now=demo.NOW)
    extra = {**p, "claims": [*p["claims"], {**p["claims"][0], "key": "spare"}]}
    d = gate.run(extra, principal=demo.PRINCIPAL, now=demo.NOW)
    assert len(CALLS) == 2 and [w.code for w in d.warnings] == ["F108"]


def test_cached_result_equals_a_fresh_lint(sqlite_demo):
    url, policy, store = sqlite_demo
    cached = Guard(policy, store, domain="orders")
    fresh = Guard(policy, store, domain="orders", lint_cache_size=0)
    for template in ("Your order {order_id} shipped on {ship_date}.", "Your order {order_id} beat {ship_date}."):
        p = {**_payload("ord_88431", "2026-07-30"), "answer_template": template}
        for _ in range(3):
            a = cached.run(p, principal=demo.PRINCIPAL, now=demo.NOW, request_id="r")
            b = fresh.run(p, principal=demo.PRINCIPAL, now=demo.NOW, request_id="r")
            assert a.to_dict() == b.to_dict()
    assert fresh.lint_cache.hits == 0 and len(fresh.lint_cache) == 0 and cached.lint_cache.hits == 4


def _result(i: int) -> LintResult:
    return LintResult(str(i), "orders", [], [])


@settings(max_examples=50, deadline=None)
@given(size=st.integers(1, 8), keys=st.lists(st.integers(0, 12), max_size=60))
def test_lru_keeps_the_most_recently_used(size, keys):
    cache = LintCache(size)
    order: list[int] = []
    for k in keys:
        if cache.get((k,)) is None:
            cache.put((k,), _result(k))
        if k in order:
            order.remove(k)
        order.append(k)
        order = order[-size:]
        assert len(cache) == len(order) <= size
    assert all(cache.get((k,)) is not None for k in order)
    assert cache.hits + cache.misses == len(keys) + len(order)


def test_negative_cache_size_is_a_config_error():
    with pytest.raises(ConfigError, match="must not be negative"):
        LintCache(-1)

"""The HTTP API on every backend: the gate's decisions, row scope from the header only, keys kept apart."""

from __future__ import annotations

import copy

from guard import demo

NOW = {"now": demo.NOW.isoformat()}
PROBLEM = "application/problem+json"


def run(served, payload, *, key="shop", principal=demo.PRINCIPAL, policy="orders", **params):
    headers = {"X-Guard-Principal": principal} if principal is not None else {}
    with served.client(key, **headers) as c:
        return c.post("/v1/run", params={"policy": policy, **NOW, **params}, json=payload)


def test_run_answers_from_the_records(served):
    r = run(served, demo.payloads()["answer"])
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    body = r.json()
    assert body["action"] == "answer"
    assert body["text"].startswith("Your order ord_88431 shipped on 30 July 2026")
    assert body["request_id"] == r.headers["x-request-id"]


def test_run_refuses_stale_and_regenerates_wrong(served):
    assert run(served, demo.payloads()["refuse"]).json()["action"] == "refuse"
    body = run(served, demo.payloads()["regenerate"]).json()
    assert body["action"] == "regenerate_from_facts" and body["contradicted"] == ["total"]
    assert body["facts"]["total"]["text"] == "£1,299.00"


def test_principal_comes_from_the_header_only(served):
    other = run(served, demo.payloads()["answer"], principal="cus_1000").json()
    assert other["action"] == "refuse" and {r["status"] for r in other["results"]} == {"not_found"}
    nobody = run(served, demo.payloads()["answer"], principal=None, principal_id=demo.PRINCIPAL).json()
    assert nobody["action"] == "refuse" and {r["status"] for r in nobody["results"]} == {"not_checkable"}


def test_a_principal_inside_the_payload_is_never_used(served):
    p = copy.deepcopy(demo.payloads()["answer"])
    p["principal"] = demo.PRINCIPAL
    r = run(served, p, principal=None)
    assert r.status_code == 422 and r.headers["content-type"] == PROBLEM
    body = r.json()
    assert body["code"] == "payload"
    assert [pr["location"]["part"] for pr in body["problems"]] == ["principal"]
    # with the caller's own header, the same payload is still refused: the payload cannot carry a principal
    assert run(served, p, principal="cus_1000").status_code == 422


def test_a_key_cannot_reach_another_keys_policy(served):
    for key, policy in (("shop", "customers"), ("crm", "orders"), ("shop", "no_such_policy")):
        r = run(served, demo.payloads()["answer"], key=key, policy=policy, now=None)
        assert r.status_code == 403 and r.headers["content-type"] == PROBLEM
        assert r.json()["code"] == "forbidden"
    with served.client("crm") as c:
        assert c.get("/v1/schema/orders").status_code == 403
        assert c.post("/v1/lint", json={"template": "Hello.", "domain": "orders"}).status_code == 403
        assert [d["domain"] for d in c.get("/v1/grammars").json()["domains"]] == ["account"]


def test_each_key_reaches_its_own_policy(served):
    claim = {"key": "name", "type": "string", "entity": "customer", "entity_id": "cus_1042", "field": "name"}
    payload = {"answer_template": "{name}", "claims": [{**claim, "value": "Nobody Atall"}]}
    with served.client("crm") as c:
        r = c.post("/v1/check", params={"policy": "customers"}, json=payload)
    assert r.status_code == 200
    body = r.json()
    assert body["action"] == "regenerate_from_facts" and body["contradicted"] == ["name"]


def test_check_runs_without_the_prose_stages(served):
    p = copy.deepcopy(demo.payloads()["answer"])
    p["answer_template"] += " It was much quicker than usual."
    with served.client("shop", **{"X-Guard-Principal": demo.PRINCIPAL}) as c:
        checked = c.post("/v1/check", params={"policy": "orders", **NOW}, json=p).json()
        gated = c.post("/v1/run", params={"policy": "orders", **NOW}, json=p).json()
    assert checked["action"] == "answer"
    assert gated["action"] == "refuse" and "S201" in {f["code"] for f in gated["findings"]}


def test_readyz_pings_every_database(served):
    with served.client(None) as c:
        r = c.get("/readyz")
        assert r.status_code == 200
        assert r.json()["checks"] == {"db:orders": True, "db:customers": True, "grammars": True, "model": True}
        assert c.get("/healthz").json()["status"] == "ok"


def test_metrics_count_decisions_and_requests(served):
    run(served, demo.payloads()["answer"])
    with served.client(None) as c:
        text = c.get("/metrics").text
    assert 'guard_decisions_total{action="answer"}' in text
    assert 'guard_http_requests_total{route="/v1/run",status="200"}' in text

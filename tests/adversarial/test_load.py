"""Load: 8 threads x 5,000 payloads through one Guard on PostgreSQL.

Every decision must equal the sequential run's decision for the same payload
(request ids aside), no claim may come back unavailable (the pool was never
exhausted: a pool timeout is reported as unavailable), traced memory must not
grow between the first and the last thousand payloads, and the JSON Lines log
must hold exactly one whole line per claim result and per decision.

Figures (wall time, decisions/s, peak RSS, traced growth) are printed; run
with ``-s`` to see them.
"""

from __future__ import annotations

import json
import random
import resource
import threading
import time
import tracemalloc
from collections import Counter
from typing import Any

import pytest

from guard import demo
from guard.observe.events import EventLog
from guard.pipeline import Guard
from guard.records.checker import Status
from tests.conftest import backend_url

from .conftest import worker

THREADS, PER_THREAD, POOL = 8, 5000, 1000
GATE = {"domains": {"orders": {"stages": {"format": "enforce", "shape": "off", "freetext": "off", "ratio": "off"}}}}
"""Only the format stage: shapes and ratios cost more than the lookup and are not what this test loads."""
TEMPLATES = {
    "shipped_at": ("date", "Your order shipped on {x}."),
    "estimated_delivery": ("date", "Your order is expected to arrive on {x}."),
    "total_minor": ("money", "Your order total is {x}."),
    "status": ("enum", "Your order is {x}."),
    "line_count": ("integer", "Your order contains {x} items."),
}
"""One claim per payload: tracemalloc roughly doubles the cost of every allocation, and the run must stay
within a couple of minutes on two cores."""
MAX_TRACED_GROWTH = 4 * 1024 * 1024


def claim_value(field: str, order: dict[str, Any], wrong: bool) -> Any:
    v = order[field]
    if v is None:
        return "2026-07-01"
    if field in ("shipped_at", "estimated_delivery"):
        return "2001-01-01" if wrong else v.isoformat()[:10]
    if field == "total_minor":
        return f"£{(v + (100 if wrong else 0)) / 100:,.2f}"
    if field == "line_count":
        return v + 1 if wrong else v
    return "cancelled" if wrong and v != "cancelled" else v


def payload_pool(n: int) -> list[tuple[dict[str, Any], Any]]:
    """Distinct (payload, principal) pairs with every outcome: answers, refusals, regenerations."""
    customers, orders = demo.rows(3000, 1000)
    rng = random.Random(11)
    pool = []
    for _ in range(n):
        o = rng.choice(orders)
        field = rng.choice(sorted(TEMPLATES))
        ctype, template = TEMPLATES[field]
        oid = o["id"] if rng.random() < 0.95 else "ord_00000"
        claims = [
            {
                "key": "x",
                "type": ctype,
                "entity": "order",
                "entity_id": oid,
                "field": field,
                "value": claim_value(field, o, rng.random() < 0.3),
            }
        ]
        r = rng.random()
        principal = o["customer_id"] if r < 0.9 else (None if r < 0.95 else "cus_1000")
        pool.append(({"answer_template": template, "claims": claims}, principal))
    return pool


def comparable(d) -> str:
    out = d.to_dict()
    out.pop("request_id")
    return json.dumps(out, sort_keys=True, default=str)


@pytest.fixture(scope="module")
def load_url(tmp_path_factory):
    url = backend_url("postgresql", tmp_path_factory, worker(), "load")
    demo.build(url, n_orders=3000, n_customers=1000).dispose()
    return url


@pytest.mark.backend("postgresql")
def test_eight_threads_give_the_sequential_decisions(load_url, tmp_path):
    pool = payload_pool(POOL)
    reference = Guard(demo.policy(), load_url, domain="orders", config=GATE)
    expected = [comparable(reference.run(p, principal=who, now=demo.NOW)) for p, who in pool]
    reference.close()
    actions = Counter(json.loads(e)["action"] for e in expected)
    assert set(actions) == {"answer", "refuse", "regenerate_from_facts"}, actions

    log_path = tmp_path / "load.jsonl"
    gate = Guard(demo.policy(), load_url, domain="orders", config=GATE, log=EventLog(log_path, max_bytes=0))
    total = THREADS * PER_THREAD
    lock = threading.Lock()
    done = [0]
    traced: dict[str, int] = {}
    mismatches: list[tuple[str, str, str]] = []
    unavailable: list[str] = []
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            for j in range(PER_THREAD):
                idx = (t * 7919 + j * 31) % POOL
                payload, who = pool[idx]
                rid = f"t{t}-{j}"
                d = gate.run(payload, principal=who, now=demo.NOW, request_id=rid)
                if any(r.status is Status.UNAVAILABLE for r in d.results):
                    unavailable.append(rid)
                got = comparable(d)
                if got != expected[idx] and len(mismatches) < 5:
                    mismatches.append((rid, got, expected[idx]))
                with lock:
                    done[0] += 1
                    if done[0] == 1000:
                        traced["first"] = tracemalloc.get_traced_memory()[0]
                    elif done[0] == total - 1000:
                        traced["last"] = tracemalloc.get_traced_memory()[0]
        except BaseException as exc:  # noqa: BLE001 - reported below, with the thread that raised it
            errors.append(exc)

    tracemalloc.start()
    t0 = time.perf_counter()
    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    elapsed = time.perf_counter() - t0
    tracemalloc.stop()
    gate.close()
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    growth = traced["last"] - traced["first"]
    print(
        f"\nload: {total} payloads, {THREADS} threads, {elapsed:.1f} s, {total / elapsed:.0f} decisions/s, "
        f"peak RSS {peak_rss_mb:.0f} MB, traced growth first->last thousand {growth / 1024:.0f} KiB"
    )
    assert not errors, errors[:3]
    assert done[0] == total
    assert not unavailable, f"{len(unavailable)} decisions had unavailable claims (pool exhausted?)"
    assert not mismatches, mismatches[0]
    assert gate.store.engine.pool.checkedout() == 0
    assert growth < MAX_TRACED_GROWTH, f"traced memory grew by {growth} bytes"

    by_request: dict[str, dict[str, int]] = {}
    lines = 0
    with open(log_path, "rb") as fh:
        for raw in fh:
            lines += 1
            event = json.loads(raw)  # a torn or interleaved line would not parse
            counts = by_request.setdefault(event["request_id"], {"claim": 0, "decision": 0, "n_claims": -1})
            counts[event["event"]] += 1
            if event["event"] == "decision":
                counts["n_claims"] = event["n_claims"]
    assert set(by_request) == {f"t{t}-{j}" for t in range(THREADS) for j in range(PER_THREAD)}
    assert all(c["decision"] == 1 and c["claim"] == c["n_claims"] == 1 for c in by_request.values())
    n_claim_lines = sum(c["claim"] for c in by_request.values())
    assert lines == total + n_claim_lines

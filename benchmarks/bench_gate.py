"""End-to-end gate throughput, each stage's share of the time, and the cost of logging plus metrics.

Payloads of 3 sentences and 5 claims against the demo SQLite system of record
(100k orders). Stages are timed separately on the same payload in the same run;
the overhead ratio compares ``Guard.run`` with an EventLog and Prometheus
metrics against the same gate without them.

    .venv/bin/python benchmarks/bench_gate.py [--rows 100000] [--seconds 2]
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from _common import options, rate
from guard import demo
from guard.records.checker import check
from guard.decision import decide
from guard.observe.events import EventLog
from guard.pipeline import Guard
from guard.linting import LintContext
from guard.observe.metrics import Metrics
from guard.payload import load_payload

TEMPLATE = ("Your order {order_id} shipped on {ship_date} and is expected to arrive on {eta}. "
            "It contains {item_count} items. Your order total is {total}.")


def payload() -> dict:
    def c(key, type_, field, value):
        return {"key": key, "type": type_, "entity": "order", "entity_id": "ord_88431", "field": field,
                "value": value}
    return {"answer_template": TEMPLATE, "claims": [
        c("order_id", "identifier", "id", "ord_88431"), c("ship_date", "date", "shipped_at", "2026-07-30"),
        c("eta", "date", "estimated_delivery", "2026-08-03"), c("item_count", "integer", "line_count", 3),
        c("total", "money", "total_minor", "£1,299.00")]}


def main() -> None:
    args = options(__doc__)
    tmp = Path(tempfile.mkdtemp())
    url = f"sqlite:///{tmp / 'records.db'}"
    demo.build(url, n_orders=args.rows)
    policy = demo.policy()
    p = payload()
    parsed = load_payload(p)
    bare = Guard(policy, url, domain="orders")
    first = bare.run(p, principal=demo.PRINCIPAL, now=demo.NOW)
    assert first.action.value == "answer", first.to_dict()
    logged = Guard(policy, url, domain="orders", log=EventLog(tmp / "guard.jsonl"), metrics=Metrics())

    def run_bare():
        bare.run(p, principal=demo.PRINCIPAL, now=demo.NOW)

    def run_logged():
        logged.run(p, principal=demo.PRINCIPAL, now=demo.NOW)

    # interleave short bursts so a change in machine load hits both sides alike
    bare_rates, logged_rates = [], []
    for _ in range(10):
        bare_rates.append(rate(run_bare, args.seconds / 10))
        logged_rates.append(rate(run_logged, args.seconds / 10))
    total, with_log = sorted(bare_rates)[5], sorted(logged_rates)[5]
    types = {c.key: c.type.value for c in parsed.claims}
    shares: dict[str, float] = {}
    # stages read what earlier ones left in the context (the slots), so time prefixes and take differences
    previous = 0.0
    for k, (name, _) in enumerate(bare.stages, 1):
        def prefix(k=k):
            ctx = LintContext(parsed.answer_template, "orders", types, None, payload=parsed)
            for _, stage in bare.stages[:k]:
                ctx.findings.extend(stage(ctx))
        t = 1 / rate(prefix, args.seconds / 2)
        shares[f"lint:{name}"] = max(t - previous, 0.0)
        previous = t
    shares["parse"] = 1 / rate(lambda: load_payload(p), args.seconds / 2)
    shares["check"] = 1 / rate(lambda: check(parsed, policy, bare.store, principal=demo.PRINCIPAL, now=demo.NOW),
                               args.seconds / 2)
    results = check(parsed, policy, bare.store, principal=demo.PRINCIPAL, now=demo.NOW)
    shares["decide+render"] = 1 / rate(lambda: decide(parsed, results, policy), args.seconds / 2)
    whole = 1 / total
    print(f"payload: 3 sentences, {len(parsed.claims)} claims, {args.rows} orders in SQLite")
    print(f"guard.run:                 {total:8.0f} payloads/s ({whole * 1000:.3f} ms)")
    print(f"guard.run + log + metrics: {with_log:8.0f} payloads/s (overhead ratio {total / with_log:.2f}x)")
    print("stage shares (each timed alone, as a share of one guard.run):")
    for k, v in shares.items():
        print(f"  {k:<16} {v * 1000:8.3f} ms  {v / whole:6.1%}")
    print(f"  {'sum of stages':<16} {sum(shares.values()) * 1000:8.3f} ms  {sum(shares.values()) / whole:6.1%}")


if __name__ == "__main__":
    main()

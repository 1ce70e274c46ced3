"""End-to-end gate throughput, each stage's share of the time, the cost of logging plus metrics, and the gate
against ``verify`` alone.

Payloads of 3 sentences and 5 claims against the demo SQLite system of record
(100k orders). Stages are timed separately on the same payload in the same run;
the overhead ratio compares ``Guard.run`` with an EventLog and Prometheus
metrics against the same gate without them. The gate/verify ratio runs 64
payloads with distinct claims (one per order) and one repeated template, in
interleaved rounds: the warm gate serves the template's lint from its cache,
the cold gate (``lint_cache_size=0``) lints every payload.

    .venv/bin/python benchmarks/bench_gate.py [--rows 100000] [--seconds 2]
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import sqlalchemy as sa
from _common import options, paired_ratio, rate, rounds

from guard import demo
from guard.decision import decide
from guard.linting import LintContext
from guard.observe.events import EventLog
from guard.observe.metrics import Metrics
from guard.payload import load_payload
from guard.pipeline import Guard, verify
from guard.records.checker import check

TEMPLATE = (
    "Your order {order_id} shipped on {ship_date} and is expected to arrive on {eta}. "
    "It contains {item_count} items. Your order total is {total}."
)


def payload() -> dict:
    def c(key, type_, field, value):
        return {"key": key, "type": type_, "entity": "order", "entity_id": "ord_88431", "field": field, "value": value}

    return {
        "answer_template": TEMPLATE,
        "claims": [
            c("order_id", "identifier", "id", "ord_88431"),
            c("ship_date", "date", "shipped_at", "2026-07-30"),
            c("eta", "date", "estimated_delivery", "2026-08-03"),
            c("item_count", "integer", "line_count", 3),
            c("total", "money", "total_minor", "£1,299.00"),
        ],
    }


def distinct_payloads(url: str, n: int) -> list[tuple[dict, str]]:
    """``n`` payloads with the bench's template, each on its own order (with its owner as principal)."""
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT id, customer_id, shipped_at, estimated_delivery, line_count, total_minor "
                "FROM orders WHERE shipped_at IS NOT NULL AND estimated_delivery IS NOT NULL "
                "ORDER BY id LIMIT :n"
            ),
            {"n": n},
        ).all()
    engine.dispose()
    out = []
    for oid, customer, shipped, eta, lines, total in rows:

        def c(key, type_, field, value, oid=oid):
            return {"key": key, "type": type_, "entity": "order", "entity_id": oid, "field": field, "value": value}

        out.append(
            (
                {
                    "answer_template": TEMPLATE,
                    "claims": [
                        c("order_id", "identifier", "id", oid),
                        c("ship_date", "date", "shipped_at", str(shipped)[:10]),
                        c("eta", "date", "estimated_delivery", str(eta)[:10]),
                        c("item_count", "integer", "line_count", lines),
                        c("total", "money", "total_minor", total / 100),
                    ],
                },
                customer,
            )
        )
    return out


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
    shares["check"] = 1 / rate(
        lambda: check(parsed, policy, bare.store, principal=demo.PRINCIPAL, now=demo.NOW), args.seconds / 2
    )
    results = check(parsed, policy, bare.store, principal=demo.PRINCIPAL, now=demo.NOW)
    shares["decide+render"] = 1 / rate(lambda: decide(parsed, results, policy), args.seconds / 2)
    whole = 1 / total
    print(f"payload: 3 sentences, {len(parsed.claims)} claims, {args.rows} orders in SQLite")
    print(f"guard.run:                 {total:8.0f} payloads/s ({whole * 1000:.3f} ms)")
    print(
        f"guard.run + log + metrics: {with_log:8.0f} payloads/s (overhead ratio {total / with_log:.2f}x, "
        f"{(1 / with_log - 1 / total) * 1000:.3f} ms per payload)"
    )
    rotation = distinct_payloads(url, 64)
    cold = Guard(policy, url, domain="orders", lint_cache_size=0)
    turn = {"i": 0}

    def contender(fn):
        def call():
            i = turn["i"] = (turn["i"] + 1) % len(rotation)
            payload, principal = rotation[i]
            fn(payload, principal)

        return call

    got = rounds(
        {
            "verify": contender(lambda pl, pr: verify(pl, policy, bare.store, principal=pr, now=demo.NOW)),
            "gate": contender(lambda pl, pr: bare.run(pl, principal=pr, now=demo.NOW)),
            "gate-cold": contender(lambda pl, pr: cold.run(pl, principal=pr, now=demo.NOW)),
        },
        args.seconds * 3,
        10,
    )
    warm_ratio, cold_ratio = paired_ratio(got["verify"], got["gate"]), paired_ratio(got["verify"], got["gate-cold"])
    print(
        f"gate/verify, repeated template, distinct claims: {warm_ratio[0]:.2f}x [{warm_ratio[1]:.2f}-"
        f"{warm_ratio[2]:.2f}] (cache hits {bare.lint_cache.hits}, misses {bare.lint_cache.misses})"
    )
    print(
        f"gate/verify, cold (no lint cache):               {cold_ratio[0]:.2f}x [{cold_ratio[1]:.2f}-"
        f"{cold_ratio[2]:.2f}]"
    )
    print("stage shares (each timed alone, lint stages uncached, as a share of one cached guard.run):")
    for k, v in shares.items():
        print(f"  {k:<16} {v * 1000:8.3f} ms  {v / whole:6.1%}")
    print(f"  {'sum of stages':<16} {sum(shares.values()) * 1000:8.3f} ms  {sum(shares.values()) / whole:6.1%}")


if __name__ == "__main__":
    main()

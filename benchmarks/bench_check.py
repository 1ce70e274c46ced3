"""Payload checks per second: guard vs one-query-per-claim vs raw sqlite3 batched lookups (the floor).

All three run in the same process on the same 100k-row SQLite table and the
same payloads. Prints checks/s and the ratios the issue sets targets for
(at 50 claims: guard >= 5x naive, guard within 2x of the floor).

    .venv/bin/python benchmarks/bench_check.py [--rows 100000] [--seconds 2]
"""

from __future__ import annotations

import random
import sqlite3
import tempfile
import time
from pathlib import Path

import sqlalchemy as sa

from _common import options, rate
from guard import demo
from guard.checker import check
from guard.compare import matches, normalise_stored
from guard.decide import decide
from guard.payload import load_payload
from guard.policy import load_policy
from guard.store import RecordStore


def main() -> None:
    args = options(__doc__)
    path = Path(tempfile.mkdtemp()) / "bench.db"
    url = f"sqlite:///{path}"
    t0 = time.perf_counter()
    demo.build(url, n_orders=args.rows, n_customers=1000)
    print(f"built {args.rows} orders in {time.perf_counter() - t0:.1f}s")
    data = demo.policy().model_dump(mode="json", exclude_none=True)
    del data["entities"]["order"]["scope"]
    policy = load_policy(data)
    store = RecordStore(url, policy)
    fp = policy.entities["order"].fields["line_count"]
    rng = random.Random(1)
    with sqlite3.connect(path) as raw:
        truth = dict(raw.execute("SELECT id, line_count FROM orders"))
    ids = list(truth)

    print(f"{'claims':>6} {'guard/s':>10} {'naive/s':>10} {'floor/s':>10} {'guard/naive':>12} {'floor/guard':>12}")
    for n in (1, 10, 50):
        chosen = rng.sample(ids, n)
        payload = load_payload({
            "answer_template": " ".join(f"{{k{i}}}" for i in range(n)),
            "claims": [{"key": f"k{i}", "type": "integer", "entity": "order", "entity_id": oid, "field": "line_count",
                        "value": truth[oid]} for i, oid in enumerate(chosen)]})

        def guard_check() -> None:
            d = decide(payload, check(payload, policy, store), policy)
            assert d.action.value == "answer"

        table = sa.Table("orders", sa.MetaData(), autoload_with=store.engine)

        def naive() -> None:
            with store.engine.connect() as conn:
                for c in payload.claims:
                    stmt = sa.select(table.c.line_count).where(table.c.id == c.entity_id)
                    stored = conn.execute(stmt).scalar_one()
                    assert matches(c.value, normalise_stored(stored, fp, policy), fp, policy)

        conn = sqlite3.connect(path, check_same_thread=False)
        sql = f"SELECT id, line_count FROM orders WHERE id IN ({','.join('?' * n)})"
        params = [c.entity_id for c in payload.claims]

        def floor() -> None:
            rows = conn.execute(sql, params).fetchall()
            assert len(rows) == n

        g, nv, fl = (rate(f, args.seconds) for f in (guard_check, naive, floor))
        print(f"{n:>6} {g:>10.0f} {nv:>10.0f} {fl:>10.0f} {g / nv:>11.1f}x {fl / g:>11.2f}x")
        conn.close()


if __name__ == "__main__":
    main()

"""Payload checks per second: guard vs one-query-per-claim vs raw sqlite3 batched lookups (the floor).

All three run in the same process on the same 100k-row SQLite table and the
same payloads: a pool of distinct payloads per size (random orders), used in
turn, so that no cache sees one payload over and over. A guard check is
``check`` + ``decide`` (the rendered text and the citations). The floor is
raw ``sqlite3`` running the batched lookup guard runs (the ids, the claimed
column and ``updated_at``, which every citation carries); ``floor-2`` reads
only the id and the claimed column. The last line repeats one payload (the
rows stay hot in SQLite's page cache, the floor's best case). Prints checks/s and the ratios the issue
sets targets for (at 50 claims: guard >= 5x naive, guard within 2x of the floor). The four contenders take
turns in ``--rounds`` rounds (the order reversed every other round). A rate is a contender's best round;
a ratio is the median of the ratios taken within each round, with the lowest and highest in brackets:
this machine's speed drifts by tens of percent over seconds, and a ratio of two best rounds from
different moments carries that drift.

    .venv/bin/python benchmarks/bench_check.py [--rows 100000] [--seconds 2] [--rounds 10]
"""

from __future__ import annotations

import itertools
import random
import sqlite3
import tempfile
import time
from pathlib import Path

import sqlalchemy as sa
from _common import options, paired_ratio, rounds

from guard import demo
from guard.decision import decide
from guard.payload import load_payload
from guard.records.checker import check
from guard.records.policy import load_policy
from guard.records.store import RecordStore
from guard.records.types import matches, normalise_stored

POOL = 64


def main() -> None:
    args = options(__doc__, rounds=10)
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

    print(
        f"{'claims':>6} {'guard/s':>10} {'naive/s':>10} {'floor/s':>10} {'floor-2/s':>10} {'guard/naive':>18} "
        f"{'floor/guard':>20} {'floor-2/guard':>20}"
    )
    table = sa.Table("orders", sa.MetaData(), autoload_with=store.engine)
    conn = sqlite3.connect(path, check_same_thread=False)
    for n, pool in ((1, POOL), (10, POOL), (50, POOL), (50, 1)):
        payloads = []
        for _ in range(pool):
            chosen = rng.sample(ids, n)
            payloads.append(
                load_payload(
                    {
                        "answer_template": " ".join(f"{{k{i}}}" for i in range(n)),
                        "claims": [
                            {
                                "key": f"k{i}",
                                "type": "integer",
                                "entity": "order",
                                "entity_id": oid,
                                "field": "line_count",
                                "value": truth[oid],
                            }
                            for i, oid in enumerate(chosen)
                        ],
                    }
                )
            )
        turn = itertools.cycle(payloads).__next__
        id_lists = [[c.entity_id for c in p.claims] for p in payloads]
        next_ids = itertools.cycle(id_lists).__next__

        def guard_check() -> None:
            payload = turn()
            d = decide(payload, check(payload, policy, store), policy)
            assert d.action.value == "answer" and d.text and len(d.citations) == n

        def naive() -> None:
            payload = turn()
            with store.engine.connect() as c:
                for claim in payload.claims:
                    stmt = sa.select(table.c.line_count).where(table.c.id == claim.entity_id)
                    stored = c.execute(stmt).scalar_one()
                    assert matches(claim.value, normalise_stored(stored, fp, policy), fp, policy)

        marks = ",".join("?" * n)
        sql = f"SELECT id, line_count, updated_at FROM orders WHERE id IN ({marks})"
        sql2 = f"SELECT id, line_count FROM orders WHERE id IN ({marks})"

        def floor() -> None:
            assert len(conn.execute(sql, next_ids()).fetchall()) == n

        def floor2() -> None:
            assert len(conn.execute(sql2, next_ids()).fetchall()) == n

        got = rounds(
            {"naive": naive, "guard": guard_check, "floor": floor, "floor2": floor2}, args.seconds, args.rounds
        )
        g, nv, fl, fl2 = (max(got[k]) for k in ("guard", "naive", "floor", "floor2"))
        label = f"{n}" if pool > 1 else f"{n}*"
        print(
            f"{label:>6} {g:>10.0f} {nv:>10.0f} {fl:>10.0f} {fl2:>10.0f} "
            f"{_ratio(got['guard'], got['naive'], 1):>18} {_ratio(got['floor'], got['guard'], 2):>20} "
            f"{_ratio(got['floor2'], got['guard'], 2):>20}"
        )
    conn.close()
    print("* one payload checked over and over: its rows stay in SQLite's page cache, the floor's best case")


def _ratio(num: list[float], den: list[float], digits: int) -> str:
    mid, lo, hi = paired_ratio(num, den)
    return f"{mid:.{digits}f}x [{lo:.{digits}f}-{hi:.{digits}f}]"


if __name__ == "__main__":
    main()

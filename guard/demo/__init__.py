"""A seeded system of record (orders and customers) and example payloads, for the demo and the tests.

The same builder fills SQLite, PostgreSQL or MariaDB, so the integration
suite runs one scenario against all three.
"""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from importlib import resources
from typing import Any

import sqlalchemy as sa

from guard.records.policy import Policy, load_policy

NOW = datetime(2026, 8, 1, 9, 0, tzinfo=UTC)
"""The demo's clock: data are generated relative to it, so staleness is reproducible."""

STATUSES = ["pending", "shipped", "delivered", "cancelled"]
TIERS = ["standard", "silver", "gold"]
FIRST = ["Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "Ken", "Margaret", "Tim", "Radia", "John"]
LAST = [
    "Lovelace",
    "Hopper",
    "Turing",
    "Dijkstra",
    "Liskov",
    "Knuth",
    "Allen",
    "Thompson",
    "Hamilton",
    "Berners-Lee",
    "Perlman",
    "Backus",
]


def policy() -> Policy:
    return load_policy((resources.files("guard.demo") / "policy.yaml").read_text(encoding="utf-8"))


def schema(md: sa.MetaData | None = None) -> sa.MetaData:
    md = md or sa.MetaData()
    sa.Table(
        "customers",
        md,
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("tier", sa.String(20), nullable=False),
    )
    sa.Table(
        "orders",
        md,
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("customer_id", sa.String(32), nullable=False, index=True),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("shipped_at", sa.DateTime(), nullable=True),
        sa.Column("estimated_delivery", sa.Date(), nullable=True),
        sa.Column("line_count", sa.Integer(), nullable=False),
        sa.Column("total_minor", sa.BigInteger(), nullable=False),
        sa.Column("weight_kg", sa.Numeric(8, 3), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
    )
    return md


def order_id(i: int) -> str:
    return f"ord_{88000 + i}"


def customer_id(i: int) -> str:
    return f"cus_{1000 + i}"


def rows(
    n_orders: int = 3000, n_customers: int = 1000, seed: int = 7
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rng = random.Random(seed)
    customers = [
        {"id": customer_id(i), "name": f"{rng.choice(FIRST)} {rng.choice(LAST)}", "tier": rng.choice(TIERS)}
        for i in range(n_customers)
    ]
    orders: list[dict[str, Any]] = []
    for i in range(n_orders):
        status = rng.choices(STATUSES, weights=[2, 5, 6, 1])[0]
        shipped = (
            (NOW - timedelta(days=rng.randint(1, 20), minutes=rng.randint(0, 1439))).replace(tzinfo=None)
            if status in ("shipped", "delivered")
            else None
        )
        eta = (shipped + timedelta(days=rng.randint(1, 5))).date() if shipped else None
        # a third of the orders were last touched long ago, so their delivery estimate is stale
        age = timedelta(hours=rng.randint(1, 40)) if rng.random() < 0.66 else timedelta(days=rng.randint(3, 40))
        orders.append(
            {
                "id": order_id(i),
                "customer_id": customer_id(rng.randrange(n_customers)),
                "status": status,
                "shipped_at": shipped,
                "estimated_delivery": eta,
                "line_count": rng.randint(1, 9),
                "total_minor": rng.randint(299, 250000),
                "weight_kg": Decimal(rng.randint(100, 25000)) / 1000,
                "updated_at": (NOW - age).replace(tzinfo=None),
            }
        )
    # ord_88431 is the scenario of the README: fresh, shipped, known values
    fixed: dict[str, Any] = {
        "id": "ord_88431",
        "customer_id": "cus_1042",
        "status": "shipped",
        "shipped_at": datetime(2026, 7, 29, 23, 40),
        "estimated_delivery": date(2026, 8, 3),
        "line_count": 3,
        "total_minor": 129900,
        "weight_kg": Decimal("4.2"),
        "updated_at": (NOW - timedelta(hours=3)).replace(tzinfo=None),
    }
    stale = dict(fixed, id="ord_88432", updated_at=(NOW - timedelta(days=5)).replace(tzinfo=None))
    for o in (fixed, stale):
        idx = int(o["id"][4:]) - 88000
        if idx < len(orders):
            orders[idx] = o
        else:
            orders.append(o)
    return customers, orders


def build(db: str | sa.Engine, *, n_orders: int = 3000, n_customers: int = 1000, seed: int = 7) -> sa.Engine:
    """Create (or replace) the demo tables in ``db`` and fill them; returns the engine."""
    engine = db if isinstance(db, sa.Engine) else sa.create_engine(db)
    md = schema()
    customers, orders = rows(n_orders, n_customers, seed)
    md.drop_all(engine)
    md.create_all(engine)
    with engine.begin() as conn:
        for table, data in (("customers", customers), ("orders", orders)):
            for k in range(0, len(data), 2000):
                conn.execute(md.tables[table].insert(), data[k : k + 2000])
    return engine


def payloads() -> dict[str, dict[str, Any]]:
    """Three payloads about ord_88431 (customer cus_1042): one true, one stale, one wrong."""

    def claim(key: str, type_: str, field: str, value: Any, entity_id: str = "ord_88431") -> dict[str, Any]:
        return {"key": key, "type": type_, "entity": "order", "entity_id": entity_id, "field": field, "value": value}

    return {
        "answer": {
            "answer_template": "Your order {order_id} shipped on {ship_date} and is expected to arrive on {eta}. "
            "It contains {item_count} items.",
            "claims": [
                claim("order_id", "identifier", "id", "ord_88431"),
                claim("ship_date", "date", "shipped_at", "2026-07-30"),
                claim("eta", "date", "estimated_delivery", "2026-08-03"),
                claim("item_count", "integer", "line_count", 3),
            ],
        },
        "refuse": {
            "answer_template": "Your order {order_id} is expected to arrive on {eta}.",
            "claims": [
                claim("order_id", "identifier", "id", "ord_88432", "ord_88432"),
                claim("eta", "date", "estimated_delivery", "2026-08-03", "ord_88432"),
            ],
        },
        "regenerate": {
            "answer_template": "The total for order {order_id} is {total}. It contains {item_count} items.",
            "claims": [
                claim("order_id", "identifier", "id", "ord_88431"),
                claim("total", "money", "total_minor", "£1,199.00"),
                claim("item_count", "integer", "line_count", 3),
            ],
        },
    }


PRINCIPAL = "cus_1042"

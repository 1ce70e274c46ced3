"""Fixtures for the adversarial suite: an isolated demo database with a column the policy does not name.

Every database here is this suite's own (``backend_url`` with an ``adversarial``
tag), so a test that tries to break it cannot disturb the other suites.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
import sqlalchemy as sa

from guard import demo
from guard.payload import ClaimType
from guard.records.formatting import format_value
from guard.records.policy import Policy
from guard.records.store import RecordStore
from guard.records.types import normalise_stored
from tests.conftest import backend_url

SECRET = "hash_7f3a_do_not_show"
"""The value of a column that exists in the database but not in the policy."""


def worker() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


@dataclass
class Records:
    """A demo database plus an independent copy of its rows, read once with plain SQL (the oracle)."""

    url: str
    engine: sa.Engine
    policy: Policy
    store: RecordStore
    rows: dict[str, dict[str, dict[str, Any]]]
    _truth: dict[Any, list[dict[str, Any]]] = field(default_factory=dict)

    def row(self, entity: str, entity_id: Any, principal: Any = None) -> dict[str, Any] | None:
        ent = self.policy.entities[entity]
        if isinstance(entity_id, bool):
            return None
        r = self.rows[ent.table].get(str(entity_id))
        if r is not None and ent.scope and str(r[ent.scope]) != str(principal):
            return None
        return r

    def shown(self, entity: str, entity_id: Any, field: str, principal: Any = None) -> str | None:
        """How the database's value of a field is rendered, or None when there is no such value."""
        r = self.row(entity, entity_id, principal)
        fp = self.policy.entities[entity].fields[field]
        if r is None or r[self.policy.entities[entity].column(field)] is None:
            return None
        return format_value(
            normalise_stored(r[self.policy.entities[entity].column(field)], fp, self.policy), fp, self.policy
        )

    def stale(self, c: dict[str, Any]) -> bool:
        """Whether the claim's row is older than its field's freshness budget at ``demo.NOW``."""
        ent = self.policy.entities[c["entity"]]
        fp = ent.fields[c["field"]]
        if fp.freshness is None or not ent.updated_at:
            return False
        row = self.rows[ent.table][str(c["entity_id"])]
        updated = datetime.fromisoformat(str(row[ent.updated_at])).replace(tzinfo=UTC)
        return demo.NOW - updated > fp.freshness

    def true_claims(self, principal: Any) -> list[dict[str, Any]]:
        """Claims whose values match the database (some rows are stale), spelled the way a model might write them."""
        if principal not in self._truth:
            self._truth[principal] = self._true_claims(principal)
        return self._truth[principal]

    def _true_claims(self, principal: Any) -> list[dict[str, Any]]:
        out = []
        for entity, ent in self.policy.entities.items():
            for rid, r in sorted(self.rows[ent.table].items()):
                if ent.scope and str(r[ent.scope]) != str(principal):
                    continue
                for fname, fp in ent.fields.items():
                    raw = r[ent.column(fname)]
                    if raw is None:
                        continue
                    actual = normalise_stored(raw, fp, self.policy)
                    if fp.type is ClaimType.MONEY:
                        value: Any = str(Decimal(actual).scaleb(-fp.exponent))
                    elif fp.type is ClaimType.DATE:
                        value = actual.isoformat()
                    elif fp.type is ClaimType.DECIMAL:
                        value = str(actual)
                    else:
                        value = actual
                    out.append(
                        {"type": fp.type.value, "entity": entity, "entity_id": rid, "field": fname, "value": value}
                    )
        return out


def build_records(url: str, n_orders: int = 300, n_customers: int = 100) -> Records:
    engine = demo.build(url, n_orders=n_orders, n_customers=n_customers)
    with engine.begin() as conn:
        conn.execute(sa.text("ALTER TABLE customers ADD COLUMN password_hash VARCHAR(64)"))
        conn.execute(sa.text("UPDATE customers SET password_hash = :s"), {"s": SECRET})
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    with engine.connect() as conn:
        for table in ("orders", "customers"):
            result = conn.execute(sa.text(f"SELECT * FROM {table}"))
            rows[table] = {str(r["id"]): dict(r) for r in result.mappings()}
    policy = demo.policy()
    return Records(url, engine, policy, RecordStore(url, policy), rows)


@pytest.fixture(scope="session")
def records(tmp_path_factory: pytest.TempPathFactory):
    """The adversarial suite's own SQLite demo database."""
    rec = build_records(backend_url("sqlite", tmp_path_factory, worker(), "adversarial"))
    yield rec
    rec.store.close()
    rec.engine.dispose()

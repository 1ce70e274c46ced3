"""End to end on a probe set of payloads: the gate with the shipped config, domain orders, on the demo's records.

Each line of the set is ``{"label": "clean"|"unverified", "answer_template": ..., "claims": [...]}`` with claims
that name an entity, an id and a field but no value: the value is read from the demo database and written in the
claim the way a model would (ISO dates, money with its currency, plain numbers), so every claim is true and what
is measured is the lint stages (shapes, free text, slot ratio). The orders a set names are made fresh (their
``updated_at`` set an hour before the clock), so a stale delivery estimate does not count as a refusal. The
principal is the customer of the order each payload is about. This is how issue 15 measures its hidden set of
orders templates ("answers 0 of 60 clean templates with true claims").

    .venv/bin/python benchmarks/probe_gate.py corpora/templates/probes/orders_gate_tuning.jsonl [-q]

``-q`` prints the totals only (the way to read a blind set), with how many refused clean payloads carry each
finding code and how many have a claim not confirmed (counts, no wording); otherwise also each clean payload
refused and each unverified one answered, with the findings' codes.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import sqlalchemy as sa  # noqa: E402

from guard import demo  # noqa: E402
from guard.pipeline import Guard  # noqa: E402
from guard.records.store import RecordStore  # noqa: E402

TABLES = {"order": "orders", "customer": "customers"}


def true_value(row: dict[str, Any], field: str, type_: str) -> Any:
    """The value as a model would write it: a stored instant's date is the date in the policy's timezone."""
    v = row[field]
    if v is None:
        return None
    if type_ == "money":
        return f"£{Decimal(v) / 100:,.2f}"
    if type_ == "date" and isinstance(v, datetime):
        return v.replace(tzinfo=UTC).astimezone(ZoneInfo(demo.policy().timezone)).date().isoformat()
    if type_ == "date":
        return v.isoformat()
    if type_ == "timestamp":
        return v.isoformat() if isinstance(v, datetime | date) else v
    if type_ == "decimal":
        return str(v)
    return v


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("-q", "--quiet", action="store_true", help="the totals only")
    args = ap.parse_args()
    items = [json.loads(line) for line in args.file.read_text(encoding="utf-8").splitlines() if line.strip()]
    with tempfile.TemporaryDirectory(prefix="guard-probe-gate-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'records.db'}"
        engine = demo.build(url)
        md = demo.schema()
        named = {c["entity_id"] for it in items for c in it["claims"] if c["entity"] == "order"}
        fresh = (demo.NOW - timedelta(hours=1)).replace(tzinfo=None)
        with engine.begin() as conn:
            conn.execute(
                md.tables["orders"].update().where(md.tables["orders"].c.id.in_(named)).values(updated_at=fresh)
            )
            rows = {
                (entity, r["id"]): dict(r)
                for entity, table in TABLES.items()
                for r in conn.execute(sa.select(md.tables[table])).mappings()
            }
        engine.dispose()
        tally: Counter[tuple[str, bool]] = Counter()
        causes: Counter[str] = Counter()
        with RecordStore(url, demo.policy()) as store, Guard(demo.policy(), store, domain="orders") as gate:
            for it in items:
                claims = [
                    dict(c, value=true_value(rows[(c["entity"], c["entity_id"])], c["field"], c["type"]))
                    for c in it["claims"]
                ]
                order = next((c["entity_id"] for c in claims if c["entity"] == "order"), None)
                principal = rows[("order", order)]["customer_id"] if order else None
                d = gate.run(
                    {"answer_template": it["answer_template"], "claims": claims}, principal=principal, now=demo.NOW
                )
                answered = d.action.value == "answer"
                tally[(it["label"], answered)] += 1
                wrong = answered != (it["label"] == "clean")
                if wrong and not answered:
                    codes_here = {f.code for f in d.findings}
                    causes.update(codes_here)
                    if codes_here and all(c.startswith("R4") for c in codes_here):
                        causes["slot ratio alone"] += 1
                    if any(r.status.value != "confirmed" for r in d.results):
                        causes["claim not confirmed"] += 1
                if wrong and not args.quiet:
                    codes = sorted({f.code for f in d.findings}) or [d.action.value]
                    unverified = [r.key for r in d.results if r.status.value != "confirmed"]
                    print(f"{'ANSWERED' if answered else 'REFUSED'} {it['label']}: {it['answer_template']}")
                    print(f"    {' '.join(codes)}{'  not confirmed: ' + ', '.join(unverified) if unverified else ''}")
    clean = tally[("clean", True)] + tally[("clean", False)]
    unverified = tally[("unverified", True)] + tally[("unverified", False)]
    print(
        f"{args.file.name}: clean answered {tally[('clean', True)]}/{clean}, "
        f"unverified answered {tally[('unverified', True)]}/{unverified}"
    )
    if causes:
        print(
            "  refused clean, by cause (a payload counts once per code): "
            + ", ".join(f"{c} {n}" for c, n in causes.most_common())
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""End to end on the template corpus: the gate with the shipped config (every lint stage as shipped, then the
check against real records) on each domain's templates, every claim true in the records.

A template with no claim is refused by design ("no facts I could verify"), so the records measured are those with
at least one claim (slot facts, label lines, states with their witness); ``--compose`` also wraps each of them
in the domain's claimless sentences of the same split (a greeting or courtesy before, a contact, instruction or
procedure line after), as real templates are written. For each record of ``corpora/templates/<domain>.jsonl`` it
builds the row its claims are about in a SQLite
database (one row per record and entity, values that make every claim true, the witness of a prose state set
to its value), a policy covering every field the corpus names, and runs ``Guard.run``. Clean templates should
be answered; unverified ones never. Prints answered/total per kind and the findings that refused clean ones.

    .venv/bin/python benchmarks/eval_gate_templates.py [--domain orders] [--split test] [-v]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sqlalchemy as sa  # noqa: E402

from guard.pipeline import Guard  # noqa: E402
from guard.records.policy import load_policy  # noqa: E402
from guard.records.store import RecordStore  # noqa: E402
from guard.shapes.coverage import read_records  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "corpora" / "templates"
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
COLUMN = {
    "identifier": sa.String(64),
    "string": sa.String(200),
    "enum": sa.String(64),
    "integer": sa.Integer(),
    "money": sa.Integer(),
    "decimal": sa.Numeric(12, 3),
    "date": sa.Date(),
    "timestamp": sa.DateTime(),
    "boolean": sa.Boolean(),
}
STORED = {
    "string": "Alex Morgan",
    "integer": 3,
    "money": 1999,
    "decimal": Decimal("1.5"),
    "date": date(2026, 5, 1),
    "timestamp": datetime(2026, 5, 1, 9, 30),
    "boolean": True,
}
CLAIMED = {
    "string": "Alex Morgan",
    "integer": 3,
    "money": "19.99",
    "decimal": "1.5",
    "date": "2026-05-01",
    "timestamp": "2026-05-01T09:30:00Z",
    "boolean": True,
}


def field_types(records: list[dict]) -> dict[str, str]:
    types: dict[str, str] = {}
    for r in records:
        for s in (r.get("slots") or {}).values():
            types.setdefault(s["field"], s["type"])
    for r in records:
        w = r.get("witness")
        if w and w["field"] not in types:
            types[w["field"]] = "enum" if w.get("value") else "date"
    return types


def build(records: list[dict], types: dict[str, str], url: str) -> Any:
    entities: dict[str, dict[str, str]] = {}
    for f, t in types.items():
        e, _, name = f.partition(".")
        entities.setdefault(e, {})[name] = t
    policy = {"timezone": "UTC", "locale": "en_GB", "entities": {}}
    md = sa.MetaData()
    tables = {}
    for e, fields in entities.items():
        cols = [sa.Column("id", sa.String(64), primary_key=True)]
        cols += [sa.Column(n, COLUMN[t]) for n, t in fields.items() if n != "id"]
        tables[e] = sa.Table(f"t_{e}", md, *cols)
        spec = {n: {"type": t, **({"currency": "GBP"} if t == "money" else {})} for n, t in fields.items()}
        spec.setdefault("id", {"type": "identifier"})
        policy["entities"][e] = {"table": f"t_{e}", "id": "id", "fields": spec}
    engine = sa.create_engine(url)
    md.create_all(engine)
    rows: dict[str, list[dict]] = {e: [] for e in entities}
    for i, r in enumerate(records):
        witness = r.get("witness") or {}
        for e, fields in entities.items():
            row: dict[str, Any] = {"id": f"r{i}"}
            for n, t in fields.items():
                if n == "id":
                    continue
                if f"{e}.{n}" == witness.get("field") and witness.get("value"):
                    row[n] = witness["value"]
                elif t in ("identifier", "enum"):
                    row[n] = f"{n}-{i}" if t == "identifier" else "active"
                else:
                    row[n] = STORED[t]
            rows[e].append(row)
    with engine.begin() as conn:
        for e, data in rows.items():
            conn.execute(tables[e].insert(), data)
    engine.dispose()
    return load_policy(policy)


def claims(i: int, r: dict, types: dict[str, str]) -> list[dict]:
    out = []
    for key, s in (r.get("slots") or {}).items():
        e, _, n = s["field"].partition(".")
        t = s["type"]
        if n == "id":
            value: Any = f"r{i}"
        elif types[s["field"]] == "identifier":
            value = f"{n}-{i}"
        elif t == "enum":
            w = r.get("witness") or {}
            value = w["value"] if w.get("field") == s["field"] and w.get("value") else "active"
        else:
            value = CLAIMED[t]
        out.append({"key": key, "type": t, "entity": e, "entity_id": f"r{i}", "field": n, "value": value})
    w = r.get("witness")
    if w:
        e, _, n = w["field"].partition(".")
        t = types[w["field"]]
        value = w.get("value") or (STORED[t].isoformat() if t == "date" else CLAIMED.get(t, "active"))
        out.append({"key": "witness", "type": t, "entity": e, "entity_id": f"r{i}", "field": n, "value": value})
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--domain", default="orders")
    ap.add_argument("--split", default="test")
    ap.add_argument("--compose", action="store_true", help="wrap each fact in claimless corpus sentences")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    splits = args.split.split(",")
    records = list(read_records([CORPUS / f"{args.domain}.jsonl"], splits))
    records += [r for r in read_records([CORPUS / "challenge_unverified.jsonl"], splits) if r["domain"] == args.domain]
    types = field_types(records)
    claimless = [r for r in records if r["kind"] != "unverified" and not claims(0, r, types)]
    before = [r["text"] for r in claimless if r["kind"] in ("courtesy",)] or [""]
    after = [r["text"] for r in claimless if r["kind"] in ("contact", "instruction", "procedure")] or [""]
    records = [r for r in records if claims(0, r, types)]
    if args.compose:
        records = [
            {**r, "text": "\n".join(t for t in (before[i % len(before)], r["text"], after[i % len(after)]) if t)}
            for i, r in enumerate(records)
        ]
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/records.db"
        policy = build(records, types, url)
        store = RecordStore(url, policy)
        answered: Counter[str] = Counter()
        total: Counter[str] = Counter()
        why: Counter[str] = Counter()
        misses = []
        with Guard(policy, store, domain=args.domain) as gate:
            for i, r in enumerate(records):
                d = gate.run({"answer_template": r["text"], "claims": claims(i, r, types)}, now=NOW)
                kind = "unverified" if r["kind"] == "unverified" else "clean"
                total[kind] += 1
                ok = d.action.value == "answer"
                answered[kind] += ok
                if ok == (kind == "unverified"):
                    codes = sorted({f.code for f in d.findings}) or [d.action.value]
                    why.update(codes)
                    misses.append((kind, r["text"], codes, d.message))
        store.close()
    for kind in ("clean", "unverified"):
        n = total[kind]
        print(
            f"{args.domain} {args.split} {'composed' if args.compose else 'alone'} {kind:>10}: "
            f"{answered[kind]}/{n} answered" + (f" ({answered[kind] / n:.0%})" if n else "")
        )
    print("refusals of clean templates by code:", dict(why.most_common()))
    if args.verbose:
        for kind, text, codes, message in misses:
            print(f"  {kind:10} {codes} {text}")
            if codes in (["refuse"], ["regenerate_from_facts"]):
                print(f"             {message}")


if __name__ == "__main__":
    main()

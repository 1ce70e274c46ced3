"""Accepted lines of a probe set (one template per line) by a domain's sentence library, slots checked by type only.

A slot's type comes from the corpus (`corpora/templates/<domain>.jsonl` and `dev2/`) when a record names the slot,
else from a rule on its name (dates, money, ids, counts, times, statuses; anything else is a string). Field binding
(S205, S206, S208) is not checked: probe lines carry no payload.

    .venv/bin/python benchmarks/probe_templates.py orders corpora/templates/probes/orders_templates_blind.txt [-q]

With ``-q`` only the total is printed (the way to read a blind set); otherwise each refused line with its first error.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from guard.shapes.check import check_template  # noqa: E402
from guard.shapes.sentences import load_library  # noqa: E402

NAME_RULES = (
    (r"date|_on$|_at$|eta|expires|since|until|day", "date"),
    (r"total|amount|price|fee|balance|refund|cost|paid", "money"),
    (r"_id$|^id$|number|ref|code|last4", "identifier"),
    (r"(^|_)count|qty|quantity|^n_|items$|nights", "integer"),
    (r"time|login", "timestamp"),
    (r"status|state|tier", "enum"),
)
UNBOUND = ("S205", "S206", "S208")


def corpus_types(domain: str) -> dict[str, str]:
    types: dict[str, str] = {}
    for path in (ROOT / "corpora/templates" / f"{domain}.jsonl", ROOT / "corpora/templates/dev2" / f"{domain}.jsonl"):
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    for name, slot in (json.loads(line).get("slots") or {}).items():
                        types.setdefault(name, slot.get("type", "string"))
    return types


def slot_type(name: str, known: dict[str, str]) -> str:
    if name in known:
        return known[name]
    return next((t for pattern, t in NAME_RULES if re.search(pattern, name)), "string")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("domain")
    ap.add_argument("file", type=Path)
    ap.add_argument("-q", "--quiet", action="store_true", help="the total only")
    args = ap.parse_args()
    lib, known = load_library(args.domain), corpus_types(args.domain)
    lines = [t.strip() for t in args.file.read_text(encoding="utf-8").splitlines() if t.strip()]
    accepted = 0
    for text in lines:
        types = {s: slot_type(s, known) for s in re.findall(r"\{(\w+)\}", text)}
        report = check_template(text, lib, types)
        errors = [f for f in report.findings if f.severity.value == "error" and f.code not in UNBOUND]
        ok = all(s.ok for s in report.sentences) and not errors
        accepted += ok
        if not ok and not args.quiet:
            print(f"NO  {text}\n    {errors[0].code} {errors[0].message}" if errors else f"NO  {text}")
    print(f"{args.domain} {args.file.name}: {accepted}/{len(lines)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

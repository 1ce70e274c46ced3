"""How much of a labelled template corpus a domain's sentence library accepts, per kind of sentence.

The development measure of issue 15: clean kinds should be accepted, ``unverified`` never. Records are
the JSON lines of ``corpora/templates/``; the split is the corpus's own (``sha256(text) % 10``: below 6
train, 6-7 dev, 8-9 test).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SPLITS = {"train": range(0, 6), "dev": range(6, 8), "test": range(8, 10)}
CLEAN_KINDS = (
    "slot_fact",
    "prose_state",
    "courtesy",
    "contact",
    "instruction",
    "procedure",
    "discourse",
    "label_line",
)


def split_of(text: str) -> str:
    """The corpus split a sentence belongs to, by the hash of its text."""
    bucket = int(hashlib.sha256(text.encode("utf-8")).hexdigest(), 16) % 10
    return next(name for name, r in SPLITS.items() if bucket in r)


def read_records(paths: Iterable[Path], splits: Iterable[str] = ("train", "dev")) -> Iterator[dict[str, Any]]:
    """Records of the given splits, in file order."""
    wanted = set(splits)
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                if split_of(rec["text"]) in wanted:
                    yield rec


def slot_types(rec: Mapping[str, Any]) -> dict[str, str]:
    return {name: str(s.get("type", "")) for name, s in (rec.get("slots") or {}).items()}


@dataclass(frozen=True)
class _Claim:
    key: str
    entity: str
    field: str
    value: Any


def claims(rec: Mapping[str, Any]) -> list[_Claim]:
    """The claims a record's labels imply: one per slot (its field), and the witness of a prose state."""
    out = []
    for name, s in (rec.get("slots") or {}).items():
        entity, _, fld = str(s.get("field", "")).partition(".")
        out.append(_Claim(name, entity, fld, None))
    w = rec.get("witness")
    if w:
        entity, _, fld = str(w["field"]).partition(".")
        out.append(_Claim("_witness", entity, fld, w.get("value")))
    return out


@dataclass
class Coverage:
    """Accepted and total records per kind, and the records that went the wrong way."""

    accepted: dict[str, int] = field(default_factory=dict)
    total: dict[str, int] = field(default_factory=dict)
    misses: list[tuple[str, str]] = field(default_factory=list)
    """(kind, text) of clean records rejected and unverified records accepted."""

    def add(self, kind: str, ok: bool, text: str) -> None:
        self.total[kind] = self.total.get(kind, 0) + 1
        self.accepted[kind] = self.accepted.get(kind, 0) + int(ok)
        if ok == (kind == "unverified"):
            self.misses.append((kind, text))

    @property
    def clean(self) -> tuple[int, int]:
        kinds = [k for k in self.total if k != "unverified"]
        return sum(self.accepted[k] for k in kinds), sum(self.total[k] for k in kinds)

    def table(self) -> str:
        rows = [f"{k:12} {self.accepted[k]:4}/{self.total[k]:<4}" for k in sorted(self.total)]
        a, n = self.clean
        rows.append(f"{'clean':12} {a:4}/{n:<4} {a / n:.1%}" if n else "clean: none")
        return "\n".join(rows)


def measure(
    domain: str, records: Iterable[Mapping[str, Any]], lexicon_dir: Path | None = None, bound: bool = True
) -> Coverage:
    """Run every record's text through the domain's library (one template per record); with ``bound`` the
    record's slots are bound to its fields as a payload's claims would be, else checked by type only (the blind
    set names fields of its own)."""
    from guard.shapes.check import bind, check_template
    from guard.shapes.sentences import load_library

    lib = load_library(domain, lexicon_dir)
    cov = Coverage()
    for rec in records:
        report = check_template(rec["text"], lib, slot_types(rec))
        if bound:
            findings, _ = bind(report.bindings, claims(rec), rec["text"], report.findings)
        else:
            findings = [f for f in report.findings if f.code not in ("S205", "S206", "S208")]
        ok = all(s.ok for s in report.sentences) and not any(f.severity.value == "error" for f in findings)
        cov.add(rec["kind"], ok, rec["text"])
    return cov


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("domain")
    ap.add_argument("--split", default="train,dev")
    ap.add_argument("--corpus", type=Path, default=Path("corpora/templates"))
    ap.add_argument("--challenge", action="store_true", help="also the domain's challenge_unverified lines")
    ap.add_argument("-v", "--verbose", action="store_true", help="list the misses")
    ap.add_argument("--types-only", action="store_true", help="check slots by type, not bound to the record's fields")
    args = ap.parse_args(argv)
    files = [args.corpus / f"{args.domain}.jsonl"]
    recs = list(read_records(files, args.split.split(",")))
    if args.challenge:
        recs += [
            r
            for r in read_records([args.corpus / "challenge_unverified.jsonl"], args.split.split(","))
            if r.get("domain") == args.domain
        ]
    cov = measure(args.domain, recs, bound=not args.types_only)
    print(cov.table())
    if args.verbose:
        for kind, text in cov.misses:
            print(f"  {kind:12} {text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

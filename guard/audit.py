"""Re-check logged payloads and lint templates in bulk: sequentially, with joblib, or on a Dask cluster.

Items are read lazily from files (payload JSON, JSON Lines of payloads or of
``payload`` log events, plain-text templates), cut into chunks, and each chunk
is judged by a worker that builds its own :class:`guard.pipeline.Guard` once per
process from plain settings (a policy mapping and a database URL), so nothing
unpicklable crosses process or machine boundaries. Every backend returns the
same records in input order.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from guard.errors import FileError, GuardError, PayloadError
from guard.observe import schema
from guard.timeutil import parse_time


@dataclass(frozen=True)
class AuditSettings:
    """Everything a worker needs to build its gate; plain data so it pickles anywhere."""

    policy: dict[str, Any]
    db: str
    domain: str | None = None
    config: dict[str, Any] | None = None
    now: str | None = None
    default_principal: str | None = None


@dataclass(frozen=True)
class Item:
    source: str
    index: int
    kind: str  # "payload" or "template"
    body: Any
    principal: Any = None
    slot_types: dict[str, str] | None = None


_JSONL = re.compile(r"\.jsonl(\.\d+)?(\.gz)?$")
"""JSON Lines files, including an event log's rotated (``.1``) and compressed (``.1.gz``) siblings."""


def read_items(paths: Iterable[str | Path]) -> Iterator[Item]:
    """Payloads and templates from files, in order; a line that is not JSON becomes an error record later."""
    for path in paths:
        p = Path(path)
        name = str(p)
        try:
            if _JSONL.search(p.name):
                opener = gzip.open if p.suffix == ".gz" else open
                with opener(p, "rt", encoding="utf-8") as fh:
                    for i, line in enumerate(fh, 1):
                        if not line.strip():
                            continue
                        try:
                            rec = json.loads(line)
                        except json.JSONDecodeError:
                            yield Item(name, i, "payload", line)
                            continue
                        if isinstance(rec, dict) and schema.kind(rec) == schema.PAYLOAD:
                            logged = schema.as_payload(rec)
                            yield Item(name, i, "payload", logged.get("payload"), logged.get("principal"))
                        elif isinstance(rec, dict) and schema.kind(rec) is not None:
                            continue  # claim and decision events carry no payload to re-check
                        else:
                            yield Item(name, i, "payload", rec)
            elif p.suffix == ".json":
                data = json.loads(p.read_text(encoding="utf-8"))
                for i, rec in enumerate(data if isinstance(data, list) else [data], 1):
                    yield Item(name, i, "payload", rec)
            else:
                from guard.linting import read_sidecar

                yield Item(name, 1, "template", p.read_text(encoding="utf-8"), slot_types=read_sidecar(p))
        except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise FileError(f"cannot read {name}: {exc}", location=name) from None


_GATES: dict[str, Any] = {}


def _gate(settings: AuditSettings) -> Any:
    """One gate per worker process and settings, built at its first chunk."""
    key = json.dumps(asdict(settings), sort_keys=True, default=str)
    gate = _GATES.get(key)
    if gate is None:
        from guard.pipeline import Guard

        gate = Guard(settings.policy, settings.db, domain=settings.domain, config=settings.config)
        _GATES[key] = gate
    return gate


def _judge(settings: AuditSettings, item: Item) -> dict[str, Any]:
    gate = _gate(settings)
    out: dict[str, Any] = {"source": item.source, "index": item.index, "kind": item.kind}
    try:
        if item.kind == "template":
            res = gate.lint_template(item.body, dict(item.slot_types or {}))
            out.update(ok=res.ok, findings=[f.code for f in res.findings])
            return out
        now = parse_time(settings.now, location="now") if settings.now else None
        principal = item.principal if item.principal not in (None, "") else settings.default_principal
        d = gate.run(item.body, principal=principal, now=now, request_id=f"audit:{item.source}:{item.index}")
        out.update(
            action=d.action.value,
            findings=[f.code for f in d.findings],
            results=[{"key": r.key, "entity": r.entity, "field": r.field, "status": r.status.value} for r in d.results],
        )
    except PayloadError as exc:
        out.update(action="invalid", error=str(exc).splitlines()[0])
    except GuardError as exc:
        out.update(action="error", error=str(exc).splitlines()[0])
    return out


def judge_chunk(settings: AuditSettings, items: list[Item]) -> list[dict[str, Any]]:
    return [_judge(settings, it) for it in items]


def _chunks(items: Iterable[Item], size: int) -> Iterator[list[Item]]:
    chunk: list[Item] = []
    for it in items:
        chunk.append(it)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


@dataclass
class AuditReport:
    records: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        actions = Counter(r.get("action", "lint_ok" if r.get("ok") else "lint_failed") for r in self.records)
        statuses: Counter[str] = Counter()
        for r in self.records:
            for c in r.get("results", ()):
                statuses[f"{c['entity']}.{c['field']}:{c['status']}"] += 1
        findings = Counter(code for r in self.records for code in r.get("findings", ()))
        return {
            "items": len(self.records),
            "actions": dict(sorted(actions.items())),
            "claims": dict(sorted(statuses.items())),
            "findings": dict(sorted(findings.items())),
        }


def audit(
    paths: Iterable[str | Path],
    settings: AuditSettings,
    *,
    jobs: int = 1,
    dask: str | Any = None,
    chunk_size: int = 200,
    progress: Any = None,
) -> AuditReport:
    """Judge every item; ``jobs`` > 1 uses joblib processes, ``dask`` a scheduler address or Client."""
    chunks = _chunks(read_items(paths), chunk_size)
    report = AuditReport()
    if dask is not None:
        from dask.distributed import Client

        client = dask if isinstance(dask, Client) else Client(dask)
        try:
            futures = [client.submit(judge_chunk, settings, c, pure=False) for c in chunks]
            for fut in futures:
                report.records.extend(fut.result())
                if progress:
                    progress(len(report.records))
        finally:
            if not isinstance(dask, Client):
                client.close()
    elif jobs != 1:
        from joblib import Parallel, delayed

        for part in Parallel(n_jobs=jobs, return_as="generator")(delayed(judge_chunk)(settings, c) for c in chunks):
            report.records.extend(part)
            if progress:
                progress(len(report.records))
    else:
        for c in chunks:
            report.records.extend(judge_chunk(settings, c))
            if progress:
                progress(len(report.records))
    return report


__all__ = ["AuditSettings", "AuditReport", "Item", "read_items", "audit", "judge_chunk"]

"""Re-check logged payloads and lint templates in bulk: sequentially, with joblib, or on a Dask cluster.

Items are read lazily from files (payload JSON, JSON Lines of payloads or of
``payload`` log events, plain-text templates), cut into chunks, and each chunk
is judged by a worker that builds its own :class:`guard.pipeline.Guard` once per
process from plain settings (a policy mapping and a database URL), so nothing
unpicklable crosses process or machine boundaries. Every backend returns the
same records in input order.

An audit reads logs that a crash, a full disk or a person may have damaged, and
items that the model wrote, so one bad input never ends it: a line that is not
a payload is ``invalid``, a file or gzip member that cannot be read further is
one ``unreadable`` record, and an item whose check raises something other than
a guard error is one ``error`` record naming the exception type. Only mistakes
in the options (``now``, ``jobs``, the Dask scheduler) stop the run, before it
starts.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from guard.errors import DependencyError, FileError, GuardError, OptionError, PayloadError
from guard.observe import schema
from guard.timeutil import parse_time

UNREADABLE = "unreadable"
"""The action of a record for what could not be read (the rest of a damaged file, a template not in UTF-8)."""

ERROR = "error"
"""The action of a record whose check failed; the other items are still audited."""


@dataclass(frozen=True)
class AuditSettings:
    """Everything a worker needs to build its gate; plain data so it pickles anywhere."""

    policy: dict[str, Any]
    db: str
    domain: str | None = None
    config: dict[str, Any] | None = None
    now: str | None = None
    default_principal: str | None = None
    grammar_dir: str | None = None
    model: str | None = None
    """A classifier model other than the shipped one (a path each worker loads)."""


@dataclass(frozen=True)
class Item:
    source: str
    index: int
    kind: str  # "payload", "template", or "unreadable" (then ``body`` says why)
    body: Any
    principal: Any = None
    slot_types: dict[str, str] | None = None


_JSONL = re.compile(r"\.jsonl(\.\d+)?(\.gz)?$")
"""JSON Lines files, including an event log's rotated (``.1``) and compressed (``.1.gz``) siblings."""


def read_items(paths: Iterable[str | Path]) -> Iterator[Item]:
    """Payloads and templates from files, in order; what cannot be read becomes a record, not an exception.

    A line that is not JSON (or not UTF-8, nested too deeply, an integer beyond Python's digit limit) is
    passed on as bytes, so the gate refuses it as an ``invalid`` payload. A file that cannot be read on (a
    damaged or cut gzip member, a read error) ends in one ``unreadable`` item. A file that cannot be opened
    at all is a :class:`~guard.errors.FileError`: it was named by the operator, not written by the model.
    """
    for path in paths:
        p = Path(path)
        name = str(p)
        if _JSONL.search(p.name):
            yield from _jsonl_items(p, name)
        elif p.suffix == ".json":
            raw = _read_bytes(p, name)
            try:
                data = json.loads(raw.decode("utf-8"))
            except (ValueError, RecursionError):
                yield Item(name, 1, "payload", raw)
                continue
            for i, rec in enumerate(data if isinstance(data, list) else [data], 1):
                yield Item(name, i, "payload", rec)
        else:
            raw = _read_bytes(p, name)
            try:
                from guard.linting import read_sidecar

                yield Item(name, 1, "template", raw.decode("utf-8"), slot_types=read_sidecar(p))
            except UnicodeDecodeError as exc:
                yield Item(name, 1, UNREADABLE, f"the template is not UTF-8 text (byte {exc.start})")
            except (GuardError, RecursionError) as exc:
                yield Item(name, 1, UNREADABLE, _first_line(exc))


def _read_bytes(path: Path, name: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise FileError(f"cannot read {name}: {exc.strerror or exc}", location=name) from None


def _open_binary(path: Path) -> Any:
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def _jsonl_items(path: Path, name: str) -> Iterator[Item]:
    try:
        handle = _open_binary(path)
    except OSError as exc:
        raise FileError(f"cannot read {name}: {exc.strerror or exc}", location=name) from None
    number = 0
    with handle:
        try:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line.decode("utf-8"))
                except (ValueError, RecursionError):
                    yield Item(name, number, "payload", line.rstrip(b"\r\n"))
                    continue
                if isinstance(rec, dict) and schema.kind(rec) == schema.PAYLOAD:
                    logged = schema.as_payload(rec)
                    yield Item(name, number, "payload", logged.get("payload"), logged.get("principal"))
                elif isinstance(rec, dict) and schema.kind(rec) is not None:
                    continue  # claim and decision events carry no payload to re-check
                else:
                    yield Item(name, number, "payload", rec)
        except (OSError, EOFError, zlib.error) as exc:
            yield Item(name, number + 1, UNREADABLE, f"the file cannot be read from here on ({exc})")


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]


_GATES: dict[str, Any] = {}


def _gate(settings: AuditSettings) -> Any:
    """One gate per worker process and settings, built at its first chunk."""
    key = json.dumps(asdict(settings), sort_keys=True, default=str)
    gate = _GATES.get(key)
    if gate is None:
        from guard.pipeline import Guard

        classifier: Any = "auto"
        if settings.model:
            from guard.linting.freetext import load_classifier

            classifier = load_classifier(Path(settings.model))
        gate = Guard(
            settings.policy,
            settings.db,
            domain=settings.domain,
            config=settings.config,
            grammar_dir=settings.grammar_dir,
            classifier=classifier,
        )
        _GATES[key] = gate
    return gate


def _judge(settings: AuditSettings, item: Item) -> dict[str, Any]:
    out: dict[str, Any] = {"source": item.source, "index": item.index, "kind": item.kind}
    if item.kind == UNREADABLE:
        out.update(action=UNREADABLE, error=str(item.body))
        return out
    gate = _gate(settings)
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
        out.update(action="invalid", error=_first_line(exc))
    except GuardError as exc:
        out.update(action=ERROR, error=_first_line(exc))
    except Exception as exc:  # a defect below the gate: this item's record says so, the audit goes on
        out.update(action=ERROR, error=f"{type(exc).__name__} while checking this item", exception=type(exc).__name__)
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


def check_options(settings: AuditSettings, *, jobs: int = 1, chunk_size: int = 200) -> None:
    """Refuse options that would fail on every item, before any is read; OptionError names the option."""
    if settings.now:
        parse_time(settings.now, location="--now")
    if jobs == 0 or jobs < -1:
        raise OptionError(f"--jobs must be 1 or more, or -1 for every core, not {jobs}", location="--jobs")
    if chunk_size < 1:
        raise OptionError(f"the chunk size must be 1 or more, not {chunk_size}", location="chunk_size")


def _client(dask: str | Any, timeout: float) -> tuple[Any, bool]:
    """A Dask client for ``dask`` (an address or a Client) and whether it is ours to close."""
    try:
        from dask.distributed import Client
    except ImportError as exc:
        raise DependencyError(
            f"auditing on a Dask cluster needs dask.distributed ({exc.name or 'dask'} is missing): "
            "pip install 'guard[dask]'"
        ) from None
    if isinstance(dask, Client):
        return dask, False
    if not timeout > 0:
        raise OptionError(f"the Dask timeout must be above zero seconds, not {timeout}", location="--dask-timeout")
    try:
        return Client(dask, timeout=timeout), True
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        raise DependencyError(
            f"cannot reach the Dask scheduler at {dask} within {timeout:g} s ({type(exc).__name__}: "
            f"{_first_line(exc)})",
            location="--dask",
        ) from None


def audit(
    paths: Iterable[str | Path],
    settings: AuditSettings,
    *,
    jobs: int = 1,
    dask: str | Any = None,
    chunk_size: int = 200,
    progress: Any = None,
    dask_timeout: float = 10.0,
) -> AuditReport:
    """Judge every item; ``jobs`` > 1 (or -1) uses joblib processes, ``dask`` a scheduler address or Client.

    Raises :class:`~guard.errors.OptionError` for options that cannot work, :class:`~guard.errors.DependencyError`
    when Dask is missing or its scheduler does not answer within ``dask_timeout`` seconds, and
    :class:`~guard.errors.FileError` for an input that cannot be opened. Everything else is a record.
    """
    check_options(settings, jobs=jobs, chunk_size=chunk_size)
    chunks = _chunks(read_items(paths), chunk_size)
    report = AuditReport()
    if dask is not None:
        client, ours = _client(dask, dask_timeout)
        try:
            submitted = [(client.submit(judge_chunk, settings, c, pure=False), c) for c in chunks]
            for fut, chunk in submitted:
                try:
                    records = fut.result()
                except GuardError:
                    raise
                except Exception as exc:  # a worker that died takes its chunk, not the audit
                    records = [_failed(item, exc) for item in chunk]
                report.records.extend(records)
                if progress:
                    progress(len(report.records))
        finally:
            if ours:
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


def _failed(item: Item, exc: BaseException) -> dict[str, Any]:
    name = type(exc).__name__
    return {
        "source": item.source,
        "index": item.index,
        "kind": item.kind,
        "action": ERROR,
        "error": f"{name} on the worker that checked this item",
        "exception": name,
    }


__all__ = [
    "AuditSettings",
    "AuditReport",
    "Item",
    "read_items",
    "audit",
    "check_options",
    "judge_chunk",
    "UNREADABLE",
    "ERROR",
]

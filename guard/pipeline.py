"""The pipeline: lint, check, decide, render and log one payload, through one code path.

``Guard`` holds what is expensive to build once (the record store's statements,
the compiled grammar, the classifier, the lint results of templates already
seen); :func:`verify` is the same path without the lint stages. Both end in
:func:`_process`, and every event is built by :func:`_events` from
:mod:`guard.observe.schema`. Per domain, the gate config says which registered
lint stages are enforced (a failing template is refused before any database
lookup), only reported, or off.
"""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from guard._files import read_utf8
from guard.decision import Action, Decision, decide, lint_refusal, witness_refusal
from guard.errors import ConfigError, OptionError, Problem
from guard.findings import CATALOGUE, Finding, Severity
from guard.linting import format as format_stage
from guard.linting import registry
from guard.linting import shapes as shape_stage
from guard.linting.registry import Check, Mode, StageSetup
from guard.linting.runner import STAGE_MS, LintContext, LintResult, run_stages
from guard.observe.schema import ClaimEvent, DecisionEvent, PayloadEvent, claim_event, decision_event, payload_event
from guard.payload import Limits, Payload, load_payload
from guard.records.checker import Rows, Status, adrive, checking, drive
from guard.records.policy import Policy, load_policy
from guard.records.store import Read, RecordStore
from guard.records.types import to_json

UNLISTED = "_unlisted"
"""The metric label for an entity or field a claim named that is not in the policy."""


_T = TypeVar("_T")


class StageBound(Protocol):
    """Wraps each stage of :meth:`AsyncGuard.run` (``"lint"``, then ``"check"``) as it is awaited.

    The server passes one that gives each stage its own time limit (``asyncio.wait_for``) and answers 503 when
    one runs over; by default a stage is awaited as it is.
    """

    def __call__(self, stage: str, work: Awaitable[_T], /) -> Awaitable[_T]:
        """``work``, awaited as the caller chooses (raising, for instance, on a time limit)."""
        ...


def _as_is(stage: str, work: Awaitable[_T], /) -> Awaitable[_T]:
    return work


class EventSink(Protocol):
    """Anything that takes events: an EventLog, or your own sink."""

    def emit(self, event: Mapping[str, Any]) -> None:
        """Take one event."""


# -- configuration ---------------------------------------------------------------
def _default_modes() -> dict[str, Mode]:
    return {s.name: s.default_mode for s in registry.stages()}


class DomainConfig(BaseModel):
    """Each registered stage's mode, and the options of the stages that take some (``ratio: {...}``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    stages: dict[str, Mode] = Field(default_factory=_default_modes)
    options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _stage_options(cls, data: Any) -> Any:
        """A key named after a stage that takes options holds them (``ratio: {max_prose_per_slot: 8}``)."""
        if not isinstance(data, Mapping):
            return data
        out: dict[str, Any] = {"options": dict(data.get("options") or {})}
        takes = {s.name for s in registry.stages() if s.options is not None}
        for key, value in data.items():
            if key in takes:
                out["options"][key] = value
            elif key != "options":
                out[key] = value
        return out

    def mode(self, stage: str) -> Mode:
        """The stage's mode here (off when not listed)."""
        return self.stages.get(stage, Mode.OFF)


class GateConfig(BaseModel):
    """Stage settings: without a domain, for any domain not listed, and one entry per listed domain."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    default: DomainConfig = Field(default_factory=DomainConfig)
    """When no domain is given (the shape stage needs one)."""
    domain_default: DomainConfig = Field(default_factory=DomainConfig)
    """For a domain that is not listed in ``domains``: a shipped one or one from a grammar directory."""
    domains: dict[str, DomainConfig] = Field(default_factory=dict)

    def for_domain(self, domain: str | None, grammar_dir: Any = None) -> DomainConfig:
        """The domain's settings, checked against the registry: an unknown stage or option is an error.

        A domain must exist in the grammar libraries (guard's or ``grammar_dir``): a misspelt domain is a
        configuration mistake, never a gate that quietly runs without its sentence library.
        """
        if domain is not None:
            from guard.shapes.sentences import list_domains

            known_domains = list_domains(grammar_dir)
            if domain not in known_domains:
                raise ConfigError(
                    f"unknown domain {domain!r}; known domains: {', '.join(sorted(known_domains)) or 'none'}",
                    location="domain",
                )
        if domain is None:
            cfg, where = self.default, "default"
        elif domain in self.domains:
            cfg, where = self.domains[domain], f"domains.{domain}"
        else:
            cfg, where = self.domain_default, "domain_default"
        known = registry.names()
        for stage in cfg.stages:
            if stage not in known:
                raise ConfigError(
                    f"unknown lint stage {stage!r}; stages are {', '.join(known)}", location=f"{where}.stages.{stage}"
                )
        for stage in cfg.options:
            registry.stage(stage).setup_options(cfg.options[stage], f"{where}.{stage}")
        for s in registry.stages():
            if s.required and cfg.mode(s.name) is Mode.OFF:
                raise ConfigError(
                    f"the {s.name} stage cannot be turned off: unsafe slots are never rendered",
                    location=f"{where}.stages.{s.name}",
                )
        return cfg


def _merged(base: Any, extra: Any) -> Any:
    """``extra`` laid over ``base``: mappings merge key by key, anything else replaces."""
    if isinstance(base, Mapping) and isinstance(extra, Mapping):
        out = dict(base)
        for key, value in extra.items():
            out[key] = _merged(base.get(key), value) if key in base else value
        return out
    return extra


def _shipped_gate_config() -> Any:
    return yaml.safe_load((resources.files("guard") / "gate.yaml").read_text(encoding="utf-8"))


def load_gate_config(source: str | Path | Mapping[str, Any] | GateConfig | None = None) -> GateConfig:
    """The per-domain stage settings: guard's shipped defaults, extended by a YAML file or a mapping.

    A user's config is laid over the shipped one (mappings merge key by key), so naming one stage of one
    domain changes that stage only; every other setting stays as shipped.
    """
    if isinstance(source, GateConfig):
        return source
    where = "gate config"
    data: Any
    if source is None:
        data = _shipped_gate_config()
    elif isinstance(source, Mapping):
        data = dict(source)
    else:
        where = str(source)
        text = read_utf8(source, "the gate config", ConfigError)
        try:
            data = yaml.safe_load(text)
        except RecursionError:
            raise ConfigError("the gate config is nested too deeply", location=where) from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"the gate config is not valid YAML: {exc}", location=where) from None
    if source is not None:
        if data is not None and not isinstance(data, Mapping):
            raise ConfigError("the gate config must be a mapping (default, domain_default, domains)", location=where)
        data = _merged(_shipped_gate_config(), data or {})
    try:
        return GateConfig.model_validate(data or {})
    except ValidationError as exc:
        raise ConfigError(
            "the gate config is invalid",
            location=where,
            problems=[
                Problem("config", e["msg"], ".".join(str(p) for p in e["loc"])) for e in exc.errors(include_url=False)
            ],
        ) from None


# -- the lint cache ----------------------------------------------------------------
def _cached(found: LintResult) -> LintResult:
    """A cached lint result as this run's: its stages did not run now, so it reports no stage times."""
    if STAGE_MS not in found.measures:
        return found
    return dataclasses.replace(found, measures={k: v for k, v in found.measures.items() if k != STAGE_MS})


class LintCache:
    """Lint results per (domain, template, slot types), least recently used first out; thread-safe."""

    def __init__(self, size: int = 1024) -> None:
        if size < 0:
            raise ConfigError("the lint cache size must not be negative", location="lint_cache_size")
        self.size = size
        self.hits = 0
        self.misses = 0
        self._items: OrderedDict[tuple[Any, ...], LintResult] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> LintResult | None:
        """The remembered result, counted as a hit or a miss."""
        with self._lock:
            found = self._items.get(key)
            if found is None:
                self.misses += 1
            else:
                self.hits += 1
                self._items.move_to_end(key)
            return found

    def put(self, key: tuple[Any, ...], result: LintResult) -> None:
        """Remember a result, dropping the least recently used beyond ``size``."""
        if not self.size:
            return
        with self._lock:
            self._items[key] = result
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


# -- the one path ------------------------------------------------------------------
def _blocking(findings: Sequence[Finding], modes: Mapping[str, Mode]) -> list[Finding]:
    out = []
    for f in findings:
        entry = CATALOGUE.get(f.code)
        if (
            modes.get(f.stage) is Mode.ENFORCE
            and f.severity in (Severity.ERROR, Severity.WARNING)
            and (entry is None or entry.blocks)
        ):
            out.append(f)
    return out


def _process(
    p: Payload,
    lint: LintResult,
    modes: Mapping[str, Mode],
    policy: Policy,
    store: RecordStore,
    *,
    principal: Any,
    now: datetime | None,
    request_id: str,
) -> Decision:
    """Refuse on an enforced finding before any lookup; otherwise check, decide and render."""
    steps = _processing(p, lint, modes, policy, store, principal=principal, now=now, request_id=request_id)
    return drive(steps, store.read_many)


def _processing(
    p: Payload,
    lint: LintResult,
    modes: Mapping[str, Mode],
    policy: Policy,
    store: RecordStore,
    *,
    principal: Any,
    now: datetime | None,
    request_id: str,
) -> Generator[list[Read], Rows, Decision]:
    """:func:`_process` with the check's reads left to the caller (see :func:`guard.records.checker.checking`):
    :class:`Guard` does them with the store's blocking reads, :class:`AsyncGuard` awaits them."""
    warnings: list[Finding] = []
    findings: list[Finding] = []
    for f in lint.findings:
        entry = CATALOGUE.get(f.code)
        (findings if entry is None or entry.blocks else warnings).append(f)
    blocking = _blocking(findings, modes)
    if blocking:
        return Decision(
            Action.REFUSE,
            request_id=request_id,
            message=lint_refusal(blocking),
            unverified=(),
            warnings=tuple(warnings),
            findings=tuple(findings),
        )
    results = yield from checking(p, policy, store, principal, now)
    witnessed = lint.measures.get("witnesses")
    if witnessed:
        unwitnessed = [
            (r, witnessed[r.key]) for r in results if r.key in witnessed and r.status is not Status.CONFIRMED
        ]
        if unwitnessed:
            return Decision(
                Action.REFUSE,
                request_id=request_id,
                results=tuple(results),
                message=witness_refusal(unwitnessed, policy),
                unverified=tuple(r.key for r, _ in unwitnessed),
                warnings=tuple(warnings),
                findings=tuple(findings),
            )
    return decide(p, results, policy, warnings=warnings, request_id=request_id, findings=findings)


def _events(
    decision: Decision,
    p: Payload,
    lint: LintResult,
    *,
    domain: str | None,
    principal: Any,
    latency_ms: float,
    log_payload: bool,
    include_values: bool,
) -> list[Any]:
    """Every event of one decision, in log order: the payload (when asked), one per claim, the decision."""
    from guard.linting.ratio import measure

    rid = decision.request_id
    events: list[PayloadEvent | ClaimEvent | DecisionEvent] = []
    if log_payload:
        events.append(
            payload_event(request_id=rid, domain=domain, principal=principal, payload=p.model_dump(mode="json"))
        )
    for r in decision.results:
        e = claim_event(
            request_id=rid,
            domain=domain,
            entity=r.entity,
            field=r.field,
            key=r.key,
            type=r.type,
            status=r.status.value,
            latency_ms=round(r.latency_ms, 3),
        )
        if include_values:
            e["claimed"] = r.claimed
            e["actual"] = to_json(r.actual, r.type)
        events.append(e)
    ratio = lint.measures.get("ratio") or measure(p.answer_template)
    per_slot = ratio.prose_per_slot
    events.append(
        decision_event(
            request_id=rid,
            domain=domain,
            action=decision.action.value,
            n_claims=len(p.claims),
            n_slots=ratio.slots,
            prose_words=ratio.prose_words,
            prose_per_slot=None if per_slot == float("inf") else round(per_slot, 3),
            findings=[f.code for f in (*decision.findings, *decision.warnings)],
            latency_ms=round(latency_ms, 3),
            stage_ms=_stage_ms(lint, decision),
        )
    )
    return events


def _stage_ms(lint: LintResult, decision: Decision) -> dict[str, float]:
    """The decision's time per stage: each lint stage that ran, and the check (its claims' times, summed)."""
    out = {name: round(ms, 3) for name, ms in (lint.measures.get(STAGE_MS) or {}).items()}
    if decision.results:
        out["check"] = round(sum(r.latency_ms for r in decision.results), 3)
    return out


def _emit(log: Any, events: list[Any]) -> Exception | None:
    """Hand the events to the log; the failure, if any, is returned, never raised.

    A decision must not be lost because its log line could not be written (a full disk, a closed
    log, a failing sink of the caller's own): the caller returns the decision and counts the failure.
    """
    try:
        if hasattr(log, "emit_many"):
            log.emit_many(events)
        else:
            for e in events:
                log.emit(e)
    except Exception as exc:  # any sink, including the caller's own: the decision stands
        return exc
    return None


def _warn_log_failure(exc: Exception) -> None:
    warnings.warn(
        f"guard could not write the event log ({type(exc).__name__}: {exc}); the decision was returned unlogged",
        RuntimeWarning,
        stacklevel=3,
    )


_VERIFY_STAGES: list[tuple[str, Check]] = [("format", format_stage.check)]
_VERIFY_MODES = {"format": Mode.ENFORCE}


def verify(
    payload: Payload | str | bytes | dict[str, Any],
    policy: Policy,
    store: RecordStore,
    *,
    principal: Any = None,
    now: datetime | None = None,
    request_id: str | None = None,
    limits: Limits | None = None,
    log: EventSink | None = None,
    domain: str | None = None,
) -> Decision:
    """Parse, check every claim, decide and render: the pipeline without the prose stages.

    Raises only PayloadError for an invalid payload.

    >>> # decision = verify(payload_json, policy, store, principal="cus_1")
    """
    t0 = time.perf_counter()
    p, lint, steps = _verifying(payload, policy, store, principal, now, request_id, limits, domain)
    decision = drive(steps, store.read_many)
    if log is not None:
        failed = _emit(
            log,
            _events(
                decision,
                p,
                lint,
                domain=domain,
                principal=principal,
                latency_ms=(time.perf_counter() - t0) * 1000,
                log_payload=False,
                include_values=bool(getattr(log, "include_values", False)),
            ),
        )
        if failed is not None:
            _warn_log_failure(failed)
    return decision


def _verifying(
    payload: Payload | str | bytes | dict[str, Any],
    policy: Policy,
    store: RecordStore,
    principal: Any,
    now: datetime | None,
    request_id: str | None,
    limits: Limits | None,
    domain: str | None,
) -> tuple[Payload, LintResult, Generator[list[Read], Rows, Decision]]:
    """:func:`verify` up to its reads: the parsed payload, the format stage's result, and the rest as steps."""
    p = load_payload(payload, limits)
    lint = run_stages(LintContext(p.answer_template, domain or "", {}, payload=p), _VERIFY_STAGES)
    steps = _processing(
        p,
        lint,
        _VERIFY_MODES,
        policy,
        store,
        principal=principal,
        now=now,
        request_id=request_id or secrets.token_hex(16),
    )
    return p, lint, steps


Generate = Callable[[Decision | None], Any]


def regenerate_loop(
    generate: Generate,
    policy: Policy,
    store: RecordStore,
    *,
    max_attempts: int = 3,
    principal: Any = None,
    now: datetime | None = None,
    verifier: Callable[..., Decision] | None = None,
) -> Decision:
    """Ask ``generate`` for a payload, feeding back the previous decision, until it verifies.

    ``generate(None)`` produces the first payload; ``generate(decision)`` gets the
    ``regenerate_from_facts`` decision (its ``facts`` and ``contradicted``) and
    tries again. After ``max_attempts`` without an answer the result is a
    ``refuse`` that says so. A refusal from the checker (not found, stale,
    unavailable) ends the loop at once: regenerating cannot fix those.
    """
    if max_attempts < 1:
        raise OptionError("max_attempts must be at least 1", location="regenerate_loop")
    run = verifier or (lambda p: verify(p, policy, store, principal=principal, now=now))
    previous: Decision | None = None
    for _ in range(max_attempts):
        decision = run(generate(previous))
        if decision.action is not Action.REGENERATE:
            return decision
        previous = decision
    assert previous is not None
    return Decision(
        Action.REFUSE,
        request_id=previous.request_id,
        results=previous.results,
        message=f"I could not produce an answer that matches the records after {max_attempts} "
        f"attempts, so I have not given one.",
        unverified=previous.contradicted,
        warnings=previous.warnings,
    )


class Guard:
    """One gate in front of users.

    >>> # g = Guard("policy.yaml", "sqlite:///records.db", domain="orders", log="guard.jsonl")
    >>> # decision = g.run(payload_json, principal="cus_1042")
    """

    def __init__(
        self,
        policy: Policy | str | Path | dict[str, Any],
        db: str | RecordStore | Any,
        *,
        domain: str | None = None,
        config: Any = None,
        log: Any = None,
        metrics: Any = None,
        classifier: Any = "auto",
        grammar_dir: Any = None,
        limits: Limits | None = None,
        statement_timeout: float = 5.0,
        log_payloads: bool = False,
        lint_cache_size: int = 1024,
    ) -> None:
        self.policy = load_policy(policy if not isinstance(policy, str) or "\n" in policy else Path(policy))
        self.domain = domain
        self.config = load_gate_config(config).for_domain(domain, grammar_dir)
        self.grammar_dir = grammar_dir
        self.modes = {
            s.name: self.config.mode(s.name) for s in registry.stages() if self.config.mode(s.name) is not Mode.OFF
        }
        setup = StageSetup(
            domain=domain, grammar_dir=grammar_dir, classifier=None if classifier == "auto" else classifier
        )
        self.stages: list[tuple[str, Check]] = registry.build(
            {name: self.config.options.get(name) for name in self.modes}, setup
        )
        self.lint_cache = LintCache(lint_cache_size)
        self.store = (
            db if isinstance(db, RecordStore) else RecordStore(db, self.policy, statement_timeout=statement_timeout)
        )
        self.limits = limits or Limits()
        if isinstance(log, (str, Path)):
            from guard.observe.events import EventLog

            log = EventLog(log)
        self.log = log
        self.log_payloads = log_payloads
        self.metrics = metrics
        self.log_failures = 0
        """Decisions whose log lines could not be written (also ``guard_log_write_failures_total``)."""
        self._failures_lock = threading.Lock()

    def lint_template(self, template: str, slot_types: Mapping[str, str], payload: Payload | None = None) -> LintResult:
        """The gate's stages on one template, computed once per (domain, template, slot types)."""
        key = (self.domain, template, tuple(sorted(slot_types.items())))
        found = self.lint_cache.get(key)
        if self.metrics is not None:
            self.metrics.observe_lint_cache(found is not None)
        if found is not None:
            return _cached(found)
        found = run_stages(
            LintContext(template, self.domain or "", dict(slot_types), self.grammar_dir, payload=payload),
            self.stages,
        )
        self.lint_cache.put(key, found)
        return found

    def lint(self, payload: Payload | str | bytes | dict[str, Any]) -> LintResult:
        """The gate's stages on a payload's template, with slot types from its claims."""
        p = load_payload(payload, self.limits)  # a Payload built directly has skipped the slot and key checks
        return shape_stage.bind(
            self.lint_template(p.answer_template, {c.key: c.type.value for c in p.claims}, p), p.claims
        )

    def run(
        self,
        payload: Payload | str | bytes | dict[str, Any],
        principal: Any = None,
        *,
        now: datetime | None = None,
        request_id: str | None = None,
    ) -> Decision:
        """Lint, then (unless an enforced stage failed) check, decide and render; log and count the result.

        Raises only :class:`guard.errors.PayloadError` for a payload that cannot be read. A log line that
        cannot be written does not lose the decision: it is counted in :attr:`log_failures` and the
        metrics, and reported as a ``RuntimeWarning``.
        """
        t0 = time.perf_counter()
        p = load_payload(payload, self.limits)
        lint = shape_stage.bind(
            self.lint_template(p.answer_template, {c.key: c.type.value for c in p.claims}, p), p.claims
        )
        decision = _process(
            p,
            lint,
            self.modes,
            self.policy,
            self.store,
            principal=principal,
            now=now,
            request_id=request_id or secrets.token_hex(16),
        )
        events = self._account(decision, p, lint, principal, t0)
        if events:
            self._log_failed(_emit(self.log, events))
        return decision

    def _account(
        self, decision: Decision, p: Payload, lint: LintResult, principal: Any, t0: float
    ) -> list[dict[str, Any]]:
        """Count the decision in the metrics; the events the log should get (none without a log).

        Writing them is the caller's: :class:`AsyncGuard` does it in a worker thread.
        """
        if self.log is None and self.metrics is None:
            return []
        latency_ms = (time.perf_counter() - t0) * 1000
        if self.log is None and self._count_directly(decision, p, lint, latency_ms):
            return []
        events = _events(
            decision,
            p,
            lint,
            domain=self.domain,
            principal=principal,
            latency_ms=latency_ms,
            log_payload=self.log_payloads and self.log is not None,
            include_values=bool(getattr(self.log, "include_values", False)),
        )
        if self.metrics is not None:
            self._count(events)
        return events if self.log is not None else []

    def _count(self, events: list[Any]) -> None:
        """Feed the metrics; a metrics store that fails (its multiprocess folder removed) does not lose the
        decision either, and is reported as a ``RuntimeWarning``."""
        try:
            labelled = [self._metric_labels(e) for e in events]
            if hasattr(self.metrics, "observe_many"):  # guard's Metrics: the decision's events under one lock
                self.metrics.observe_many(labelled)
            else:
                for e in labelled:
                    self.metrics.observe(e)
        except Exception as exc:  # the caller's metrics object, or prometheus_client's files
            warnings.warn(
                f"guard could not count the decision in its metrics ({type(exc).__name__}: {exc})",
                RuntimeWarning,
                stacklevel=3,
            )

    def _count_directly(self, decision: Decision, p: Payload, lint: LintResult, latency_ms: float) -> bool:
        """Without a log, count the decision from its fields (``Metrics.observe_decision``) rather than from the
        events :func:`_events` would build for :meth:`_count` only; the same labels and values (the claims' through
        :meth:`_metric_labels`'s rule). False when the metrics object cannot (not guard's, or a subclass with its
        own ``observe``): the caller then feeds it the events."""
        from guard.linting.ratio import measure

        observe = getattr(self.metrics, "observe_decision", None)
        if observe is None:
            return False
        policy = self.policy
        claims = []
        for r in decision.results:
            entity, name = r.entity, r.field
            if policy.field(entity, name) is None:
                entity, name = (entity if entity in policy.entities else UNLISTED), UNLISTED
            claims.append((entity, name, r.status.value, round(r.latency_ms, 3)))
        ratio = lint.measures.get("ratio") or measure(p.answer_template)
        per_slot = ratio.prose_per_slot
        try:
            return bool(
                observe(
                    self.domain,
                    claims,
                    decision.action.value,
                    [f.code for f in (*decision.findings, *decision.warnings)],
                    None if per_slot == float("inf") else round(per_slot, 3),
                    round(latency_ms, 3),
                    _stage_ms(lint, decision),
                )
            )
        except Exception as exc:  # as _count: prometheus_client's files
            warnings.warn(
                f"guard could not count the decision in its metrics ({type(exc).__name__}: {exc})",
                RuntimeWarning,
                stacklevel=3,
            )
            return True

    def _log_failed(self, failed: Exception | None) -> None:
        """Count and report a log write that failed; the decision is returned all the same."""
        if failed is None:
            return
        with self._failures_lock:
            self.log_failures += 1
        if self.metrics is not None and hasattr(self.metrics, "observe_log_failure"):
            self.metrics.observe_log_failure()
        _warn_log_failure(failed)

    def _metric_labels(self, e: Mapping[str, Any]) -> Mapping[str, Any]:
        """Metric labels come from the policy only: a model naming a new entity or field per request would
        otherwise add a time series per request, without bound."""
        if e.get("event") != "claim" or self.policy.field(e.get("entity", ""), e.get("field", "")) is not None:
            return e
        entity = e.get("entity") if e.get("entity") in self.policy.entities else UNLISTED
        return {**e, "entity": entity, "field": UNLISTED}

    def close(self) -> None:
        """Close the store's connections and the log."""
        self.store.close()
        if self.log is not None and hasattr(self.log, "close"):
            self.log.close()

    def __enter__(self) -> Guard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncGuard:
    """:class:`Guard` for asyncio applications: ``decision = await gate.run(payload, principal)``.

    The gate is a :class:`Guard` (same stages, lint cache, policy, log and metrics) whose store is an
    :class:`~guard.records.store.AsyncRecordStore`: claims are read through SQLAlchemy's asyncio engine, and the
    lint stages (the grammar and the classifier, milliseconds to a second for a new template) run in a worker
    thread, so the event loop stays free. Parsing (bounded by the payload limits), a lint-cache hit and the
    comparisons stay on the loop: a thread hop would cost more than they do.
    The decision comes from the same :func:`_process` as Guard's, so both gates decide alike.

    Building it compiles the grammar and loads the classifier (about a second: do it at start-up, or in a
    thread); :meth:`open` or ``async with`` reflects the database.

    >>> # async with AsyncGuard("policy.yaml", "postgresql+psycopg://app@db/records", domain="orders") as gate:
    >>> #     decision = await gate.run(payload_json, principal="cus_1042")
    """

    def __init__(
        self,
        policy: Policy | str | Path | dict[str, Any],
        db: str | Any,
        *,
        domain: str | None = None,
        config: Any = None,
        log: Any = None,
        metrics: Any = None,
        classifier: Any = "auto",
        grammar_dir: Any = None,
        limits: Limits | None = None,
        statement_timeout: float = 5.0,
        log_payloads: bool = False,
        lint_cache_size: int = 1024,
    ) -> None:
        from guard.records.store import AsyncRecordStore

        pol = load_policy(policy if not isinstance(policy, str) or "\n" in policy else Path(policy))
        store = (
            db if isinstance(db, AsyncRecordStore) else AsyncRecordStore(db, pol, statement_timeout=statement_timeout)
        )
        self.gate = Guard(
            store.policy,
            store,
            domain=domain,
            config=config,
            log=log,
            metrics=metrics,
            classifier=classifier,
            grammar_dir=grammar_dir,
            limits=limits,
            log_payloads=log_payloads,
            lint_cache_size=lint_cache_size,
        )
        self.store: AsyncRecordStore = store

    @property
    def policy(self) -> Policy:
        """The gate's policy."""
        return self.gate.policy

    @property
    def domain(self) -> str | None:
        """The gate's sentence library."""
        return self.gate.domain

    async def open(self, *, warm: bool = True) -> AsyncGuard:
        """Reflect the database now (otherwise at the first run); a policy that does not match it is an error.

        ``warm`` also does now, in a worker thread, what the first run would do once: load the locale data
        values are rendered with and run the lint stages on a sentence, so the first request costs what the
        hundredth does.
        """
        await self.store.open()
        if warm:
            await asyncio.to_thread(self._warm)
        return self

    def _warm(self) -> None:
        from babel import Locale

        g = self.gate
        Locale.parse(g.policy.locale).date_formats  # noqa: B018 (loads the locale's data, kept by Babel)
        run_stages(LintContext("Thank you.", g.domain or "", {}, g.grammar_dir), g.stages)

    async def _lint(
        self, payload: Payload | str | bytes | dict[str, Any], bound: StageBound = _as_is
    ) -> tuple[Payload, LintResult]:
        """Parse (bounded by the payload limits) and bind on the loop; the stages, when the template is not in
        the lint cache, in a worker thread through ``bound``.

        A cache hit never awaits, so no time limit could interrupt it: it is not put through ``bound`` at all
        (a limit costs a timer scheduled and cancelled, and a coroutine, on every run)."""
        p = load_payload(payload, self.gate.limits)
        types = {c.key: c.type.value for c in p.claims}
        found = self._lint_hit(p.answer_template, types)
        if found is None:
            found = await bound("lint", self._lint_stages(p.answer_template, types, p))
        return p, shape_stage.bind(found, p.claims)

    async def _lint_template(self, template: str, slot_types: Mapping[str, str], payload: Payload | None) -> LintResult:
        found = self._lint_hit(template, slot_types)
        return found if found is not None else await self._lint_stages(template, slot_types, payload)

    def _lint_hit(self, template: str, slot_types: Mapping[str, str]) -> LintResult | None:
        """The cached result for the template (counted as a hit or a miss), or None."""
        g = self.gate
        found = g.lint_cache.get((g.domain, template, tuple(sorted(slot_types.items()))))
        if g.metrics is not None:
            g.metrics.observe_lint_cache(found is not None)
        return None if found is None else _cached(found)

    async def _lint_stages(self, template: str, slot_types: Mapping[str, str], payload: Payload | None) -> LintResult:
        """The stages in a worker thread; the result goes into the lint cache."""
        g = self.gate
        ctx = LintContext(template, g.domain or "", dict(slot_types), g.grammar_dir, payload=payload)
        found = await asyncio.to_thread(run_stages, ctx, g.stages)
        g.lint_cache.put((g.domain, template, tuple(sorted(slot_types.items()))), found)
        return found

    async def lint(self, payload: Payload | str | bytes | dict[str, Any]) -> LintResult:
        """The gate's stages on a payload's template, through the gate's lint cache."""
        return (await self._lint(payload))[1]

    async def lint_template(self, template: str, slot_types: Mapping[str, str]) -> LintResult:
        """The gate's stages on one template (in a worker thread unless cached), through the gate's lint cache."""
        return await self._lint_template(template, slot_types, None)

    async def run(
        self,
        payload: Payload | str | bytes | dict[str, Any],
        principal: Any = None,
        *,
        now: datetime | None = None,
        request_id: str | None = None,
        bound: StageBound = _as_is,
    ) -> Decision:
        """:meth:`Guard.run`, awaited, each stage through ``bound`` (see :class:`StageBound`). Raises only
        :class:`guard.errors.PayloadError` for a payload that cannot be read."""
        t0 = time.perf_counter()
        g = self.gate
        p, lint = await self._lint(payload, bound)
        steps = _processing(
            p,
            lint,
            g.modes,
            g.policy,
            g.store,
            principal=principal,
            now=now,
            request_id=request_id or secrets.token_hex(16),
        )
        decision: Decision = await bound("check", self._checked(steps))
        events = g._account(decision, p, lint, principal, t0)
        if events:
            g._log_failed(await asyncio.to_thread(_emit, g.log, events))
        return decision

    async def verify(
        self,
        payload: Payload | str | bytes | dict[str, Any],
        principal: Any = None,
        *,
        now: datetime | None = None,
        request_id: str | None = None,
        bound: StageBound = _as_is,
    ) -> Decision:
        """:func:`verify` (the pipeline without the prose stages) on this gate's policy and store, awaited: one
        ``"check"`` stage through ``bound``."""
        g = self.gate
        _p, _lint, steps = _verifying(payload, g.policy, g.store, principal, now, request_id, g.limits, None)
        decision: Decision = await bound("check", self._checked(steps))
        return decision

    async def _checked(self, steps: Generator[list[Read], Rows, Decision]) -> Decision:
        """``steps`` on the loop, their reads awaited; until the store has reflected the database (it was down at
        open), all of them through the greenlet bridge, where the reflection can connect."""
        store = self.store
        if not store.reflected:
            return cast(Decision, await store.call(drive, steps, store.read_many))
        return await adrive(steps, store.aread_many)

    async def aclose(self) -> None:
        """Close the store's connections and the log."""
        await self.store.aclose()
        if self.gate.log is not None and hasattr(self.gate.log, "close"):
            await asyncio.to_thread(self.gate.log.close)

    async def __aenter__(self) -> AsyncGuard:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


__all__ = [
    "Guard",
    "AsyncGuard",
    "GateConfig",
    "DomainConfig",
    "LintCache",
    "Mode",
    "load_gate_config",
    "verify",
    "regenerate_loop",
    "EventSink",
    "StageBound",
]

"""The pipeline: lint, check, decide, render and log one payload in a single call.

``Guard`` wires the stages together and holds what is expensive to build once
(the record store's statements, the compiled grammar, the classifier). Per
domain, a configuration file says which lint stages are enforced (a failing
template is refused before any database lookup), only reported, or off.
"""

from __future__ import annotations

import time
import secrets
from dataclasses import replace
from datetime import datetime
from enum import Enum
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from guard.records.checker import check
from guard.decision import Action, Decision, decide
from guard.errors import GuardError, PolicyError, Problem
from guard.findings import Finding, Severity
from guard.linting import LintContext, LintResult, format_stage, run_stages, shape_stage
from guard.payload import Limits, Payload, load_payload, unused_claims
from guard.records.formatting import to_json
from guard.records.policy import Policy, load_policy
from guard.linting.ratio import RatioThresholds, ratio_stage
from guard.records.store import RecordStore

class EventSink(Protocol):
    def emit(self, event: dict[str, Any]) -> None: ...


def claim_events(decision: Decision, *, domain: str | None = None, include_values: bool = False) -> list[dict]:
    """One log line per claim result of a decision (the decision's own line is the caller's: it knows the lint)."""
    out: list[dict[str, Any]] = []
    for r in decision.results:
        e: dict[str, Any] = {"event": "claim", "request_id": decision.request_id, "domain": domain,
                             "entity": r.entity, "field": r.field, "key": r.key, "type": r.type,
                             "status": r.status.value, "latency_ms": round(r.latency_ms, 3)}
        if include_values:
            e["claimed"] = r.claimed
            e["actual"] = to_json(r.actual)
        out.append(e)
    return out


def verify(payload: Payload | str | bytes | dict[str, Any], policy: Policy, store: RecordStore, *,
           principal: Any = None, now: datetime | None = None, request_id: str | None = None,
           limits: Limits | None = None, log: EventSink | None = None, domain: str | None = None) -> Decision:
    """Parse, check every claim, decide and render. Raises only PayloadError for an invalid payload.

    >>> # decision = verify(payload_json, policy, store, principal="cus_1")
    """
    p = load_payload(payload, limits)
    results = check(p, policy, store, principal=principal, now=now)
    decision = decide(p, results, policy, warnings=unused_claims(p), request_id=request_id)
    if log is not None:
        for e in claim_events(decision, domain=domain, include_values=bool(getattr(log, "include_values", False))):
            log.emit(e)
        log.emit({"event": "decision", "request_id": decision.request_id, "domain": domain,
                  "action": decision.action.value, "n_claims": len(p.claims),
                  "findings": [w.code for w in decision.warnings]})
    return decision


Generate = Callable[[Decision | None], Any]


def regenerate_loop(generate: Generate, policy: Policy, store: RecordStore, *, max_attempts: int = 3,
                    principal: Any = None, now: datetime | None = None,
                    verifier: Callable[..., Decision] | None = None) -> Decision:
    """Ask ``generate`` for a payload, feeding back the previous decision, until it verifies.

    ``generate(None)`` produces the first payload; ``generate(decision)`` gets the
    ``regenerate_from_facts`` decision (its ``facts`` and ``contradicted``) and
    tries again. After ``max_attempts`` without an answer the result is a
    ``refuse`` that says so. A refusal from the checker (not found, stale,
    unavailable) ends the loop at once: regenerating cannot fix those.
    """
    if max_attempts < 1:
        raise GuardError("max_attempts must be at least 1", location="regenerate_loop")
    run = verifier or (lambda p: verify(p, policy, store, principal=principal, now=now))
    previous: Decision | None = None
    for _ in range(max_attempts):
        decision = run(generate(previous))
        if decision.action is not Action.REGENERATE:
            return decision
        previous = decision
    assert previous is not None
    return Decision(Action.REFUSE, request_id=previous.request_id, results=previous.results,
                    message=f"I could not produce an answer that matches the records after {max_attempts} "
                            f"attempts, so I have not given one.",
                    unverified=previous.contradicted, warnings=previous.warnings)


STAGE_NAMES = ("format", "shape", "freetext", "ratio")
UNLISTED = "_unlisted"
"""The metric label for an entity or field a claim named that is not in the policy."""


class Mode(str, Enum):
    OFF = "off"
    REPORT = "report"
    ENFORCE = "enforce"


class DomainConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    stages: dict[str, Mode] = Field(default_factory=lambda: {"format": Mode.ENFORCE, "shape": Mode.OFF,
                                                             "freetext": Mode.ENFORCE, "ratio": Mode.REPORT})
    ratio: RatioThresholds = Field(default_factory=RatioThresholds)

    def mode(self, stage: str) -> Mode:
        return self.stages.get(stage, Mode.OFF)


class GateConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    default: DomainConfig = Field(default_factory=DomainConfig)
    domains: dict[str, DomainConfig] = Field(default_factory=dict)

    def for_domain(self, domain: str | None) -> DomainConfig:
        cfg = self.domains.get(domain or "", self.default)
        unknown = set(cfg.stages) - set(STAGE_NAMES)
        if unknown:
            raise PolicyError(f"unknown lint stage(s) {sorted(unknown)}; stages are {', '.join(STAGE_NAMES)}",
                              location=f"domains.{domain}.stages")
        if cfg.mode("format") is Mode.OFF:
            raise PolicyError("the format stage cannot be turned off: unsafe slots are never rendered",
                              location=f"domains.{domain}.stages.format")
        return cfg


def load_gate_config(source: str | Path | Mapping[str, Any] | GateConfig | None = None) -> GateConfig:
    """The per-domain stage settings: a YAML file, a mapping, or guard's shipped defaults."""
    if isinstance(source, GateConfig):
        return source
    where = "gate config"
    if source is None:
        text = (resources.files("guard") / "gate.yaml").read_text(encoding="utf-8")
        data: Any = yaml.safe_load(text)
    elif isinstance(source, Mapping):
        data = dict(source)
    else:
        where = str(source)
        try:
            data = yaml.safe_load(Path(source).read_text(encoding="utf-8"))
        except OSError as exc:
            raise PolicyError(f"cannot read the gate config: {exc.strerror}", location=where) from None
        except yaml.YAMLError as exc:
            raise PolicyError(f"the gate config is not valid YAML: {exc}", location=where) from None
    try:
        return GateConfig.model_validate(data or {})
    except ValidationError as exc:
        raise PolicyError("the gate config is invalid", location=where, problems=[
            Problem("config", e["msg"], ".".join(str(p) for p in e["loc"])) for e in exc.errors(include_url=False)
        ]) from None


_REASONS = {
    "format": "it uses a placeholder that is not allowed",
    "shape": "sentence {n} is not one of the approved sentence shapes",
    "freetext": "sentence {n} {what} outside the verified facts",
    "ratio": "it has too much text around its verified facts",
}
_FREETEXT = {"T301": "makes a comparison", "T302": "states a quantity", "T303": "states a cause"}


def lint_refusal(blocking: list[Finding]) -> str:
    """One sentence naming why the wording was refused, built from codes, never from the template."""
    parts: list[str] = []
    for f in blocking:
        template = _REASONS.get(f.stage, "its wording could not be checked")
        text = template.format(n=f.sentence + 1 if f.sentence >= 0 else "?",
                               what=_FREETEXT.get(f.code, "makes a claim"))
        if text not in parts:
            parts.append(text)
    return "I have not given this answer because " + "; ".join(parts) + "."


class Guard:
    """One gate in front of users.

    >>> # g = Guard("policy.yaml", "sqlite:///records.db", domain="orders", log="guard.jsonl")
    >>> # decision = g.run(payload_json, principal="cus_1042")
    """

    def __init__(self, policy: Policy | str | Path | Mapping[str, Any], db: str | RecordStore | Any, *,
                 domain: str | None = None, config: Any = None, log: Any = None, metrics: Any = None,
                 classifier: Any = "auto", grammar_dir: Any = None, limits: Limits | None = None,
                 statement_timeout: float = 5.0, log_payloads: bool = False) -> None:
        self.policy = load_policy(policy if not isinstance(policy, str) or "\n" in policy else Path(policy))
        self.store = db if isinstance(db, RecordStore) else RecordStore(db, self.policy,
                                                                          statement_timeout=statement_timeout)
        self.domain = domain
        self.config = load_gate_config(config).for_domain(domain)
        self.limits = limits or Limits()
        self.grammar_dir = grammar_dir
        if isinstance(log, (str, Path)):
            from guard.observe.events import EventLog

            log = EventLog(log)
        self.log = log
        self.log_payloads = log_payloads
        self.metrics = metrics
        self.stages: list[tuple[str, Any]] = [("format", format_stage)]
        if self.config.mode("shape") is not Mode.OFF:
            if domain is None:
                raise PolicyError("the shape stage needs a domain (orders, billing, account or your own)",
                                  location="domain")
            from guard.shapes import load_grammar

            load_grammar(domain, grammar_dir=grammar_dir)  # fail now, not at the first request
            self.stages.append(("shape", shape_stage))
        self.classifier = None
        if self.config.mode("freetext") is not Mode.OFF:
            from guard.linting.freetext import freetext_stage, load_classifier

            self.classifier = load_classifier() if classifier == "auto" else classifier
            self.stages.append(("freetext", freetext_stage(self.classifier)))
        if self.config.mode("ratio") is not Mode.OFF:
            self.stages.append(("ratio", ratio_stage(self.config.ratio)))

    def lint(self, payload: Payload | str | bytes | Mapping[str, Any]) -> LintResult:
        p = load_payload(payload, self.limits)  # a Payload built directly has skipped the slot and key checks
        ctx = LintContext(p.answer_template, self.domain or "", {c.key: c.type.value for c in p.claims},
                          self.grammar_dir, payload=p)
        return run_stages(ctx, self.stages)

    def _blocking(self, findings: list[Finding]) -> list[Finding]:
        return [f for f in findings if self.config.mode(f.stage) is Mode.ENFORCE
                and f.severity in (Severity.ERROR, Severity.WARNING) and f.code != "F108"]

    def run(self, payload: Payload | str | bytes | Mapping[str, Any], principal: Any = None, *,
            now: datetime | None = None, request_id: str | None = None) -> Decision:
        """Lint, then (unless an enforced stage failed) check, decide and render; log and count the result.

        Raises only :class:`guard.errors.PayloadError` for a payload that cannot be read.
        """
        t0 = time.perf_counter()
        rid = request_id or secrets.token_hex(16)
        p = load_payload(payload, self.limits)  # a Payload built directly has skipped the slot and key checks
        ctx = LintContext(p.answer_template, self.domain or "", {c.key: c.type.value for c in p.claims},
                          self.grammar_dir, payload=p)
        lint = run_stages(ctx, self.stages)
        warnings = tuple(f for f in lint.findings if f.code == "F108")
        findings = tuple(f for f in lint.findings if f.code != "F108")
        blocking = self._blocking(list(findings))
        if blocking:
            decision = Decision(Action.REFUSE, request_id=rid, message=lint_refusal(blocking),
                                unverified=(), warnings=warnings, findings=findings)
        else:
            results = check(p, self.policy, self.store, principal=principal, now=now)
            decision = replace(decide(p, results, self.policy, warnings=warnings, request_id=rid),
                               findings=findings)
        self._record(decision, p, ctx, (time.perf_counter() - t0) * 1000, principal)
        return decision

    def _record(self, decision: Decision, p: Payload, ctx: LintContext, latency_ms: float, principal: Any) -> None:
        if self.log is None and self.metrics is None:
            return
        from guard.linting.ratio import measure

        ratio = ctx.extra.get("ratio") or measure(p.answer_template)
        events: list[dict[str, Any]] = []
        if self.log_payloads and self.log is not None:
            events.append({"event": "payload", "request_id": decision.request_id, "domain": self.domain,
                           "principal": principal, "payload": p.model_dump(mode="json")})
        events += claim_events(decision, domain=self.domain,
                              include_values=bool(getattr(self.log, "include_values", False)))
        events.append({"event": "decision", "request_id": decision.request_id, "domain": self.domain,
                       "action": decision.action.value, "n_claims": len(p.claims), "n_slots": ratio.slots,
                       "prose_words": ratio.prose_words,
                       "prose_per_slot": None if ratio.prose_per_slot == float("inf") else
                       round(ratio.prose_per_slot, 3),
                       "findings": [f.code for f in (*decision.findings, *decision.warnings)],
                       "latency_ms": round(latency_ms, 3)})
        if self.log is not None:
            if hasattr(self.log, "emit_many"):
                self.log.emit_many(events)
            else:
                for e in events:
                    self.log.emit(e)
        if self.metrics is not None:
            for e in events:
                self.metrics.observe(self._metric_labels(e))

    def _metric_labels(self, e: dict[str, Any]) -> dict[str, Any]:
        """Metric labels come from the policy only: a model naming a new entity or field per request would
        otherwise add a time series per request, without bound."""
        if e.get("event") != "claim" or self.policy.field(e.get("entity", ""), e.get("field", "")) is not None:
            return e
        entity = e.get("entity") if e.get("entity") in self.policy.entities else UNLISTED
        return {**e, "entity": entity, "field": UNLISTED}

    def close(self) -> None:
        self.store.close()
        if self.log is not None and hasattr(self.log, "close"):
            self.log.close()

    def __enter__(self) -> "Guard":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


__all__ = ["Guard", "GateConfig", "DomainConfig", "Mode", "load_gate_config", "lint_refusal", "verify", "regenerate_loop",
           "claim_events"]

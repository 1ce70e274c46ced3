"""Check, decide and render one payload; and the bounded regenerate loop around a generator."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Callable, Protocol

from guard.checker import check
from guard.errors import GuardError
from guard.decide import Action, Decision, decide
from guard.payload import Limits, Payload, load_payload, unused_claims
from guard.policy import Policy
from guard.render import to_json
from guard.store import RecordStore


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


__all__ = ["verify", "regenerate_loop", "claim_events"]

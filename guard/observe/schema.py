"""The event schema: the one definition of what guard logs, for every producer and every reader.

Three events, one JSON object per line, each with ``event``, ``schema_version``,
``ts`` (UTC ISO 8601, added by :class:`guard.observe.events.EventLog` when the
producer leaves it out), ``request_id`` and ``domain``:

``payload``  (only with ``log_payloads``) the payload as received and the caller's principal, so an audit
             can re-check it.
``claim``    one per claim: entity, field, key, type, status, latency; ``claimed``/``actual`` only when the
             log opts in to values.
``decision`` one per payload: action, claim and slot counts, prose measures, finding codes, latency.

The records are ``TypedDict``s: producers build plain dicts (no cost per event),
mypy checks them, and :func:`validate` / :func:`json_schema` give the same
definition to tests, readers and other languages. A change that removes or
retypes a field raises :data:`SCHEMA_VERSION`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypeGuard, cast

from typing_extensions import TypedDict

from guard.errors import EventLogError

SCHEMA_VERSION = 1


class PayloadEvent(TypedDict):
    event: Literal["payload"]
    schema_version: int
    ts: NotRequired[str]
    request_id: str
    domain: str | None
    principal: Any
    payload: dict[str, Any]


class ClaimEvent(TypedDict):
    event: Literal["claim"]
    schema_version: int
    ts: NotRequired[str]
    request_id: str
    domain: str | None
    entity: str
    field: str
    key: str
    type: str
    status: Literal["confirmed", "contradicted", "not_found", "not_checkable", "stale", "unavailable"]
    latency_ms: float
    claimed: NotRequired[Any]
    actual: NotRequired[Any]


class DecisionEvent(TypedDict):
    event: Literal["decision"]
    schema_version: int
    ts: NotRequired[str]
    request_id: str
    domain: str | None
    action: Literal["answer", "refuse", "regenerate_from_facts"]
    n_claims: int
    n_slots: int
    prose_words: int
    prose_per_slot: float | None
    """None when there is prose and no slot (an infinite ratio has no JSON value)."""
    findings: list[str]
    """Codes of the lint findings and warnings, in the order reported."""
    latency_ms: float
    stage_ms: NotRequired[dict[str, float]]
    """Milliseconds per stage that ran for this decision: the lint stages by name (absent on a lint-cache hit)
    and ``check`` (the claims' check times, summed)."""


Event = PayloadEvent | ClaimEvent | DecisionEvent
EVENTS: dict[str, type[Any]] = {"payload": PayloadEvent, "claim": ClaimEvent, "decision": DecisionEvent}


def claim_event(
    *, request_id: str, domain: str | None, entity: str, field: str, key: str, type: str, status: str, latency_ms: float
) -> ClaimEvent:
    return cast(
        ClaimEvent,
        {
            "event": "claim",
            "schema_version": SCHEMA_VERSION,
            "request_id": request_id,
            "domain": domain,
            "entity": entity,
            "field": field,
            "key": key,
            "type": type,
            "status": status,
            "latency_ms": latency_ms,
        },
    )


def decision_event(
    *,
    request_id: str,
    domain: str | None,
    action: str,
    n_claims: int,
    n_slots: int,
    prose_words: int,
    prose_per_slot: float | None,
    findings: list[str],
    latency_ms: float,
    stage_ms: Mapping[str, float] | None = None,
) -> DecisionEvent:
    event = cast(
        DecisionEvent,
        {
            "event": "decision",
            "schema_version": SCHEMA_VERSION,
            "request_id": request_id,
            "domain": domain,
            "action": action,
            "n_claims": n_claims,
            "n_slots": n_slots,
            "prose_words": prose_words,
            "prose_per_slot": prose_per_slot,
            "findings": findings,
            "latency_ms": latency_ms,
        },
    )
    if stage_ms:
        event["stage_ms"] = dict(stage_ms)
    return event


def payload_event(*, request_id: str, domain: str | None, principal: Any, payload: dict[str, Any]) -> PayloadEvent:
    return {
        "event": "payload",
        "schema_version": SCHEMA_VERSION,
        "request_id": request_id,
        "domain": domain,
        "principal": principal,
        "payload": payload,
    }


# -- reading: tolerant views for readers of logs written by other versions or by hand --
PAYLOAD: Literal["payload"] = "payload"
CLAIM: Literal["claim"] = "claim"
DECISION: Literal["decision"] = "decision"


def kind(event: Mapping[str, Any]) -> str | None:
    """The event's kind, or None for a line that names none."""
    value = event.get("event")
    return value if isinstance(value, str) else None


def as_claim(event: Mapping[str, Any]) -> ClaimEvent:
    """A claim event read through its record, so readers name only keys the schema defines (mypy checks them).

    Nothing is validated: readers use ``.get`` and treat a missing or mistyped key as unknown.
    """
    return cast(ClaimEvent, event)


def as_decision(event: Mapping[str, Any]) -> DecisionEvent:
    """A decision event read through its record; see :func:`as_claim`."""
    return cast(DecisionEvent, event)


def as_payload(event: Mapping[str, Any]) -> PayloadEvent:
    """A payload event read through its record; see :func:`as_claim`."""
    return cast(PayloadEvent, event)


def finite(value: object) -> TypeGuard[float]:
    """A JSON number that is a real measure: not a bool, not NaN or infinite, not an int beyond any float."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


_ADAPTERS: dict[str, Any] = {}


def _adapter(kind: str) -> Any:
    adapter = _ADAPTERS.get(kind)
    if adapter is None:
        from pydantic import TypeAdapter

        adapter = _ADAPTERS[kind] = TypeAdapter(EVENTS[kind])
    return adapter


def validate(event: Any) -> Event:
    """The event, checked against its record (strict JSON types, no unknown kind); EventLogError otherwise."""
    from pydantic import ValidationError

    name = event.get("event") if isinstance(event, dict) else None
    if name not in EVENTS:
        raise EventLogError(f"unknown event kind {name!r}; kinds are {', '.join(EVENTS)}", location="event")
    if event.get("schema_version") != SCHEMA_VERSION:
        raise EventLogError(
            f"schema_version {event.get('schema_version')!r} is not {SCHEMA_VERSION}", location="schema_version"
        )
    extra = set(event) - set(EVENTS[name].__annotations__)
    if extra:
        raise EventLogError(f"unknown keys {sorted(extra)} in a {name} event", location=name)
    try:
        _adapter(name).validate_python(event, strict=True)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise EventLogError(f"a {name} event is invalid: {first['msg']}", location=where) from None
    return cast(Event, event)


def json_schema() -> dict[str, Any]:
    """JSON Schema of a log line (any of the three events), for readers outside Python."""
    from pydantic import TypeAdapter

    schema: dict[str, Any] = TypeAdapter(Event).json_schema()
    schema["title"] = f"guard event (schema_version {SCHEMA_VERSION})"
    return schema


__all__ = [
    "SCHEMA_VERSION",
    "PayloadEvent",
    "ClaimEvent",
    "DecisionEvent",
    "Event",
    "EVENTS",
    "claim_event",
    "decision_event",
    "payload_event",
    "PAYLOAD",
    "CLAIM",
    "DECISION",
    "kind",
    "as_claim",
    "as_decision",
    "as_payload",
    "finite",
    "validate",
    "json_schema",
]

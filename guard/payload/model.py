"""The model's payload: an answer template with ``{slot}`` placeholders and typed claims.

Everything here runs before any database access; every problem with a payload
is reported at once, with where it is.
"""

from __future__ import annotations

import json
import math
from enum import Enum
from operator import attrgetter
from typing import Any

import regex
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, ValidationError
from pydantic_core import ErrorDetails

from guard.errors import PayloadError, Problem
from guard.findings import Finding, Severity
from guard.payload.limits import Limits
from guard.payload.slots import NAME, scan_template, unclaimed_slots


class ClaimType(str, Enum):
    """The type of a claimed value: decides how it is parsed, compared and rendered."""

    IDENTIFIER = "identifier"
    STRING = "string"
    INTEGER = "integer"
    DECIMAL = "decimal"
    MONEY = "money"
    DATE = "date"
    TIMESTAMP = "timestamp"
    ENUM = "enum"
    BOOLEAN = "boolean"


Scalar = StrictBool | StrictInt | StrictFloat | StrictStr | None


class Claim(BaseModel):
    """One fact the model states: which field of which record, and the value it says it holds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: StrictStr = Field(min_length=1, max_length=64)
    type: ClaimType
    entity: StrictStr = Field(min_length=1, max_length=128)
    entity_id: StrictStr | StrictInt = Field(union_mode="left_to_right")
    field: StrictStr = Field(min_length=1, max_length=128)
    value: Scalar


class Payload(BaseModel):
    """What a model writes instead of prose: a template with slots and the claims that fill them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    answer_template: StrictStr
    claims: list[Claim]

    def claim(self, key: str) -> Claim:
        """The claim with this key; KeyError when there is none."""
        for c in self.claims:
            if c.key == key:
                return c
        raise KeyError(key)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
"""Built once: ``json.loads(data, parse_constant=...)`` builds a decoder and its scanner on every call (about a
tenth of parsing a typical payload). Shared across threads as the ``json`` module shares its default one."""


def _loads(data: str | bytes) -> Any:
    """``json.loads(data, parse_constant=_reject_constant)`` on the shared decoder, with json.loads' own
    preparation of the input (a BOM refused, bytes decoded by their detected encoding)."""
    if isinstance(data, str):
        if data.startswith("\ufeff"):
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", data, 0)
    else:
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError(f"the JSON object must be str, bytes or bytearray, not {data.__class__.__name__}")
        data = data.decode(json.detect_encoding(data), "surrogatepass")
    return _DECODER.decode(data)


def _loc(err: ErrorDetails, raw: Any) -> str:
    parts = [str(p) for p in err.get("loc", ())]
    if len(parts) >= 2 and parts[0] == "claims" and parts[1].isdigit():
        idx = int(parts[1])
        where = f"claims[{idx}]"
        try:
            key = raw["claims"][idx]["key"]
            if isinstance(key, str) and NAME.fullmatch(key):
                where += f" (key '{key}')"
        except (KeyError, IndexError, TypeError):
            pass
        rest = [p for p in parts[2:] if not p.startswith(("str", "int", "bool", "float", "none", "function"))]
        return where + ("." + ".".join(rest) if rest else "")
    return ".".join(parts) or "payload"


_UNION_MESSAGES = {
    "value": "value must be a JSON string, number, boolean or null",
    "entity_id": "entity_id must be a string or an integer",
}


def _schema_problems(exc: ValidationError, raw: Any) -> list[Problem]:
    """One problem per location: a union's per-member complaints become one sentence."""
    out: dict[str, Problem] = {}
    for e in exc.errors(include_url=False):
        where = _loc(e, raw)
        last = str(e["loc"][2]) if len(e["loc"]) > 2 and e["loc"][0] == "claims" else ""
        msg = _UNION_MESSAGES.get(last, e["msg"]) if len(e["loc"]) > 3 else e["msg"]
        if e["type"] == "missing":
            msg = "this key is required"
        elif e["type"] == "extra_forbidden":
            msg = "unknown key; allowed keys are " + (
                "key, type, entity, entity_id, field, value" if e["loc"][0] == "claims" else "answer_template, claims"
            )
        out.setdefault(where, Problem("schema", msg, where))
    return list(out.values())


def _parse_json(data: str | bytes, limits: Limits) -> Any:
    size = len(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
    if size > limits.max_bytes:
        raise PayloadError(f"the payload is {size} bytes; the limit is {limits.max_bytes}", location="payload")
    try:
        return _loads(data)
    except json.JSONDecodeError as exc:
        raise PayloadError(
            f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            location=f"line {exc.lineno}, column {exc.colno}",
        ) from None
    except (ValueError, RecursionError, UnicodeDecodeError) as exc:
        raise PayloadError(f"invalid JSON: {exc}", location="payload") from None


def _check_limits(raw: dict[str, Any], limits: Limits) -> list[Problem]:
    problems: list[Problem] = []
    template = raw.get("answer_template")
    if isinstance(template, str) and len(template) > limits.max_template_chars:
        problems.append(
            Problem(
                "limit",
                f"the template has {len(template)} characters; the limit is {limits.max_template_chars}",
                "answer_template",
            )
        )
    claims = raw.get("claims")
    if isinstance(claims, list):
        if len(claims) > limits.max_claims:
            problems.append(Problem("limit", f"{len(claims)} claims; the limit is {limits.max_claims}", "claims"))
        else:
            for i, c in enumerate(claims):
                if not isinstance(c, dict):
                    continue
                v = c.get("value")
                if isinstance(v, str) and len(v) > limits.max_value_chars:
                    problems.append(
                        Problem(
                            "limit",
                            f"value has {len(v)} characters; the limit is {limits.max_value_chars}",
                            f"claims[{i}].value",
                        )
                    )
                if isinstance(v, float) and not math.isfinite(v):
                    problems.append(Problem("value", "value must be a finite number", f"claims[{i}].value"))
                eid = c.get("entity_id")
                if isinstance(eid, str) and len(eid) > limits.max_entity_id_chars:
                    problems.append(
                        Problem(
                            "limit",
                            f"entity_id has {len(eid)} characters; the limit is {limits.max_entity_id_chars}",
                            f"claims[{i}].entity_id",
                        )
                    )
    return problems


_SURROGATE = regex.compile(r"[\ud800-\udfff]")


_CLAIM_TEXTS = attrgetter("key", "entity", "entity_id", "field", "value")


def _surrogates(payload: Payload) -> list[Problem]:
    """Lone surrogates (JSON ``"\\ud800"``) are not text: they cannot be encoded, so logging or showing them fails.

    One search over every field's text joined comes first (a code point is one character of a Python string, so
    joining neither makes nor hides one); only a payload that has one is searched field by field, to say where:
    21 searches for a payload of four claims cost a third of loading it."""
    texts: list[Any] = [payload.answer_template]
    for c in payload.claims:
        texts.extend(_CLAIM_TEXTS(c))
    if not _SURROGATE.search("".join(t for t in texts if isinstance(t, str))):
        return []
    fields = [("answer_template", payload.answer_template)]
    for i, c in enumerate(payload.claims):
        fields += [(f"claims[{i}].{k}", getattr(c, k)) for k in ("key", "entity", "entity_id", "field", "value")]
    out = []
    for where, text in fields:
        m = _SURROGATE.search(text) if isinstance(text, str) else None
        if m:
            out.append(
                Problem(
                    "unicode",
                    f"lone surrogate U+{ord(m.group()):04X} at character {m.start() + 1}; text must be valid Unicode",
                    where,
                )
            )
    return out


def load_payload(data: str | bytes | dict[str, Any] | Payload, limits: Limits | None = None) -> Payload:
    """Parse and validate a payload; every problem is reported at once in a PayloadError.

    Checks JSON, keys, types, limits, claim keys, duplicate keys, slot syntax
    and that every slot has a claim. A claim no slot uses is not an error: see
    :func:`unused_claims`.
    """
    limits = limits or Limits()
    if isinstance(data, Payload):
        raw: Any = data.model_dump(mode="json")
    elif isinstance(data, (str, bytes, bytearray)):
        raw = _parse_json(bytes(data) if isinstance(data, bytearray) else data, limits)
    else:
        raw = data
    if not isinstance(raw, dict):
        raise PayloadError("the payload must be a JSON object with answer_template and claims", location="payload")
    problems = _check_limits(raw, limits)
    if problems:
        raise PayloadError("the payload exceeds a limit", problems=problems)
    try:
        payload = Payload.model_validate(raw)
    except ValidationError as exc:
        problems = _schema_problems(exc, raw)
        raise PayloadError("the payload does not match the schema", problems=problems) from None
    except (RecursionError, ValueError, TypeError) as exc:
        raise PayloadError(f"the payload could not be read: {exc}", location="payload") from None

    problems = _surrogates(payload)
    seen: dict[str, int] = {}
    for i, c in enumerate(payload.claims):
        if not NAME.fullmatch(c.key):
            problems.append(
                Problem(
                    "key",
                    "a claim key must be letters, digits and underscores, starting with a letter or _",
                    f"claims[{i}].key",
                )
            )
        elif c.key in seen:
            problems.append(
                Problem("duplicate", f"key '{c.key}' is also used by claims[{seen[c.key]}]", f"claims[{i}].key")
            )
        else:
            seen[c.key] = i
    slots, findings = scan_template(payload.answer_template)
    problems.extend(Problem.from_finding(f) for f in [*findings, *unclaimed_slots(slots, seen)])
    if problems:
        raise PayloadError("the payload was rejected", problems=problems)
    return payload


def unused_claims(payload: Payload) -> list[Finding]:
    """A warning for every claim that no slot uses (it would be checked but never shown)."""
    used = {s.name for s in scan_template(payload.answer_template)[0]}
    return [
        Finding.make("F108", f"claim '{c.key}' is not used by any slot", severity=Severity.WARNING, data={"key": c.key})
        for c in payload.claims
        if c.key not in used
    ]


__all__ = ["ClaimType", "Claim", "Payload", "Limits", "load_payload", "unused_claims"]

"""A JSON Schema for payloads under a policy, for the structured-output features of model APIs.

Each claim variant pins an (entity, field) pair to the type the policy gives
it, so a schema-following model cannot name a field outside the whitelist or
mistype it.
"""

from __future__ import annotations

from typing import Any

from guard.records.policy import FieldPolicy, Policy
from guard.records.types import TYPES


def _value(fp: FieldPolicy) -> dict[str, Any]:
    """The type's hint, with an enum's canonical values and aliases spelt out."""
    hint = dict(TYPES[fp.type].schema)
    if fp.aliases:
        hint["examples"] = sorted({v for canon, alts in fp.aliases.items() for v in (canon, *alts)})
    return {"anyOf": [hint, {"type": "null"}]}


def payload_schema(policy: Policy) -> dict[str, Any]:
    """JSON Schema of a payload whose claims can only name the policy's entities and fields."""
    variants = []
    for ename, ent in sorted(policy.entities.items()):
        for fname, fp in sorted(ent.fields.items()):
            desc = fp.label or fname.replace("_", " ")
            if fp.currency:
                desc += f" in {fp.currency} (major units, e.g. 12.50)"
            if fp.unit:
                desc += f" in {fp.unit}"
            variants.append(
                {
                    "type": "object",
                    "description": f"{ename}.{fname}: {desc}",
                    "properties": {
                        "key": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,63}$"},
                        "type": {"const": fp.type.value},
                        "entity": {"const": ename},
                        "entity_id": {"type": ["string", "integer"]},
                        "field": {"const": fname},
                        "value": _value(fp),
                    },
                    "required": ["key", "type", "entity", "entity_id", "field", "value"],
                    "additionalProperties": False,
                }
            )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "guard payload",
        "type": "object",
        "properties": {
            "answer_template": {
                "type": "string",
                "description": "The answer with a plain {key} placeholder wherever a fact goes.",
            },
            "claims": {"type": "array", "items": {"anyOf": variants}},
        },
        "required": ["answer_template", "claims"],
        "additionalProperties": False,
    }


__all__ = ["payload_schema"]

"""Hypothesis strategies for hostile payloads and templates.

Attacker-controlled strings carry the marker :data:`MARK` so a test can
assert that no model string ever reaches a rendered answer or a refusal: the
demo database and the template prose generated here never contain it.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from guard import demo
from guard.payload import ClaimType

MARK = "QZX"

CONFUSABLES = ["\u0430", "\u043e", "\u0435", "\u03bf", "\uff10", "\uff4f", "\u2134", "\u0131", "\u1d0f", "\u0261"]
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\ufeff", "\u2060", "\u00ad", "\u180e"]
BIDI = ["\u202e", "\u202d", "\u202b", "\u200f", "\u200e", "\u2066", "\u2067", "\u2069"]
CONTROL = ["\x00", "\x1b", "\r", "\n", "\t", "\x7f", "\u2028", "\u2029", "\x85"]
SQL = [
    "' OR '1'='1",
    "1; DROP TABLE orders; --",
    '" OR 1=1 --',
    "ord_88431' UNION SELECT password_hash FROM customers --",
    "%' --",
    "\\'; DELETE FROM orders; --",
    "*/ SELECT 1 /*",
]
FORMAT = [
    "{x.__class__}",
    "{x[0]}",
    "{x:>2147483648}",
    "{0}",
    "{}",
    "{x!r}",
    "{{",
    "}}",
    "{",
    "}",
    "{x.__init__.__globals__}",
]
SPECIAL = CONFUSABLES + INVISIBLE + BIDI + CONTROL

odd_char = st.sampled_from(SPECIAL)
any_char = st.characters(codec="utf-8")
hostile_text = st.lists(st.one_of(any_char, odd_char, st.sampled_from(SQL + FORMAT)), max_size=12).map("".join)
marked_text = st.builds(lambda a, b: a + MARK + b, hostile_text, hostile_text)
"""A model-supplied string that must never be shown: it carries the marker."""

huge_int = st.one_of(
    st.integers(min_value=-(10**40), max_value=10**40), st.sampled_from([2**63, -(2**63) - 1, 10**18, 2**31, 2**53 + 1])
)
odd_float = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([1e308, -0.0, 5e-324, 1299.0, 4.2, 4.23])
)

TYPE_SAMPLES: dict[str, list[Any]] = {
    "identifier": ["ord_88431", "ORD_88431", "ord_88431 ", "ord_8843\u0031\u200b", "cus_1042"],
    "string": ["Ada Lovelace", "ada lovelace", "Ada\u00a0Lovelace", "\u0410da Lovelace"],
    "integer": ["3", "3.5", " 3 ", "1,000", "\uff13", True, False, 3, 2**63, -(2**63) - 1, 10**18],
    "decimal": [
        "4.2",
        "4.2 kg",
        "4,2",
        "4.25kg",
        "1e400",
        "NaN",
        "-inf",
        "sNaN",
        "1E999999999",
        "-1e-999999999",
        4.2,
        4.23,
        1e308,
        -0.0,
        5e-324,
    ],
    "money": [
        "\u00a31,299.00",
        "1299",
        "GBP 1,299",
        "\u00a31.299,00",
        "\u00a51299",
        "1299.001",
        "\u00a3-0",
        "1e9999",
        "inf",
        "-inf",
        "NaN",
        "sNaN",
        "1E999999999",
        1299,
        1299.0,
        129900,
        2**53 + 1,
    ],
    "date": [
        "2026-07-30",
        "2026-07-29",
        "30 July 2026",
        "2026-02-30",
        "0000-00-00",
        "9999-12-31",
        "2026-07-30T00:00:00+09:00",
        "2026-13-01",
    ],
    "timestamp": [
        "2026-07-29T23:40:00Z",
        "2026-07-29T23:40:00",
        "2026-07-29T23:40:00+14:00",
        "not a time",
        "2026-07-29T24:00:00Z",
    ],
    "enum": ["shipped", "SHIPPED", "Dispatched", "delivered", "\u017fhipped", "shipped\u200b", "gold", "premium"],
    "boolean": [True, False, "true", "yes", 0, 1, "no"],
}
"""Fixed values of every claim type, hostile spellings included; tests pair every type with all of them."""
NUMERIC = {"integer": huge_int, "decimal": odd_float, "money": st.one_of(huge_int, odd_float)}
TYPE_VALUES: dict[str, st.SearchStrategy[Any]] = {
    t: st.one_of(st.sampled_from(v), NUMERIC[t]) if t in NUMERIC else st.sampled_from(v)
    for t, v in TYPE_SAMPLES.items()
}
any_type_value = st.one_of(*TYPE_VALUES.values(), st.none(), hostile_text, marked_text)

POLICY = demo.policy()
ORDER_IDS = [demo.order_id(i) for i in range(0, 300, 7)] + ["ord_88431", "ord_88432"]


def prose() -> st.SearchStrategy[str]:
    """Template prose: ordinary words, escaped braces and odd characters, never the marker."""
    words = st.sampled_from(
        [
            "Your",
            "order",
            "shipped",
            "on",
            "and",
            "is",
            "expected",
            "to",
            "arrive",
            ".",
            ",",
            " ",
            "{{",
            "}}",
            "items",
            "The",
            "total",
            "is",
            "tomorrow",
            "refund",
            "\u00e9",
        ]
    )
    return (
        st.lists(st.one_of(words, odd_char, any_char.filter(lambda c: c not in "{}")), max_size=8)
        .map(lambda xs: "".join(xs))
        .filter(lambda s: MARK not in s)
    )


@st.composite
def claims(draw: Any, key: str) -> dict[str, Any]:
    """One claim: mostly on whitelisted fields with their own type, but any type and any other type's values."""
    policy = POLICY
    entity = draw(
        st.one_of(
            st.sampled_from(["order"] * 6 + ["customer"] * 2),
            marked_text,
            st.sampled_from(["orders", "customers", "Order", "оrder"]),
        )
    )
    ent = policy.entities.get(entity)
    if ent is not None:
        field = draw(
            st.one_of(
                st.sampled_from(sorted(ent.fields) * 4),
                marked_text,
                st.sampled_from(["password_hash", "customer_id", "updated_at", "__id__"]),
            )
        )
    else:
        field = draw(st.one_of(st.sampled_from(["id", "status"]), marked_text))
    fp = ent.fields.get(field) if ent is not None else None
    all_types = [t.value for t in ClaimType]
    ctype = draw(st.sampled_from(([fp.type.value] * len(all_types) if fp else []) + all_types))
    if entity == "customer":
        ids = st.sampled_from([demo.customer_id(i) for i in range(0, 100, 9)] + ["cus_1042"])
    else:
        ids = st.sampled_from(ORDER_IDS)
    entity_id = draw(st.one_of(ids, ids, marked_text, huge_int, st.sampled_from(SQL)))
    value = draw(st.one_of(TYPE_VALUES[ctype], any_type_value))
    return {"key": key, "type": ctype, "entity": entity, "entity_id": entity_id, "field": field, "value": value}


@st.composite
def payloads(draw: Any, max_claims: int = 4) -> dict[str, Any]:
    n = draw(st.integers(min_value=0, max_value=max_claims))
    keys = [f"k{i}" for i in range(n)]
    cs = [draw(claims(k)) for k in keys]
    parts: list[str] = []
    for k in keys:
        parts.append(draw(prose()))
        if draw(st.integers(0, 9)) > 0:
            parts.append("{" + k + "}")
    parts.append(draw(prose()))
    if draw(st.integers(0, 19)) == 0:
        parts.insert(draw(st.integers(0, len(parts))), draw(st.sampled_from(FORMAT)))
    return {"answer_template": "".join(parts), "claims": cs}


json_leaf = st.one_of(st.none(), st.booleans(), huge_int, odd_float, hostile_text, marked_text)


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.lists(inner, max_size=4), st.dictionaries(hostile_text, inner, max_size=4))


any_json = st.recursive(json_leaf, _containers, max_leaves=30)


@st.composite
def mutated_payloads(draw: Any) -> Any:
    """A valid payload with one part replaced by arbitrary JSON (wrong types, extra keys, deep values)."""
    base = draw(payloads(max_claims=3))
    where = draw(st.sampled_from(["root", "template", "claims", "claim", "claim_key", "extra", "none"]))
    junk = draw(any_json)
    if where == "root":
        return junk
    if where == "template":
        base["answer_template"] = junk
    elif where == "claims":
        base["claims"] = junk
    elif where == "claim" and base["claims"]:
        base["claims"][0] = junk
    elif where == "claim_key" and base["claims"]:
        base["claims"][0][draw(st.sampled_from(["key", "type", "entity", "entity_id", "field", "value"]))] = junk
    elif where == "extra":
        base[draw(hostile_text)] = junk
    return base


def as_json_text(draw_value: Any) -> str:
    return json.dumps(draw_value, allow_nan=True, ensure_ascii=False)


deep_json = st.integers(min_value=1, max_value=200_000).map(lambda n: "[" * n + "]" * n)
"""Nesting deep enough to exhaust a recursive parser."""

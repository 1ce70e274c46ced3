"""The long fuzzing run: hypothesis with a fixed, large example budget (``make fuzz``).

Deselected from the normal suite by the ``fuzz`` marker. The budget per
target is ``GUARD_FUZZ_EXAMPLES`` (default 20,000). Targets: the template
parser (``scan_template``, ``template_pieces``, ``substitute``) against
``str.format`` as an independent oracle, the lint facade, the payload loader,
and the whole check on the suite's SQLite database.
"""

from __future__ import annotations

import contextlib
import os
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guard import demo
from guard.errors import GuardError, PayloadError
from guard.linting import lint
from guard.payload import NAME, load_payload, scan_template, substitute, template_pieces
from guard.pipeline import verify

from .strategies import FORMAT, SPECIAL, any_json, as_json_text, hostile_text, mutated_payloads, payloads
from .test_properties import assert_sound, mix_in_truth

pytestmark = pytest.mark.fuzz

EXAMPLES = int(os.environ.get("GUARD_FUZZ_EXAMPLES", "20000"))
FUZZ = settings(
    max_examples=EXAMPLES, deadline=None, database=None, derandomize=False, suppress_health_check=list(HealthCheck)
)
SLOWER = settings(FUZZ, max_examples=max(1, EXAMPLES // 4))

brace_heavy = st.text(alphabet=st.sampled_from(list("{}{}ab_x0.[]:!>rs ") + SPECIAL), max_size=40)
templates = st.one_of(
    brace_heavy,
    st.text(max_size=80),
    hostile_text,
    st.lists(
        st.one_of(st.sampled_from(FORMAT + ["{a}", "{b}", "{_x1}", "{{a}}", " "]), st.text(max_size=4)), max_size=10
    ).map("".join),
)


@FUZZ
@given(template=templates)
def test_fuzz_template_parser_agrees_with_str_format(template):
    slots, findings = scan_template(template)
    last = 0
    for s in slots:
        assert last <= s.start < s.end <= len(template)
        assert template[s.start : s.end] == "{" + s.name + "}" and NAME.fullmatch(s.name)
        last = s.end
    for f in findings:
        assert 0 <= f.start <= f.end <= len(template) and f.code.startswith("F1")
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError:
        assert findings, "str.format rejects this template but guard accepted it"
        fields = None
    if fields is not None and any(
        name is not None and (not NAME.fullmatch(name) or spec or conv) for _, name, spec, conv in fields
    ):
        assert findings, "str.format would evaluate an unsafe field that guard accepted"
    if findings:
        with pytest.raises(PayloadError):
            template_pieces(template)
        return
    pieces = template_pieces(template)
    rebuilt = "".join(
        template[p.slot.start : p.slot.end] if p.slot else p.text.replace("{", "{{").replace("}", "}}") for p in pieces
    )
    assert rebuilt == template
    values = {s.name: f"<v{i}>" for i, s in enumerate(slots)}
    assert substitute(template, values) == template.format(**values)


@FUZZ
@given(
    template=templates,
    domain=st.sampled_from(["orders", "billing", "account"]),
    types=st.dictionaries(
        st.sampled_from(["a", "b", "_x1", "order_id", "eta"]),
        st.sampled_from(["identifier", "date", "money", "integer", "enum", "nonsense"]),
        max_size=3,
    ),
)
def test_fuzz_lint(template, domain, types):
    try:
        r = lint(template, domain=domain, slot_types=types)
    except GuardError:
        return
    for f in r.findings:
        assert 0 <= f.start <= f.end <= len(template)


@FUZZ
@given(data=st.one_of(any_json, mutated_payloads(), st.binary(max_size=200), st.text(max_size=200)))
def test_fuzz_payload_loader(data):
    forms = [data] if isinstance(data, (bytes, str)) else [data, as_json_text(data)]
    for form in forms:
        with contextlib.suppress(PayloadError):
            load_payload(form)


@SLOWER
@given(payload=payloads(), principal=st.sampled_from([demo.PRINCIPAL, None, "cus_1001"]), data=st.data())
def test_fuzz_check_is_sound(records, payload, principal, data):
    payload = mix_in_truth(data, records, payload, principal)
    try:
        d = verify(payload, records.policy, records.store, principal=principal, now=demo.NOW)
    except PayloadError:
        return
    assert_sound(records, payload, d, principal)

"""Issue 18 #24: a hypothesis property for each class of defect the outside attack found, beside its examples.

Each property runs in the ordinary suite at a small budget; the ``fuzz`` marker runs the ones that guard the
public API at ``GUARD_FUZZ_EXAMPLES`` (``make fuzz``).
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guard import demo
from guard.decision import Action
from guard.errors import CorpusError, PayloadError
from guard.freetext.corpus import read_corpus
from guard.freetext.featurize import SLOT_CHAR, mask_slots
from guard.observe.events import EventLog
from guard.payload.slots import format_characters, scan_template
from guard.pipeline import Guard, verify
from guard.records.checker import Status
from guard.textutil import split_lines

from .strategies import SPECIAL, hostile_text, payloads
from .test_hardening_text import grows_linearly

PROPS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
FUZZ_EXAMPLES = int(os.environ.get("GUARD_FUZZ_EXAMPLES", "20000"))
FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
GATE_OPEN = {
    "domains": {"orders": {"stages": {"format": "enforce", "shape": "off", "freetext": "off", "ratio": "report"}}}
}
BRACEY = st.text(alphabet=st.sampled_from(list("{}ab_0 .:![]") + SPECIAL), max_size=60)


# -- 1: the classifier masks exactly the payload's slots ------------------------------------------------------
@PROPS
@given(text=st.one_of(BRACEY, hostile_text))
def test_masked_characters_are_exactly_the_tokenizers_slots(text):
    masked = mask_slots(text)
    assert len(masked) == len(text)
    slots, _ = scan_template(text)
    covered = {i for s in slots for i in range(s.start, s.end)}
    assert [i for i, c in enumerate(masked) if c == SLOT_CHAR] == [s.start for s in slots]
    assert all(masked[i] == (" " if text[i] == SLOT_CHAR else text[i]) for i in range(len(text)) if i not in covered)


# -- 5: every format character is inside a finding -----------------------------------------------------------
@PROPS
@given(text=st.one_of(BRACEY, hostile_text, st.text(max_size=80)))
def test_every_format_character_is_inside_an_f110_finding(text):
    import unicodedata

    spans = [(f.location.start, f.location.end) for f in format_characters(text)]
    flagged = {i for a, b in spans for i in range(a, b)}
    assert flagged == {i for i, c in enumerate(text) if unicodedata.category(c) == "Cf"}


# -- 7, 8: the decision survives its log line; the log holds whole lines -------------------------------------
def decision_and_log(records: Any, payload: dict[str, Any], tmp: Path) -> None:
    path = tmp / "guard.jsonl"
    with EventLog(path, include_values=True) as log:
        g = Guard(records.policy, records.store, domain="orders", config=GATE_OPEN, log=log, log_payloads=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # a log failure here would be a bug: none is expected
            try:
                d = g.run(payload, principal=demo.PRINCIPAL, now=demo.NOW)
            except PayloadError:
                assert not path.exists() or path.read_bytes() == b""
                return
    assert isinstance(d.action, Action) and g.log_failures == 0
    lines = [json.loads(x) for x in path.read_bytes().decode("utf-8").split("\n") if x]
    assert [e["event"] for e in lines].count("decision") == 1
    assert sum(e["event"] == "claim" for e in lines) == len(d.results)


@PROPS
@given(payload=payloads())
def test_gate_with_values_logged_returns_a_decision_and_writes_whole_lines(records, tmp_path_factory, payload):
    decision_and_log(records, payload, tmp_path_factory.mktemp("log"))


@pytest.mark.fuzz
@FUZZ
@given(payload=payloads())
def test_fuzz_gate_with_values_logged(records, tmp_path_factory, payload):
    decision_and_log(records, payload, tmp_path_factory.mktemp("fuzz_log"))


# -- 11: any claimed value is judged, and malformed only when it is not of its type ---------------------------
VALUES = st.one_of(
    hostile_text,
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    st.sampled_from(["€45.99", "45.99 EUR", "22/07/2026", "1,1,000", "12.50", "2026-08-03", "-0", "1e5"]),
)
FIELDS = [("money", "total_minor"), ("date", "estimated_delivery"), ("integer", "line_count"), ("enum", "status")]


def judged(records: Any, type_: str, field: str, value: Any) -> None:
    claim = {"key": "v", "type": type_, "entity": "order", "entity_id": "ord_88431", "field": field, "value": value}
    try:
        d = verify(
            {"answer_template": "{v}.", "claims": [claim]},
            records.policy,
            records.store,
            principal=demo.PRINCIPAL,
            now=demo.NOW,
        )
    except PayloadError:
        return
    (r,) = d.results
    assert r.status in {Status.CONFIRMED, Status.CONTRADICTED, Status.MALFORMED, Status.STALE}
    assert (d.action is Action.REGENERATE) == (r.status in {Status.CONTRADICTED, Status.MALFORMED})
    if r.status is Status.MALFORMED:
        assert "v" in d.contradicted and "v" in d.facts


@PROPS
@given(kind=st.sampled_from(FIELDS), value=VALUES)
def test_any_claimed_value_is_judged_and_regenerates_when_malformed(records, kind, value):
    judged(records, *kind, value)


@pytest.mark.fuzz
@FUZZ
@given(kind=st.sampled_from(FIELDS), value=VALUES)
def test_fuzz_any_claimed_value(records, kind, value):
    judged(records, *kind, value)


# -- 15: work grows linearly with the template, whatever it repeats ------------------------------------------
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(unit=st.text(alphabet=st.sampled_from(list("{}a .,!?") + ["\u202e"]), min_size=1, max_size=6))
def test_ratio_measure_work_is_linear_for_any_repeated_text(unit):
    from guard.linting.ratio import measure

    grows_linearly(lambda n: unit * n, measure, sizes=(100, 400))


# -- 21: a corpus of any bytes is read or refused with a CorpusError, line numbers true -----------------------
CORPUS_LINES = st.lists(
    st.one_of(
        st.just(json.dumps({"text": "It shipped.", "labels": [], "domain": "orders", "split": "train"})),
        st.builds(
            lambda text, reg, sep: json.dumps(
                {"text": text + sep, "labels": [], "domain": "orders", "split": "x", "hard": False, "register": reg},
                ensure_ascii=False,
            ),
            st.text(max_size=10),
            st.one_of(st.just("formal"), st.lists(st.integers(), max_size=2), st.none()),
            st.sampled_from(["", "\u2028", "\x85", "\r", "\x0c"]),
        ),
        st.text(max_size=20),
        st.just("[" * 5000),
    ),
    max_size=6,
)


@PROPS
@given(lines=CORPUS_LINES)
def test_corpus_of_any_lines_is_read_or_refused_at_true_line_numbers(tmp_path_factory, lines):
    folder = tmp_path_factory.mktemp("corpus")
    raw = "\n".join(lines) + "\n"
    (folder / "orders.jsonl").write_bytes(raw.encode("utf-8", "surrogatepass"))
    try:
        read_corpus(folder, check_splits=False)
    except CorpusError as exc:
        n = len(split_lines(raw))
        for p in exc.problems:
            where = str(p.location)
            if where.startswith(str(folder / "orders.jsonl") + ":"):
                assert 1 <= int(where.rsplit(":", 1)[1]) <= n

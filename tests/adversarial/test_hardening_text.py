"""Issue 18: the free-text stage judges every character that is not a real slot, on any input, in linear time.

Each test drives real parts: the shipped classifier, the payload's slot tokenizer and ``Guard.run`` on a
SQLite database built by :mod:`guard.demo`.
"""

from __future__ import annotations

import copy
import unicodedata

import pytest

from guard import demo
from guard.decision import Action
from guard.freetext.featurize import SLOT_CHAR, mask_slots
from guard.linting.freetext import freetext_findings, load_classifier
from guard.payload.slots import scan_template
from guard.pipeline import Guard

FREETEXT_ONLY = {
    "domains": {"orders": {"stages": {"format": "enforce", "shape": "off", "freetext": "enforce", "ratio": "off"}}}
}
CLAIM = "You were refunded 500 pounds, twice the usual amount, because of the delay."


@pytest.fixture(scope="module")
def classifier():
    return load_classifier()


# -- 1: only real slots are masked; escaped braces are literal text ------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "{{" + CLAIM + "}}",
        "{{{{" + CLAIM + "}}}}",
        "{{ " + CLAIM + " }}",
        "Note: {{" + CLAIM[:-1] + "}}.",
    ],
)
def test_escaped_braces_are_judged_as_text(classifier, text):
    """The renderer prints ``{{...}}`` as ``{...}``: the classifier must see the words, not a slot."""
    plain = {f.code for f in freetext_findings(CLAIM, classifier)}
    assert plain, "the plain claim must be flagged for this test to mean anything"
    assert {f.code for f in freetext_findings(text, classifier)} == plain


@pytest.mark.parametrize(
    "text",
    [
        "{{order_id}}",
        "{a.b}",
        "{x[0]}",
        "{0}",
        "{refund of 500 pounds}",
        "{{{x}}}",
        "{ship_date}",
        "{a}{{b}}{c}",
    ],
)
def test_only_the_payloads_slots_are_masked(text):
    """What the classifier masks is exactly what the payload's tokenizer takes for a slot, nothing else."""
    masked = mask_slots(text)
    assert len(masked) == len(text)
    slots, _ = scan_template(text)
    expect = [i for i, ch in enumerate(masked) if ch == SLOT_CHAR]
    assert expect == [s.start for s in slots]
    kept = set(range(len(text))) - {i for s in slots for i in range(s.start, s.end)}
    assert all(masked[i] == text[i] for i in kept)


def test_escaped_claim_is_refused_by_the_gate(sqlite_demo):
    _, policy, store = sqlite_demo
    g = Guard(policy, store, domain="orders", config=FREETEXT_ONLY)
    p = copy.deepcopy(demo.payloads()["answer"])
    assert g.run(p, principal=demo.PRINCIPAL, now=demo.NOW).action is Action.ANSWER
    p["answer_template"] += " {{" + CLAIM + "}}"
    d = g.run(p, principal=demo.PRINCIPAL, now=demo.NOW)
    assert d.action is Action.REFUSE
    assert {f.code for f in d.findings} & {"T301", "T302", "T303"}


def test_slot_tokenizer_work_is_linear_in_unclosed_braces():
    """``{a{a{a...`` once made the tokenizer scan to the end of the template at every brace."""
    from guard.payload import slots as slots_module

    counts = []
    for n in (1000, 4000):
        text = "{a" * n
        calls = _count_finds(slots_module, text)
        counts.append(calls)
    assert counts[1] <= 4 * counts[0] + 8


def _count_finds(module, text: str) -> int:
    """Characters the tokenizer's searches pass over, counted through a str subclass (no timing)."""

    class Counted(str):
        scanned = 0

        def find(self, sub, start=0, end=None):  # type: ignore[override]
            pos = str.find(self, sub, start) if end is None else str.find(self, sub, start, end)
            Counted.scanned += (len(self) if pos < 0 else pos + 1) - start
            return pos

        def startswith(self, *args, **kwargs):  # type: ignore[override]
            return str.startswith(self, *args, **kwargs)

    module._tokenize(Counted(text))
    return Counted.scanned


# -- 5: format characters are refused; confusable letters are read as the letters they imitate --------------
CHECKER_ONLY = {
    "domains": {"orders": {"stages": {"format": "enforce", "shape": "off", "freetext": "off", "ratio": "off"}}}
}
FORMAT_CHARACTERS = [
    "\u202e",
    "\u202a",
    "\u2066",
    "\u200e",
    "\u200b",
    "\u200d",
    "\u2060",
    "\ufeff",
    "\u00ad",
    "\U000e0041",
]


@pytest.mark.parametrize("ch", FORMAT_CHARACTERS, ids=[f"U+{ord(c):04X}" for c in FORMAT_CHARACTERS])
def test_format_character_in_a_template_is_refused_even_with_the_prose_stages_off(sqlite_demo, ch):
    _, policy, store = sqlite_demo
    p = copy.deepcopy(demo.payloads()["answer"])
    p["answer_template"] = p["answer_template"].replace("{eta}", ch + "{eta}" + ch)
    g = Guard(policy, store, domain="orders", config=CHECKER_ONLY)
    d = g.run(p, principal=demo.PRINCIPAL, now=demo.NOW)
    assert d.action is Action.REFUSE and {f.code for f in d.findings} == {"F110"}
    found = next(f for f in d.findings if f.code == "F110")
    assert p["answer_template"][found.location.start] == ch
    from guard.pipeline import verify

    assert verify(p, policy, store, principal=demo.PRINCIPAL, now=demo.NOW).action is Action.REFUSE


def test_a_run_of_format_characters_is_one_finding():
    from guard.payload.slots import format_characters

    found = format_characters("a\u202e\u200b\u2066b c\u202ed")
    assert [(f.location.start, f.location.end) for f in found] == [(1, 4), (7, 8)]


def test_format_character_findings_are_linear_in_the_template():
    from guard.payload.slots import format_characters

    assert len(format_characters("\u202ea " * 50_000)) == 50_000


@pytest.mark.parametrize(
    "text",
    [
        "It arrived l\u0430ter th\u0430n expected.",  # Cyrillic a
        "It arrived ｌａｔｅｒ than expected.",  # full width
        "It arrived la\u200bter than expected.",  # zero-width space
        "We refunded \U0001d7d3\U0001d7ce pounds.",  # mathematical digits
    ],
)
def test_confusable_letters_do_not_hide_a_claim(classifier, text):
    plain = unicodedata.normalize("NFKC", text).replace("\u0430", "a").replace("\u200b", "")
    expected = {f.code for f in freetext_findings(plain, classifier)}
    assert expected, "the plain sentence must be flagged for this test to mean anything"
    assert {f.code for f in freetext_findings(text, classifier)} == expected


# -- 15: every stage's work grows linearly with the template; lint has a size limit --------------------------
def guard_lines(fn, *args, **kwargs) -> int:
    """Lines of guard's own Python executed by ``fn(*args)``: a count of work that does not depend on the
    machine's speed (library code in C, such as regex and spaCy, is measured by the benchmarks instead)."""
    import os
    import sys

    import guard

    root = os.path.dirname(guard.__file__)
    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        if not frame.f_code.co_filename.startswith(root):
            return None
        if event == "line":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        fn(*args, **kwargs)
    finally:
        sys.settrace(None)
    return count


def grows_linearly(make, fn, sizes=(250, 1000), slack: float = 1.25) -> None:
    small, large = (guard_lines(fn, make(n)) for n in sizes)
    factor = sizes[1] / sizes[0]
    assert large <= slack * factor * small + 50, f"{small} lines at {sizes[0]}, {large} at {sizes[1]}"


@pytest.mark.parametrize(
    "make",
    [
        lambda n: "Order {a} shipped. " * n,
        lambda n: "Order {a} {b} {c} and {d} " * n + ".",
        lambda n: "We are sorry. " * n + "{a}" * n,
        lambda n: ".," * (4 * n),
        lambda n: "{" * (4 * n),
        lambda n: "{a" * (2 * n),
    ],
    ids=["sentences-with-slots", "slots-in-one-sentence", "prose-then-slots", "punctuation", "braces", "unclosed"],
)
def test_ratio_measure_work_is_linear_in_the_template(make):
    from guard.linting.ratio import measure

    grows_linearly(make, measure)


@pytest.mark.parametrize(
    "make",
    [lambda n: "Order {a} shipped. " * n, lambda n: "{a}" * (2 * n), lambda n: "\u202ea {" * n],
    ids=["sentences", "slots", "format-characters"],
)
def test_format_stage_work_is_linear_in_the_template(make):
    from guard.linting import format as format_stage
    from guard.linting.runner import LintContext

    grows_linearly(make, lambda t: format_stage.check(LintContext(t, "orders", {})))


def test_lint_refuses_a_template_over_the_payload_limit(tmp_path, capsys):
    from guard.cli.main import main
    from guard.errors import PayloadError
    from guard.linting.runner import lint
    from guard.payload import Limits

    limit = Limits().max_template_chars
    lint("a" * limit, domain="orders", stages=[])  # at the limit: linted
    with pytest.raises(PayloadError, match=str(limit)):
        lint("a" * (limit + 1), domain="orders")
    f = tmp_path / "big.txt"
    f.write_text("We are sorry. " * 10_000, encoding="utf-8")
    assert main(["lint", "--domain", "orders", str(f)]) == 1
    out = capsys.readouterr()
    assert "Traceback" not in out.err and str(limit) in out.out + out.err


@pytest.mark.parametrize(
    "make",
    [
        lambda n: "Your order {a} shipped on {b}. " * n,
        lambda n: "Your order {a} shiped yesterday because of the rain. " * n,
        lambda n: "Your order " + "and your parcel " * n + "shipped.",
        lambda n: ".," * (4 * n),
        lambda n: "{a} " * (2 * n),
    ],
    ids=["approved-sentences", "failing-sentences", "one-long-sentence", "punctuation", "slots"],
)
def test_shape_stage_work_is_linear_in_the_template(make):
    """The shape stage parses each sentence once and bounds its diagnosis (the nearest approved wording tries
    a fixed number of words), so its work grows with the template, not with its square."""
    from guard.linting import shapes as shape_stage
    from guard.linting.runner import LintContext

    types = {"a": "identifier", "b": "date"}
    shape_stage.check(LintContext("Warm-up.", "orders", dict(types)))  # the library loads once, not per size
    grows_linearly(make, lambda t: shape_stage.check(LintContext(t, "orders", dict(types))), sizes=(20, 80))

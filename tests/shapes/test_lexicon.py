"""The compositional sentence library: phrase notation, the lexicon compiler, strict LALR with conflicts that name
both rules, closedness against claim-bearing words, and wordings people write."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from guard.errors import GrammarError
from guard.shapes.check import check_template
from guard.shapes.conflicts import conflicts
from guard.shapes.phrases import Punct, Slot, Word, expand, parse_phrase, words
from guard.shapes.sentences import load_library, tokens

ROOT = Path(__file__).resolve().parents[2]
LEXICONS = ROOT / "grammars" / "lexicons"
CORPUS = ROOT / "corpora" / "templates"


def _no_classes(name: str) -> list:
    raise AssertionError(f"unexpected class {name}")


# -- phrase notation ---------------------------------------------------------------------------
WORDS = st.sampled_from(["your", "order", "shipped", "on", "was", "has", "been", "it"])


@st.composite
def phrases(draw: st.DrawFn, depth: int = 2) -> tuple[str, int]:
    """A phrase and how many wordings it stands for (upper bound: alternatives may repeat a wording)."""
    parts, count = [], 1
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["word", "slot", "opt", "alt"] if depth else ["word", "slot"]))
        if kind == "word":
            parts.append(draw(WORDS))
        elif kind == "slot":
            parts.append("{date}")
        elif kind == "opt":
            inner, n = draw(phrases(depth - 1))
            parts.append(f"[{inner}]")
            count *= n + 1
        else:
            options = [draw(phrases(depth - 1)) for _ in range(draw(st.integers(2, 3)))]
            parts.append("(" + " | ".join(o for o, _ in options) + ")")
            count *= sum(n for _, n in options)
    return " ".join(parts), count


@given(phrases())
def test_a_phrase_expands_to_distinct_wordings_of_its_own_words(case):
    text, bound = case
    tree = parse_phrase(text, "test")
    seqs = expand(tree, _no_classes, 10_000, "test")
    assert 1 <= len(seqs) <= bound
    assert len(set(seqs)) == len(seqs)
    vocabulary = set(words(tree))
    for seq in seqs:
        assert {a.text for a in seq if isinstance(a, Word)} <= vocabulary


def test_phrase_notation_reads_words_slots_bound_fields_and_possessives():
    tree = parse_phrase("(has | was) shipped on {date:order.shipped_at} [currently] it's", "t")
    seqs = expand(tree, _no_classes, 100, "t")
    assert (Word("has"), Word("shipped"), Word("on"), Slot("date", "order.shipped_at"), Word("it"), Word("'s")) in seqs
    assert len(seqs) == 4
    assert expand(parse_phrase("order # {identifier}", "t"), _no_classes, 10, "t") == [
        (Word("order"), Punct("#"), Slot("identifier"))
    ]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("shipped on (monday", "not closed"),
        ("shipped on [", "not closed"),
        ("arrives in 3 days", "numbers and dates must be slots"),
        ("costs {price}", "unknown slot type"),
        ("a | | b", "empty alternative"),
        ("Shipped", "lower case"),
    ],
)
def test_a_bad_phrase_is_a_grammar_error_naming_it(text, why):
    with pytest.raises(GrammarError) as err:
        parse_phrase(text, "orders.yaml:predicates[0]")
    assert repr(text) in str(err.value)
    assert why in str(err.value)


def test_a_phrase_that_stands_for_too_many_wordings_is_refused():
    many = " ".join("(a | b | c | d)" for _ in range(8))
    with pytest.raises(GrammarError, match="more than 1000 wordings"):
        expand(parse_phrase(many, "t"), _no_classes, 1000, "t")


# -- the lexer ------------------------------------------------------------------------------------
def test_the_lexer_reads_text_as_people_type_it():
    toks = tokens("YOUR ORDER’S on its way, “{status}”!")
    assert [(t.kind, t.text) for t in toks] == [
        ("word", "your"),
        ("word", "order"),
        ("word", "'s"),
        ("word", "on"),
        ("word", "its"),
        ("word", "way"),
        ("punct", ","),
        ("slot", "status"),
        ("punct", "!"),
    ]


@given(st.text(alphabet=st.sampled_from(list("ab '’{}x.,#5\n")), max_size=60))
def test_token_offsets_point_into_the_text(text):
    for t in tokens(text):
        assert 0 <= t.start < t.end <= len(text)
        if t.kind == "word":
            assert text[t.start : t.end].lower().replace("’", "'") == t.text


def _reference_lark_tokens(lib, text: str, types: dict[str, str]) -> list[tuple[str, str, int, int]]:
    out = []
    for t in tokens(text, lib.claim):
        if t.kind == "screen":
            kind = "SCREEN_NAME"
        elif t.kind == "slot":
            kind = {"date": "DATE_SLOT", "money": "MONEY_SLOT"}.get(types.get(t.text, ""), "UNTYPED_SLOT")
        elif t.kind == "other":
            kind = "OTHER"
        else:
            kind = lib.vocabulary.get(t.text, "UNKNOWN_WORD")
        out.append((kind, t.text, t.start, t.end))
    return out


@settings(max_examples=400, deadline=None)
@example(text="aS>S")  # a path starts at a word boundary, never inside a word
@example(text="Thanks \u2014 it shipped \u00b7 Order")
@example(text="Hi! \U0001f44b Order {d} \u2022 Total: {x} \u2764\ufe0f")
@given(
    st.lists(
        st.sampled_from(
            [*"abSK '’‘“”\"{}xd.,#5->\n\u212a\u0130é\u2022|", "Tap ", "select ", "Now", "\U0001f44b", "\u2764\ufe0f"]
        ),
        max_size=50,
    ).map("".join)
)
def test_the_one_pass_lexer_agrees_with_the_readable_one(orders, text):
    types = {"d": "date", "x": "money"}
    fast = [(t.type, t.value, t.start_pos, t.end_pos) for t in orders.lark_tokens(text, types)]
    assert fast == _reference_lark_tokens(orders, text, types)


SCREENS = [
    ("Go to Settings > Security to turn it on.", ["Settings > Security"]),
    ("Tap “Orders” in the menu.", ["Orders"]),
    ("To cancel, go to Settings > Subscription and select Cancel plan.", ["Settings > Subscription", "Cancel plan"]),
    ("Tap your profile picture, then Account settings, to change it.", ["Account settings"]),
    ("Just click Download PDF next to the invoice.", ["Download PDF"]),
    ("Tap “Free delivery” to see it.", []),
    ("Select Next Day to choose it.", []),
    ("Click “Order 4 items”.", []),
    ("TAP THE LINK BELOW", []),
    ("Tap Here To Track Your Order", []),
    ("Select Pay now to settle it.", ["Pay"]),
    ("Download a copy from the Invoices tab.", ["Invoices"]),
    ("Use the Reorder button to buy it.", ["Reorder"]),
    ("Use the Pay now button.", []),
    ("Open Settings > Security to turn it on.", ["Settings > Security"]),
    ("Go to My Account > Orders > Edit address before the parcel ships.", ["My Account > Orders > Edit address"]),
    ("Go to Orders > Late deliveries.", []),
]


@pytest.mark.parametrize(("text", "names"), SCREENS)
def test_screen_names_are_read_as_one_token_and_never_hold_a_claim_word(orders, text, names):
    toks = [t for t in tokens(text, orders.claim) if t.kind == "screen"]
    assert [t.text for t in toks] == names


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["Tap ", "select ", "Go to ", "Now ", "Free ", "Plan ", "Day ", "> ", '"', "4 ", "x ", "Seats "]
        ),
        max_size=12,
    ).map("".join)
)
def test_no_screen_name_holds_a_digit_or_a_claim_word(orders, text):
    for t in tokens(text, orders.claim):
        if t.kind == "screen":
            words = [w.lower() for w in re.findall(r"[A-Za-z]+|\d", t.text)]
            assert words and not any(w.isdigit() or w in orders.claim for w in words), t


def test_instructions_through_screens_are_approved_and_claims_in_them_are_not(orders):
    for text in (
        "Tap “Orders” in the app to see your order.",
        "To change the delivery address, go to Account > Addresses.",
        "Select Track parcel, then choose Details.",
        "Under “Your orders”, you can see your order.",
        "Print the label, attach it to the box and track your parcel from the Orders page.",
        "To start a return, go to Your Orders, select the item and choose “Return”.",
        "Please clear your browser cache, then try signing in again.",
        "You can track your order at any time in the app.",
        "If you have any questions, please sign in and check your order details.",
    ):
        assert orders.parse(text, {}) is not None, text
    for text in (
        "Tap “Orders” to see your order, which arrives tomorrow.",
        "Tap Free Returns to see your order.",
        "Select “Arrives Friday” to see your order.",
        "Go to Account > Addresses to see it sooner.",
        "Print the label and drop it off within 14 days.",
        "Tap the link to see your order, which is late.",
        "Please pack the items securely, as usual.",
        "Open the Express Delivery tab to pay less.",
    ):
        assert orders.parse(text, {}) is None, text


# -- compiling: closed by construction, strictly LALR --------------------------------------------
def _domain(tmp_path: Path, body: str) -> Path:
    for name in ("core.yaml", "compose.lark"):
        shutil.copy(LEXICONS / name, tmp_path / name)
    (tmp_path / "shop.yaml").write_text(body, encoding="utf-8")
    return tmp_path


SHOP = """
domain: shop
entities:
  order:
    nouns: [order]
    id: order.id
predicates:
  - entity: order
    field: order.shipped_at
    forms: ["shipped on {date}"]
"""


@pytest.mark.parametrize(
    ("form", "word", "kind"),
    [
        ("shipped faster on {date}", "faster", "comparative"),
        ("shipped on {date} because of the weather", "because", "cause"),
        ("shipped on {date} tomorrow", "tomorrow", "date_time"),
        ("shipped on {date} as usual", "usual", "norm"),
        ("will definitely arrive on {date}", "definitely", "promise"),
        ("probably shipped on {date}", "probably", "speculation"),
        ("shipped two parcels on {date}", "two", "number"),
    ],
)
def test_a_lexicon_cannot_approve_a_claim_bearing_word(tmp_path, form, word, kind):
    d = _domain(tmp_path, SHOP.replace('forms: ["shipped on {date}"]', f'forms: ["{form}"]'))
    with pytest.raises(GrammarError) as err:
        load_library("shop", d)
    assert repr(word) in str(err.value)
    assert kind in str(err.value)


def test_no_word_of_a_shipped_library_is_a_claim_word_outside_its_allowed_classes():
    """The compiler enforces it; this checks the enforcement is on by counting what the shipped core declares."""
    from guard.shapes.compiler import claim_words
    from guard.shapes.lexicon import read_lexicon

    declared = claim_words(read_lexicon(LEXICONS / "core.yaml"))
    assert {"faster", "tomorrow", "because", "usual", "probably", "definitely", "free", "monday"} <= set(declared)
    lib = load_library("orders")
    approved = set(lib.vocabulary)
    # "because" is approved only inside guard's own hedge ("... because I could not verify it"), so it is absent here;
    # "soon" only in the sign-off "Speak soon,", so a sentence that uses it as a claim is still refused
    assert not {"faster", "tomorrow", "usual", "probably", "definitely", "monday", "cheaper"} & approved
    assert check_template("Speak soon,", lib, {}).ok
    assert not check_template("Your order will arrive soon.", lib, {}).ok


def test_a_conflict_is_a_load_time_error_naming_both_rules(tmp_path):
    d = _domain(
        tmp_path,
        SHOP
        + """
statements:
  - forms: ["<subject> shipped on {date:order.shipped_at}"]
""",
    )
    with pytest.raises(GrammarError) as err:
        load_library("shop", d)
    message = str(err.value)
    assert "not LALR(1)" in message
    assert "stmt" in message or "x0" in message
    assert "predicate" in message or "p0" in message or "subject" in message


def test_the_conflict_report_lists_what_ends_and_what_goes_on():
    found = conflicts('start: a "x" | b "x" "y"\na: "w"\nb: "w" | "w" "x" "z"\n')
    assert found
    assert any(c.kind in ("shift/reduce", "reduce/reduce") for c in found)
    assert all(c.ending for c in found)
    assert conflicts('start: "a" "b" | "a" "c"\n') == []


def test_an_unknown_domain_is_an_error(tmp_path):
    with pytest.raises(GrammarError, match="unknown domain 'Orders'"):
        load_library("Orders")


@pytest.fixture(scope="module")
def orders():
    return load_library("orders")


def test_the_orders_library_is_strict_lalr_and_loads_from_its_cache(orders, monkeypatch):
    import guard.shapes.sentences as sentences

    def no_compile(*args, **kwargs):
        raise AssertionError("a warm load compiles nothing")

    monkeypatch.setattr(sentences, "compile_files", no_compile)
    again = load_library("orders")
    assert again is orders
    assert orders.lark.options.strict is True
    assert orders.lark.options.parser == "lalr"


@pytest.mark.parametrize(
    ("text", "types"),
    [
        (
            "Hi {name}, order {order_id} left our warehouse on {ship_date}.",
            {"name": "string", "order_id": "identifier", "ship_date": "date"},
        ),
        ("Order {order_id} is currently {status}.", {"order_id": "identifier", "status": "enum"}),
        ("YOUR ORDER HAS BEEN CANCELLED", {}),
        ("Tracking number: {tracking}", {"tracking": "identifier"}),
        ("Thanks for your order!", {}),
        ("Thanks \u2014 order {order_id} is {status}.", {"order_id": "identifier", "status": "enum"}),
        ("Sorry for any inconvenience this may have caused.", {}),
        ("Welcome, {name}!", {"name": "string"}),
        ("If you still have trouble with your order, feel free to message us again.", {}),
        ("Our customer service team can be reached by phone or email.", {}),
        ("Is there anything else I can help you with today?", {}),
    ],
)
def test_sentences_people_write_are_accepted(orders, text, types):
    assert check_template(text, orders, types).ok


@pytest.mark.parametrize(
    "text",
    [
        "Your order {order_id} shipped on {ship_date}, two days early.",
        "Your order will arrive by Friday.",
        "Your order left our warehouse at 6:40 this morning.",
        "Delivery was free on this order.",
        "Your order {order_id} is delayed because our courier changed its routes.",
        "Order {order_id} is currently {status} and should arrive soon.",
        "Thanks \u2014 your order {order_id} shipped on {ship_date}, two days early.",
        "Sorry for the delay caused by our courier.",
        "Feel free to message us again tomorrow.",
        "Our customer service team can be reached within two hours.",
    ],
)
def test_claims_inside_approved_frames_are_rejected(orders, text):
    types = {"order_id": "identifier", "ship_date": "date", "status": "enum"}
    assert orders.parse(text, types) is None
    assert not check_template(text, orders, types).ok

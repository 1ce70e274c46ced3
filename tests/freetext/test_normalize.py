"""Input is read as a reader sees it (NFKC, confusables folded) and in time linear in its length (issue 16)."""

from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from guard.freetext.featurize import SLOT_CHAR, linguistics, prepare
from guard.freetext.lexicon import default_lexicon
from guard.freetext.normalize import MAX_RUN, Normalized, confusable_table, normalize

CYRILLIC_A = "\u0430"


def _ling():
    return linguistics(default_lexicon())


def test_mixed_script_confusables_read_as_latin():
    assert normalize(f"l{CYRILLIC_A}ter th{CYRILLIC_A}n").text == "later than"
    assert normalize("\u0441\u043e\u0440\u0443 that").text == "copy that"  # all-Cyrillic word in a Latin text
    assert normalize("\uff43\uff48\uff45\uff41\uff50\uff45\uff52").text == "cheaper"  # full-width (NFKC)
    assert normalize("\ufb01ve").text == "five"  # ligature expands
    assert normalize("fas\u200bter").text == "faster"  # zero-width space dropped
    assert normalize("la\u0301ter").text == "later"  # combining accent dropped
    assert (
        normalize("\u043f\u0440\u0438\u0432\u0435\u0442").text == "\u043f\u0440\u0438\u0432\u0435\u0442"
    )  # no Latin: kept


def test_a_non_ascii_brace_never_makes_a_slot():
    assert "{" not in normalize("\ufe5barrives tomorrow\ufe5c").text
    assert SLOT_CHAR not in prepare("\uff5barrives tomorrow\uff5d").text


def test_confusables_fold_before_classification(shipped):
    plain, disguised = "It arrives later than usual.", f"It arrives l{CYRILLIC_A}ter th{CYRILLIC_A}n usual."
    assert shipped.predict(plain)[0].labels == shipped.predict(disguised)[0].labels == ("comparative",)
    span = shipped.predict(disguised)[0].spans["comparative"][0]
    assert span.text == disguised[span.start : span.end] and CYRILLIC_A in span.text  # offsets on the caller's text


def test_spans_map_back_through_expansions_and_slots(shipped):
    text = "\ufb01ve parcels arrive later than {eta} on Friday."
    pred = shipped.predict([text] * 20)  # the bulk path
    single = shipped.predict(text)[0]
    assert pred[0].spans == single.spans
    for spans in single.spans.values():
        for s in spans:
            assert s.text == text[s.start : s.end]
    assert any(s.text.endswith("{eta}") or "Friday" in s.text for spans in single.spans.values() for s in spans)


letters = st.sampled_from(
    list("abcdeflmnortuy.,;:!?-'\"()") + [CYRILLIC_A, "\u0435", "\uff41", "\ufb01", "\u200b", " "]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(letters, max_size=300).map("".join))
def test_normalized_text_maps_every_character_back(text):
    norm = normalize(text)
    if norm.starts is None:
        assert norm.text == text
        return
    assert len(norm.starts) == len(norm.ends) == len(norm.text)
    for i, ch in enumerate(norm.text):
        s, e = norm.original(i, i + 1)
        assert 0 <= s <= e <= len(text)
        if e > s and ch != " ":
            src = text[s:e]
            assert ch in unicodedata.normalize("NFKC", src).lower() + src.lower() or src in confusable_table()


runs = st.text(
    alphabet=st.sampled_from(list(".,;:!?'\"()[]-_/\\*&^%$#@~`|<>+=") + list("ab1")), min_size=1, max_size=3000
)


@settings(max_examples=60, deadline=None)
@given(runs, st.integers(min_value=1, max_value=6))
def test_work_is_linear_in_input_length(chunk, times):
    """The tokenizer only ever sees bounded chunks, so its work per character is bounded.

    spaCy's cost grows with the square of one whitespace-free chunk's length (8,000 characters
    of ".," took 97 s); after normalisation no chunk is longer than MAX_RUN, the number of
    tokens is at most the number of characters, and doubling the input doubles both.
    """
    text = chunk * times
    prepared = prepare(text).text
    assert max(map(len, prepared.split()), default=0) <= MAX_RUN
    ling = _ling()
    tokens = next(iter(ling.lexes([text])))
    assert len(tokens) <= len(text)
    twice = next(iter(ling.lexes([text + " " + text])))
    # the join may merge or split one token at the seam; the count stays linear
    assert 2 * len(tokens) - 2 <= len(twice) <= 2 * len(tokens) + 2


def test_long_punctuation_runs_classify_with_valid_spans(shipped):
    text = ".," * 4000 + " It is cheaper than usual."
    pred = shipped.predict(text)[0]
    assert "comparative" in pred.labels
    for spans in pred.spans.values():
        for s in spans:
            assert s.text == text[s.start : s.end]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("ab {}_.,!-\ue000é\u200b\t")), max_size=90) | runs, max_size=8))
def test_prepare_all_equals_prepare_text_by_text(texts):
    from guard.freetext.featurize import prepare_all

    assert prepare_all(texts) == [prepare(t) for t in texts]
    assert all(type(n) is Normalized for n in prepare_all(texts))


def test_eight_thousand_characters_of_punctuation_classify_in_a_fraction_of_a_second(shipped):
    """Issue 16's figure: 8,000 characters of ".," took 97 s. A fresh run of each length (no cache hit) stays far
    under a second, and twice the length costs about twice the time, not four times (generous bounds: the
    machine is shared)."""
    import time

    def seconds(n: int, tag: str) -> float:
        text = tag + " " + ".," * (n // 2) + " ;" * 8 + tag
        t0 = time.perf_counter()
        shipped.predict([text])
        return time.perf_counter() - t0

    shipped.predict(["warm up"])
    one = min(seconds(8000, f"w{i}") for i in range(3))
    two = min(seconds(16000, f"v{i}") for i in range(3))
    assert one < 2.0 and two < 4.0
    assert two < 4 * max(one, 0.01)


def test_the_letter_of_each_character_is_that_of_the_whole_table():
    """Prediction folds a character through confusable_letter, asked per character; the table is the reference."""
    from confusable_homoglyphs.confusables import confusables_data

    from guard.freetext.normalize import confusable_letter

    table = confusable_table()
    chars = set(confusables_data) | {chr(c) for c in range(0x3000)} | {"ab", "", "\U0001d5ba"}
    assert len(table) > 400
    for char in chars:
        assert confusable_letter(char) == table.get(char, char), char

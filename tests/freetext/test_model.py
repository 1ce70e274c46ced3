"""The shipped model: loads beside a matching card, meets the quality bar, never crashes."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guard.errors import GuardError, ModelError
from guard.freetext import LABELS, Prediction, load
from guard.freetext.corpus import label_matrix
from guard.freetext.model import card_path, check_card, default_model_path, library_versions
from guard.freetext.training import label_metrics

MODEL = default_model_path()


def test_shipped_model_and_card_exist_and_are_small():
    assert MODEL.is_file() and card_path(MODEL).is_file()
    assert MODEL.stat().st_size < 20 * 1024 * 1024
    card = json.loads(card_path(MODEL).read_text())
    assert card["labels"] == list(LABELS)
    assert set(card["thresholds"]) == set(LABELS)
    assert len(card["corpus"]["sha256"]) == 64
    for lib in ("scikit-learn", "spacy", "spacy-lookups-data", "numpy"):
        assert lib in card["libraries"]
    for split in ("dev", "test"):
        assert set(card["metrics"][split]) == set(LABELS)
        assert set(card["baselines"]["keyword"][split]) == set(LABELS)
        assert set(card["baselines"]["bag_of_words"][split]) == set(LABELS)


def test_shipped_model_meets_f1_on_test_split_and_beats_baselines(shipped, corpus_examples):
    """At least 0.92 per label in guard's own domains (issue 16's in-domain target); on the whole test
    split, which since issue 16 also holds reviews, findings, debates and support chat, it beats both
    baselines and stays above 0.88."""
    from guard.freetext.corpus import GUARD_DOMAINS

    test = [e for e in corpus_examples if e.split == "test"]
    probs = shipped.predict_proba([e.text for e in test])
    pred = (probs >= shipped.thresholds).astype(int)
    m = label_metrics(label_matrix(test), pred)
    inside = np.array([e.domain in GUARD_DOMAINS for e in test])
    m_in = label_metrics(label_matrix(test)[inside], pred[inside])
    card = shipped.card
    for lab in LABELS:
        assert m_in[lab]["f1"] >= 0.92, (lab, m_in[lab])
        assert m[lab]["f1"] >= 0.88, (lab, m[lab])
        for base in ("keyword", "bag_of_words"):
            assert m[lab]["f1"] > card["baselines"][base]["test"][lab]["f1"], (lab, base)


def test_predict_returns_labels_scores_and_spans(shipped):
    texts = [
        "Your parcel is late because of a storm at the hub.",
        "It contains {item_count} items.",
        "It contains 3 items.",
        "Express is quicker than standard post.",
        "Thanks for your patience.",
    ]
    preds = shipped.predict(texts)
    assert [p.labels for p in preds] == [("causal",), (), ("quantity",), ("comparative",), ()]
    for p in preds:
        assert isinstance(p, Prediction) and set(p.scores) == set(LABELS)
        assert set(p.spans) == set(p.labels)
        for lab, spans in p.spans.items():
            assert spans, lab
            for s in spans:
                assert p.text[s.start : s.end] == s.text and s.text.strip()
    assert "because" in preds[0].spans["causal"][0].text
    assert "3" in preds[2].spans["quantity"][0].text
    assert preds[0].to_dict()["labels"] == ["causal"]
    assert shipped.predict("It contains 3 items.")[0].labels == ("quantity",)
    assert shipped.predict([]) == []
    assert shipped.predict_proba([]).shape == (0, len(LABELS))


def test_slot_supplied_values_are_clean_but_free_text_values_are_not(shipped):
    pairs = [
        ("Your refund of {amount} was sent on {refund_date}.", ()),
        ("We've been holding it since {hold_date}.", ()),
        ("Since your card expired, the payment failed.", ("causal",)),
        ("Learn more in the help centre.", ()),
        ("Most customers choose express at checkout.", ("quantity",)),
    ]
    for text, labels in pairs:
        assert shipped.predict(text)[0].labels == labels, text


def test_batch_and_single_predictions_agree(shipped, corpus_examples):
    texts = [e.text for e in corpus_examples[:200]]
    batch = shipped.predict_proba(texts)
    single = np.vstack([shipped.predict_proba([t]) for t in texts[:40]])
    np.testing.assert_allclose(batch[:40], single, rtol=1e-6)


def test_predict_rejects_non_strings(shipped):
    with pytest.raises(ModelError, match="item 1"):
        shipped.predict(["ok", 3])
    with pytest.raises(ModelError):
        shipped.predict(None)


def test_predict_rejects_a_lone_surrogate_with_its_place(shipped):
    with pytest.raises(ModelError, match="item 1 has a lone surrogate at 4"):
        shipped.predict(["ok", "bad \ud800 text"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=40), st.characters(categories=["Cs"]), st.text(max_size=40))
def test_text_with_a_surrogate_is_a_model_error_never_another_exception(shipped, before, bad, after):
    with pytest.raises(ModelError, match=f"at {len(before)}"):
        shipped.predict([before + bad + after])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(max_size=200), max_size=8))
def test_predict_never_crashes_on_arbitrary_unicode(shipped, texts):
    preds = shipped.predict(texts)
    assert len(preds) == len(texts)
    for p, t in zip(preds, texts):
        assert p.text == t
        assert all(0.0 <= v <= 1.0 for v in p.scores.values())
        for spans in p.spans.values():
            for s in spans:
                assert 0 <= s.start <= s.end <= len(t) and t[s.start : s.end] == s.text


@given(st.text(alphabet=st.sampled_from(list("{}ab _\ue000.1")), max_size=60))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_braces_and_private_characters_never_break_spans(shipped, text):
    (p,) = shipped.predict([text])
    for spans in p.spans.values():
        for s in spans:
            assert text[s.start : s.end] == s.text


def test_to_json_is_json_dumps_of_to_dict_on_the_corpus_and_odd_text(shipped, corpus_examples):
    """``guard classify`` prints ``to_json()``: the very text ``json.dumps(to_dict(), ensure_ascii=False)``
    gives, for escapes and non-ASCII text as for the corpus."""
    odd = [
        'Tab\there "quoted" \\ back\x01 \u2028 café lаter thаn 😀 more than 3 items',
        "",
        "{slot}",
        "6:40 vs 5 \u2014",
    ]
    preds = shipped.predict([e.text for e in corpus_examples] + odd)
    assert any(p.spans for p in preds) and any(not p.labels for p in preds)
    for p in preds:
        assert p._direct_json() == p.to_json() == json.dumps(p.to_dict(), ensure_ascii=False)  # json's encoder unused
    # a score json writes as NaN or Infinity (never a sigmoid's), or a float subclass, still matches through json
    strange = preds[-1]._replace(scores={"causal": float("nan"), "quantity": float("inf"), "temporal": 1e-05})
    assert strange._direct_json() is None
    assert strange.to_json() == json.dumps(strange.to_dict(), ensure_ascii=False)
    subclass = preds[-1]._replace(scores={"causal": np.float64(0.123456), "quantity": np.float64(1e-07)})
    assert subclass._direct_json() == subclass.to_json() == json.dumps(subclass.to_dict(), ensure_ascii=False)
    for other in (np.float32(0.25), 1, True, None):  # not floats: json's own way, or its error
        odd_score = preds[-1]._replace(scores={"causal": other})
        assert odd_score._direct_json() is None
        if isinstance(other, int):
            assert odd_score.to_json() == json.dumps(odd_score.to_dict(), ensure_ascii=False)
        else:
            with pytest.raises(TypeError):
                odd_score.to_json()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(max_size=120), max_size=6))
def test_to_json_is_json_dumps_of_to_dict_on_arbitrary_unicode(shipped, texts):
    for p in shipped.predict(texts):
        assert p._direct_json() == p.to_json() == json.dumps(p.to_dict(), ensure_ascii=False)


# --- the model card guards the load ------------------------------------------------


@pytest.fixture()
def model_copy(tmp_path):
    dst = tmp_path / "freetext.joblib"
    shutil.copy(MODEL, dst)
    shutil.copy(card_path(MODEL), card_path(dst))
    return dst


def _edit_card(path, fn):
    cp = card_path(path)
    card = json.loads(cp.read_text())
    fn(card)
    cp.write_text(json.dumps(card))


def test_copy_loads(model_copy):
    assert load(model_copy).labels == LABELS


@pytest.mark.parametrize(
    "lib, version, expect",
    [
        ("scikit-learn", "0.24.2", "scikit-learn 0.24.2"),
        ("spacy", "2.3.0", "spacy 2.3.0"),
        ("spacy-lookups-data", "0.1.0", "spacy-lookups-data"),
    ],
)
def test_library_version_mismatch_is_a_model_error(model_copy, lib, version, expect):
    _edit_card(model_copy, lambda c: c["libraries"].__setitem__(lib, version))
    with pytest.raises(ModelError, match=expect) as err:
        load(model_copy)
    assert "retrain" in str(err.value)


def test_patch_level_differences_are_accepted(model_copy):
    card = json.loads(card_path(model_copy).read_text())
    installed = library_versions()
    bumped = dict(installed, **{"scikit-learn": installed["scikit-learn"].rsplit(".", 1)[0] + ".999"})
    check_card(card, model_copy, installed=bumped)


def test_featurizer_version_mismatch_is_a_model_error(model_copy):
    _edit_card(model_copy, lambda c: c.__setitem__("featurizer_version", 1))
    with pytest.raises(ModelError, match="featurizer_version"):
        load(model_copy)


def test_label_mismatch_is_a_model_error(model_copy):
    _edit_card(model_copy, lambda c: c.__setitem__("labels", ["causal", "quantity"]))
    with pytest.raises(ModelError, match="labels"):
        load(model_copy)


def test_missing_card_corrupt_file_and_missing_model(model_copy, tmp_path):
    with pytest.raises(ModelError, match="not found"):
        load(tmp_path / "absent.joblib")
    data = model_copy.read_bytes()
    model_copy.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelError, match="sha256"):
        load(model_copy)
    _edit_card(model_copy, lambda c: c["model_file"].__setitem__("sha256", None))
    with pytest.raises(ModelError, match="cannot be read"):
        load(model_copy)
    card_path(model_copy).unlink()
    with pytest.raises(ModelError, match="card"):
        load(model_copy)
    assert issubclass(ModelError, GuardError)


def test_evidence_and_explain_name_the_words(shipped):
    text = "Smoking increases the risk of heart disease."
    ev = shipped.evidence(text)
    assert set(ev) == set(LABELS)
    assert any("increases" in s.text for s in ev["causal"])
    rows = shipped.explain(text)
    feats = {f for f, _, _ in rows}
    assert "p=EFFECT_VERB" in feats and "bias" in feats
    for _f, words, weights in rows:
        assert set(weights) == set(LABELS)
        assert words == "" or words in text


def test_correlation_is_not_causation_but_effect_verbs_are(shipped):
    causal = [
        "Regular exercise reduces the risk of heart disease.",
        "Smoking leads to lung cancer.",
        "The update improved battery life.",
    ]
    not_causal = ["Higher income is associated with longer life.", "Obesity is correlated with diabetes."]
    for t in causal:
        assert "causal" in shipped.predict(t)[0].labels, t
    for t in not_causal:
        assert "causal" not in shipped.predict(t)[0].labels, t


def test_equatives_and_superlatives_are_comparative(shipped):
    for t in [
        "The battery is not as good as the old one.",
        "This is the best laptop I have owned.",
        "It costs the same as your last bill.",
        "Our cheapest plan suits you.",
    ]:
        assert "comparative" in shipped.predict(t)[0].labels, t


def _reference_spans(clf, text, labels, top=3):
    """Spans as first written: spaCy's own tokens and offsets, units trimmed one by one."""
    from guard.freetext.model import MIN_EVIDENCE, Span

    toks = clf.prepare().tokens(text)
    lexes = [x for x, _, _ in toks]
    window_ids = clf._window_ids(lexes)[1:]  # one per token and the sentence end, after the bias
    long_matches = clf._ling.matcher.find_long([x.m for x in lexes]) if "patterns" in clf.groups else []
    js = [clf.labels.index(lab) for lab in labels]
    cands: dict[int, list] = {j: [] for j in js}
    for i, wid in enumerate(window_ids):
        ev = clf._windows.units[wid]
        for j in js:
            if ev[j] is not None:
                cands[j].append((ev[j][0], i + ev[j][1], i + ev[j][2]))
    for name, s, e in long_matches:
        w = clf._weight(clf._windows.pattern_columns(name))
        for j in js:
            if w[j] >= MIN_EVIDENCE:
                cands[j].append((w[j], s, e))
    out = {}
    for lab, j in zip(labels, js):
        cand = sorted(cands[j], reverse=True)[:top]
        chosen = [] if not cand else sorted(clf._trim(lexes, s, e) for w, s, e in cand if w >= 0.4 * cand[0][0])
        merged: list[list[int]] = []
        for s, e in (c for c in chosen if c[1] > c[0]):
            if merged and s <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        spans = []
        for s, e in merged:
            start, end = toks[s][1], toks[e - 1][2]
            if lexes[e - 1].slot:
                close = text.find("}", toks[e - 1][1])
                end = close + 1 if close >= 0 else end
            spans.append(Span(start, end, text[start:end]))
        out[lab] = spans
    return out


def test_spans_equal_the_reference_computation_on_the_whole_corpus(shipped, corpus_examples):
    texts = [e.text for e in corpus_examples] + ["Update: " + e.text for e in corpus_examples[::3]]
    for p in shipped.predict(texts):
        assert p.spans == (_reference_spans(shipped, p.text, p.labels) if p.labels else {}), p.text


_PIECES = [
    "It",
    "arrived",
    "faster",
    "than",
    "usual",
    "because",
    "of",
    "the",
    "storm",
    "3",
    "items",
    "two",
    "days",
    "as",
    "if",
    "we",
    "'ll",
    "{x}",
    "{ n days }",
    "{",
    "}",
    "\ue000",
    ",",
    ".",
    ":",
    "-",
    ")",
    "'",
    "cause",
    "é",
    "😀",
    " ",
    "  ",
    "\t",
    "\n",
    "\xa0",
    "\u2009",
    "\u3000",
    "\x85",
    "\x1c",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.sampled_from(_PIECES), max_size=16).map("".join), min_size=1, max_size=4))
def test_offsets_from_the_chunk_layout_equal_spacy_offsets_and_spans_equal_the_reference(shipped, texts):
    from guard.freetext._fast import _NonSpace
    from guard.freetext.featurize import prepare

    ling = shipped.prepare()
    norms = [prepare(t) for t in texts]
    chars = _NonSpace([n.text for n in norms])  # offsets in the prepared text, mapped back below
    for k, (text, lexes) in enumerate(zip(texts, ling.fast_lexes(texts))):
        lens = [len(x.text) for x in lexes]
        assert chars.count[k] == sum(lens), text
        before = np.cumsum([0] + lens[:-1]) if lens else np.zeros(0, dtype=np.intp)
        found = chars.offsets(np.full(len(lens), k), before, np.ones(len(lens), dtype=bool)).tolist()
        assert [norms[k].original(s, s + 1)[0] for s in found] == [s for _, s, _ in ling.tokens(text)], text
    for p in shipped.predict(texts):
        assert p.spans == (_reference_spans(shipped, p.text, p.labels) if p.labels else {}), p.text
    _assert_both_paths_agree(shipped, texts)


def _assert_both_paths_agree(clf, texts):
    """Columns and spans (of every label) drawn text by text equal those drawn in bulk."""
    from guard.freetext._fast import gather_bulk, spans_bulk

    with clf._guard():
        batch = clf._batch(texts)
        each = clf._gather_each(batch.ids.tolist(), batch.starts.tolist(), batch.lexes, {})
        bulk = gather_bulk(clf, batch.ids, batch.starts, batch.lexes, {})
        assert each[0].tolist() == bulk[0].tolist() and list(each[1]) == bulk[1].tolist()
        codes = np.full(len(texts), (1 << len(clf.labels)) - 1, dtype=np.intp)
        assert clf._spans_each(texts, batch, codes) == spans_bulk(clf, texts, batch, codes)


def test_text_by_text_and_bulk_paths_agree_on_the_corpus(shipped, corpus_examples):
    texts = [e.text for e in corpus_examples] + ["", "   ", "{a}{b}", "  Faster\tthan {x} ,  because . "]
    assert len(texts) >= shipped.BULK
    _assert_both_paths_agree(shipped, texts)


def test_no_whitespace_lies_beyond_the_table_of_spaces():
    from guard.freetext._fast import _NonSpace

    _NonSpace(["a"])
    assert len(_NonSpace._SPACE) == 0x3002 and not any(chr(c).isspace() for c in range(0x3001, 0x110000))


def test_window_cache_reset_changes_no_prediction(monkeypatch):
    """A long-running process starts its window cache afresh past a bound; predictions must not notice."""
    from guard.freetext import load
    from guard.freetext._fast import _Windows

    texts = [
        "It arrived faster than usual.",
        "Your order {order_id} has 3 items.",
        "Because of the storm, deliveries are late.",
        "Thanks for your patience.",
    ] * 3
    reference = load().predict(texts)
    clf = load()
    monkeypatch.setattr(_Windows, "LIMIT", 5)
    out = []
    for t in texts:
        out += clf.predict([t])
        assert len(clf._windows) <= 5 + 40
    assert [(r.labels, r.scores, r.spans) for r in out] == [(r.labels, r.scores, r.spans) for r in reference]


def _reference_scores(clf, text):
    """Log-odds as the model is defined: the featurizer's features of the text, looked up one by one."""
    from collections import Counter

    ling = clf.prepare()
    lexes = next(iter(ling.lexes([text])))
    counts = Counter(clf.vocabulary[f] for f in ling.features(lexes, frozenset(clf.groups)) if f in clf.vocabulary)
    z = clf.intercept.astype(np.float64).copy()
    for col, n in counts.items():
        z += n * clf.weights[col].astype(np.float64)
    return z


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.sampled_from(_PIECES), max_size=16).map("".join), min_size=1, max_size=20))
def test_window_cache_columns_and_both_score_paths_equal_the_featurizer_reference(shipped, texts):
    """The window cache (_fast._Windows) yields the featurizer's columns, and scores drawn text by text
    (under BULK texts) or in bulk equal the plain sum of those columns' weights."""
    from collections import Counter

    ling = shipped.prepare()
    with shipped._guard():
        for text, lexes in zip(texts, ling.fast_lexes(texts)):
            slow = Counter(
                shipped.vocabulary[f]
                for f in ling.features(lexes, frozenset(shipped.groups))
                if f in shipped.vocabulary
            )
            assert Counter(shipped._columns(lexes)) == slow, text
    reference = np.array([_reference_scores(shipped, t) for t in texts])
    each = np.vstack([shipped.decision_function(texts[i : i + 3]) for i in range(0, len(texts), 3)])
    bulk = shipped.decision_function(texts * (shipped.BULK // len(texts) + 1))[: len(texts)]
    np.testing.assert_allclose(each, reference, rtol=0, atol=1e-9)
    np.testing.assert_allclose(bulk, reference, rtol=0, atol=1e-9)


def test_lazy_state_is_built_by_prepare_not_by_reading_attributes():
    """Loading builds nothing; a public entry point (through prepare()) builds the caches once,
    later calls reuse them."""
    from guard.freetext import load

    clf = load()
    assert "_ling" not in vars(clf) and "_windows" not in vars(clf)
    clf.predict_proba([])
    assert "_ling" in vars(clf)
    clf = load()
    ling = clf.prepare()
    windows = clf._windows
    assert clf.prepare() is ling and clf._windows is windows
    assert clf._label_sets()[0] == () and clf._label_sets()[-1] == clf.labels
    assert clf._label_index() == {lab: j for j, lab in enumerate(clf.labels)}


def _plain_window(w, a, b, x):
    """A window's columns and flags as first defined: unigram, bigram, trigram, then the short pattern
    matches ending on x in the matcher's order; LONG where a long pattern may start on a."""
    from guard.freetext.featurize import BOS, COND, EOS, LEAD, LONG, tri_feature

    cols = w.unigram_columns(x) if x is not EOS else ()
    cols += w.bigram_columns(b, x)
    if w.trigrams and b is not BOS and x is not EOS:
        col = w.vocabulary.get(tri_feature(a, b, x))
        cols += () if col is None else (col,)
    if w.patterns and x is not EOS:
        for name, _ in w.matcher.ending(a.m, b.m, x.m):
            cols += w.pattern_columns(name)
    flags = x.flags & (COND | LEAD)
    if w.patterns and a.m[3] and w.matcher.may_start_long(a.m, b.m, x.m):
        flags |= LONG
    return cols, flags


def _assert_windows_are_plain(clf, texts):
    from guard.freetext.featurize import BOS, EOS

    ling = clf.prepare()
    w = clf._windows
    with clf._guard():
        clf._batch(texts)
        for lexes in ling.fast_lexes(texts):
            seq = [BOS, BOS, *lexes, EOS]
            for key in zip(seq, seq[1:], seq[2:]):
                i = w[key]
                assert (w.cols[i], w.flags[i]) == _plain_window(w, *key), [x.text for x in lexes]


def test_shared_windows_hold_the_columns_in_the_plain_order_on_the_corpus(shipped, corpus_examples):
    """Windows whose first lexeme adds nothing share their pair's id; every window still holds exactly the
    columns, in the order (which fixes how the scores are summed and which evidence wins a tie), and the
    flags of the plain definition."""
    _assert_windows_are_plain(shipped, [e.text for e in corpus_examples])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.sampled_from(_PIECES), max_size=16).map("".join), min_size=1, max_size=8))
def test_shared_windows_hold_the_columns_in_the_plain_order(shipped, texts):
    _assert_windows_are_plain(shipped, texts)


def test_predictions_equal_the_featurizer_reference_on_the_whole_corpus(shipped, corpus_examples):
    """Every corpus sentence, also behind an opener: the fast path's scores equal the plain sum of the
    featurizer's feature weights, and its labels are those scores' decisions (spans: see
    test_spans_equal_the_reference_computation_on_the_whole_corpus)."""
    texts = [e.text for e in corpus_examples] + ["Update: " + e.text for e in corpus_examples[::2]]
    preds = shipped.predict(texts)
    reference = np.array([_reference_scores(shipped, t) for t in texts])
    np.testing.assert_allclose(shipped.decision_function(texts), reference, rtol=0, atol=1e-9)
    t = np.clip(shipped.thresholds, 1e-12, 1 - 1e-12)
    decided = reference >= np.log(t / (1 - t))
    assert [p.labels for p in preds] == [tuple(lab for lab, on in zip(shipped.labels, row) if on) for row in decided]
    scores = np.array([[p.scores[lab] for lab in shipped.labels] for p in preds])
    np.testing.assert_allclose(scores, 1 / (1 + np.exp(-np.clip(reference, -500, 500))), rtol=0, atol=1e-9)


def test_saved_and_loaded_model_keeps_vocabulary_weights_and_predictions(shipped, corpus_examples, tmp_path):
    """The vocabulary travels as one JSON list (a joblib load of a 27,000-key dict took 36 ms); a save and
    a load change no feature, column, weight or prediction."""
    from guard.freetext.model import save

    path = tmp_path / "again.joblib"
    card = {k: v for k, v in shipped.card.items() if k != "model_file"}
    save(shipped, path, card)
    again = load(path)
    assert list(again.vocabulary.items()) == list(shipped.vocabulary.items())
    for name in ("weights", "intercept", "thresholds"):
        a, b = getattr(again, name), getattr(shipped, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert (again.labels, again.groups, again.lexicon) == (shipped.labels, shipped.groups, shipped.lexicon)
    assert "vocabulary_json" in shipped.__getstate__() and "vocabulary" not in shipped.__getstate__()
    texts = [e.text for e in corpus_examples[::7]]
    assert [tuple(p) for p in again.predict(texts)] == [tuple(p) for p in shipped.predict(texts)]


def test_a_model_file_is_joblib_and_round_trips(shipped, tmp_path):
    """models/ promises joblib files: what save writes joblib reads back, predicting alike."""
    import joblib

    from guard.freetext.model import save

    path = tmp_path / "again.joblib"
    save(shipped, path, {k: v for k, v in shipped.card.items() if k != "model_file"})
    raw = joblib.load(path)
    text = ["It arrived faster than usual because of the storm, on Friday, with 3 items."]
    assert type(raw).__name__ == "FreeTextClassifier"
    assert tuple(load(path).predict(text)[0]) == tuple(shipped.predict(text)[0])


def test_a_corrupt_model_file_is_a_model_error(shipped, tmp_path):
    from guard.freetext.model import file_sha256, save

    path = tmp_path / "corrupt.joblib"
    save(shipped, path, {k: v for k, v in shipped.card.items() if k != "model_file"})
    path.write_bytes(path.read_bytes()[:40])
    card = json.loads(card_path(path).read_text())
    card["model_file"]["sha256"] = file_sha256(path)
    card_path(path).write_text(json.dumps(card))
    with pytest.raises(ModelError, match="cannot be read"):
        load(path)


def test_a_model_pickled_with_its_vocabulary_as_a_dict_still_loads(shipped):
    from guard.freetext.model import FreeTextClassifier

    state = shipped.__getstate__()
    del state["vocabulary_json"]
    state["vocabulary"] = dict(shipped.vocabulary)
    old = FreeTextClassifier.__new__(FreeTextClassifier)
    old.__setstate__(state)
    assert old.vocabulary == shipped.vocabulary
    text = ["It arrived faster than usual because of the storm."]
    assert old.predict(text)[0].scores == shipped.predict(text)[0].scores


def test_a_vocabulary_listing_a_feature_twice_is_refused(shipped):
    from guard.freetext.model import FreeTextClassifier

    state = shipped.__getstate__()
    state["vocabulary_json"] = json.dumps(["bias", "w=a", "w=a"])
    with pytest.raises(ModelError, match="twice"):
        FreeTextClassifier.__new__(FreeTextClassifier).__setstate__(state)


def test_weights_that_do_not_fit_the_vocabulary_are_refused(tmp_path, shipped):
    from guard.freetext.model import file_sha256, read_model_file, save, write_model_file

    path = tmp_path / "bad.joblib"
    save(shipped, path, {k: v for k, v in shipped.card.items() if k != "model_file"})
    bad = read_model_file(path)
    bad.weights = bad.weights[:-1]
    write_model_file(bad, path)
    card = json.loads(card_path(path).read_text())
    card["model_file"]["sha256"] = file_sha256(path)
    card_path(path).write_text(json.dumps(card))
    with pytest.raises(ModelError, match="do not fit"):
        load(path)


def test_json_lines_equal_to_json_line_for_line_on_the_corpus_and_odd_scores(shipped, corpus_examples):
    """``guard classify`` prints json_lines(): each line the very text of ``Prediction.to_json`` (and so of
    ``json.dumps(to_dict())``); batches it cannot round at once go through to_json itself."""
    from guard.freetext.model import json_lines

    preds = shipped.predict([e.text for e in corpus_examples] + ['Tab\t"q" \\ \u2028 café 😀', "", "{slot}"])
    assert json_lines(preds) == [json.dumps(p.to_dict(), ensure_ascii=False) for p in preds]
    assert json_lines([]) == []
    p = preds[0]
    ties = [0.00005, 0.00015, 0.12345, 0.99995, 0.5, 0.0, 1.0, 1e-300, 5e-324, 0.0001, 0.9999499999999999]
    odd = [p._replace(scores=dict(zip(shipped.labels, ties[k : k + 4]))) for k in range(len(ties) - 3)]
    odd += [p._replace(scores={"causal": float("nan")}), p._replace(scores={"100%": 0.25})]
    odd += [p._replace(scores={"causal": 2.5}), p._replace(scores={"causal": -0.0}), p._replace(scores={})]
    odd += [p._replace(scores={"causal": np.float64(0.123456)}), p._replace(scores={"causal": 1})]
    for group in [odd[:8], odd[8:9], odd[9:10], odd[10:11], odd[11:12], odd[12:13], odd[13:14], odd[14:], odd]:
        assert json_lines(group) == [q.to_json() for q in group]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=40))
def test_scores_rounded_at_once_equal_round_and_repr(values):
    from guard.freetext.model import _rounded_reprs

    assert _rounded_reprs(np.array(values), values) == [float.__repr__(round(v, 4)) for v in values]


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=9999), st.sampled_from([-2, -1, 0, 1, 2]))
def test_scores_next_to_a_half_ten_thousandth_equal_round_and_repr(k, ulps):
    """The hard cases: values within a few units in the last place of k + 0.5 ten-thousandths."""
    from guard.freetext.model import _rounded_reprs

    v = (k + 0.5) / 10000
    for _ in range(abs(ulps)):
        v = np.nextafter(v, 2.0 if ulps > 0 else -1.0)
    v = min(max(float(v), 0.0), 1.0)
    assert _rounded_reprs(np.array([v]), [v]) == [float.__repr__(round(v, 4))]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(max_size=80), max_size=20))
def test_json_lines_equal_to_json_on_arbitrary_unicode(shipped, texts):
    from guard.freetext.model import json_lines

    preds = shipped.predict(texts)
    assert json_lines(preds) == [json.dumps(p.to_dict(), ensure_ascii=False) for p in preds]


def test_a_batch_looked_up_in_one_pass_gives_the_windows_of_each_text_alone(shipped, corpus_examples):
    """_batch lays a batch's texts out in one sequence; its window ids and starts equal those of each text
    looked up alone (_window_ids, the reference), empty texts and texts of one chunk included."""
    from guard.freetext.featurize import prepare

    texts = ["", "Faster.", "   "] + [e.text for e in corpus_examples[:200]] + ["", "{x}", "a b c"]
    ling = shipped.prepare()
    with shipped._guard():
        for group in (texts, texts[:1], texts[1:2], texts[:3]):
            prepared = [prepare(t).text for t in group]
            batch = shipped._batch(prepared)
            alone = [shipped._window_ids(lexes) for lexes in ling.fast_lexes(prepared, prepared=True)]
            assert batch.ids.tolist() == [i for ids in alone for i in ids]
            assert batch.starts.tolist() == list(np.cumsum([0] + [len(ids) for ids in alone[:-1]])) if alone else []

"""lexicon.yaml holds words, never YAML 1.1 booleans (bare no/on/off/yes), and old models still load."""

from __future__ import annotations

import pytest
import yaml

from guard.errors import ModelError
from guard.freetext.lexicon import Lexicon, _check_words, default_lexicon


def test_shipped_lexicon_has_no_booleans_among_its_words():
    _check_words(default_lexicon())


@pytest.mark.parametrize(
    "text",
    [
        "classes: {NEG: [not, no]}\npatterns: {}",
        "classes: {}\npatterns: {P: [[{LOWER: {IN: [up, on]}}]]}",
        "classes: {}\npatterns: {P: [[{LOWER: no}, {LOWER: more}]]}",
    ],
)
def test_bare_yaml_booleans_are_rejected_when_the_file_is_read(text):
    with pytest.raises(ModelError, match="quote no/on/off/yes"):
        _check_words(yaml.safe_load(text))


def test_flags_stay_booleans_and_a_stored_lexicon_with_booleans_still_compiles():
    _check_words(yaml.safe_load("classes: {}\npatterns: {P: [[{IS_ALPHA: true, _: {guard_slot: false}}]]}"))
    legacy = yaml.safe_load("classes: {NEG: [not, no]}\npatterns: {P: [[{LOWER: {IN: [off]}}]]}")
    lex = Lexicon.from_data(legacy)  # a model saved before the check carries this form
    assert "false" in lex.classes["NEG"]

"""The lean model file reader against ``joblib.load``, its reference: the same object, or a NotLean and joblib."""

from __future__ import annotations

import copy
from pathlib import Path

import joblib
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from guard.freetext import _modelfile
from guard.freetext.model import FreeTextClassifier, default_model_path, read_model_file

MODEL = default_model_path()


def assert_same(a, b) -> None:
    """Every attribute equal; arrays of the same dtype, shape, values, memory order and writeability."""
    assert type(a) is type(b)
    assert list(vars(a)) == list(vars(b))
    for name, x in vars(a).items():
        y = vars(b)[name]
        if isinstance(x, np.ndarray):
            assert type(x) is type(y) and x.dtype == y.dtype and x.shape == y.shape, name
            if x.dtype.hasobject:
                np.testing.assert_equal(x, y, err_msg=name)
            else:
                assert x.tobytes("A") == y.tobytes("A"), name  # bit for bit (NaN and NaT too)
            for flag in ("C_CONTIGUOUS", "F_CONTIGUOUS", "WRITEABLE", "OWNDATA", "ALIGNED"):
                assert x.flags[flag] == y.flags[flag], (name, flag)
        elif name == "vocabulary":
            assert list(x.items()) == list(y.items())
        else:
            np.testing.assert_equal(x, y, err_msg=name)  # a dict holding an array too


def test_the_shipped_model_reads_as_joblib_reads_it():
    assert_same(_modelfile.read(MODEL), joblib.load(MODEL))


def test_predictions_of_both_readers_are_identical_on_the_whole_corpus(corpus_examples, shipped):
    lean, ref = _modelfile.read(MODEL), joblib.load(MODEL)
    texts = [e.text for e in corpus_examples]
    assert [tuple(p) for p in lean.predict(texts)] == [tuple(p) for p in ref.predict(texts)]
    assert np.array_equal(lean.decision_function(texts), ref.decision_function(texts))


def _dumped(obj, path: Path, compress=3) -> Path:
    joblib.dump(obj, path, compress=compress)
    return path


@pytest.fixture(scope="module")
def plain():
    return joblib.load(MODEL)


@pytest.mark.parametrize(
    "change, compress",
    [
        (None, ("lzma", 3)),  # another compressor
        (None, 0),  # no compression
        (lambda m: setattr(m, "extra", Path("x")), 3),  # a global outside the allowed four
        (lambda m: setattr(m, "extra", np.array([{"a": 1}, None], dtype=object)), 3),  # an object array
        (lambda m: setattr(m, "extra", np.arange(6, dtype=">i4").reshape(2, 3)), 3),  # not native byte order
        (lambda m: m.lexicon.__setitem__("extra", np.arange(3.0)), 3),  # an array inside an attribute
        (lambda m: setattr(m, "extra", np.arange(4.0).view(np.recarray)), 3),  # a subclass
    ],
)
def test_what_the_lean_reader_does_not_cover_is_read_by_joblib(plain, tmp_path, change, compress):
    model = copy.deepcopy(plain)
    if change is not None:
        change(model)
    path = _dumped(model, tmp_path / "m.joblib", compress)
    with pytest.raises(_modelfile.NotLean):
        _modelfile.read(path)
    got, ref = read_model_file(path), joblib.load(path)
    assert_same(got, ref)


@pytest.mark.parametrize("cut", [1, 40, 1000, -1])
def test_a_truncated_or_padded_file_is_not_lean(tmp_path, cut):
    data = MODEL.read_bytes()
    path = tmp_path / "m.joblib"
    path.write_bytes(data[:cut] if cut > 0 else data + b"\x00")
    with pytest.raises(_modelfile.NotLean):
        _modelfile.read(path)


def test_bytes_after_the_pickle_are_not_lean(plain, tmp_path):
    import zlib

    path = _dumped(plain, tmp_path / "m.joblib")
    path.write_bytes(zlib.compress(zlib.decompress(path.read_bytes()) + b"\x00"))
    with pytest.raises(_modelfile.NotLean, match="after the pickle"):
        _modelfile.read(path)


_DTYPES = st.sampled_from(["<f4", "<f8", "<i8", "<i2", "|u1", "|b1", "<c16", "<M8[s]", "|S3", "<U2"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    arrays=st.lists(
        st.tuples(
            _DTYPES.flatmap(lambda d: hnp.arrays(np.dtype(d), hnp.array_shapes(min_dims=0, max_dims=3, min_side=0))),
            st.booleans(),
        ),
        max_size=4,
    ),
    level=st.integers(1, 9),
)
def test_arrays_of_any_plain_dtype_shape_and_order_read_as_joblib_reads_them(tmp_path, arrays, level):
    model = FreeTextClassifier(("a",), [0.5], {"bias": 0}, np.zeros((1, 1)), [0.0], (), {})
    for k, (a, fortran) in enumerate(arrays):
        setattr(model, f"extra{k}", np.asfortranarray(a) if fortran else a)
    path = _dumped(model, tmp_path / "h.joblib", level)
    assert_same(_modelfile.read(path), joblib.load(path))

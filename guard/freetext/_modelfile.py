"""A lean reader of the model file that :func:`guard.freetext.model.write_model_file` writes with joblib.

``joblib.load`` is the reference. Importing joblib pulls in its parallel machinery (asyncio, multiprocessing,
loky, psutil: about 85 ms, 0.17 G instructions), and it unpickles with Python's pure-Python unpickler (50 ms
for the shipped model): together a tenth of ``guard classify``'s gap to a process that only tokenizes.

The file is one zlib stream holding a pickle in which each numpy array is a ``NumpyArrayWrapper`` (its dtype,
shape and order) followed, right after the wrapper's BUILD opcode, by a padding length byte, that many
padding bytes and the array's raw bytes. Python's C unpickler reads exactly what each opcode asks for from a
stream without ``peek``, so a stand-in wrapper can read the array bytes in its ``__setstate__``; the arrays
then replace the wrappers among the classifier's attributes. Anything beyond that subset (another
compressor, a global other than the four below, an object or non-native dtype, an array elsewhere than an
attribute) raises :class:`NotLean`, and the caller reads the file with joblib instead.
"""

from __future__ import annotations

import io
import pickle
import zlib
from pathlib import Path
from typing import Any

import numpy as np

#: The globals the shipped model's pickle names (besides the stand-in for joblib's array wrapper).
_ALLOWED = {("numpy", "dtype"), ("numpy", "ndarray"), ("guard.freetext.model", "FreeTextClassifier")}
_WRAPPER = ("joblib.numpy_pickle", "NumpyArrayWrapper")
_ZLIB_PREFIX = b"\x78"  # joblib's test for its zlib compressor (compressor.py)


class NotLean(Exception):
    """The file is outside what :func:`read` handles; joblib reads it."""


def read(path: str | Path) -> Any:
    """The object in a joblib file written with zlib compression, read without importing joblib."""
    raw = Path(path).read_bytes()
    if not raw.startswith(_ZLIB_PREFIX):
        raise NotLean("not a zlib stream")
    inflate = zlib.decompressobj()
    try:
        data = inflate.decompress(raw)
    except zlib.error as exc:
        raise NotLean(str(exc)) from None
    if not inflate.eof or inflate.unused_data:
        raise NotLean("not a single zlib stream")
    stream = io.BytesIO(data)
    made: list[_Array] = []

    class Array(_Array):
        def __setstate__(self, state: dict[str, Any]) -> None:
            self.array = _read_array(stream, state)
            made.append(self)

    class Unpickler(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            if (module, name) == _WRAPPER:
                return Array
            if (module, name) in _ALLOWED:
                return super().find_class(module, name)
            raise NotLean(f"the pickle names {module}.{name}")

    try:
        obj = Unpickler(stream).load()
    except NotLean:
        raise
    except Exception as exc:  # a corrupt stream: joblib reports it in its own words
        raise NotLean(f"{type(exc).__name__}: {exc}") from None
    if stream.read(1):
        raise NotLean("bytes after the pickle")
    attrs = getattr(obj, "__dict__", {})
    replaced = 0
    for key, value in attrs.items():
        if isinstance(value, Array):
            attrs[key] = value.array
            replaced += 1
    if replaced != len(made):
        raise NotLean("an array outside the object's attributes")
    return obj


class _Array:
    """Stand-in for joblib's ``NumpyArrayWrapper``."""

    array: np.ndarray


def _read_array(stream: io.BytesIO, state: dict[str, Any]) -> np.ndarray:
    """What ``NumpyArrayWrapper.read_array`` reads for an array of a plain dtype in native byte order."""
    dtype, shape, order = state.get("dtype"), state.get("shape"), state.get("order")
    if (
        not isinstance(dtype, np.dtype)
        or dtype.hasobject
        or not dtype.isnative
        or state.get("subclass") is not np.ndarray
        or order not in ("C", "F")
        or not isinstance(shape, tuple)
    ):
        raise NotLean(f"an array joblib reads itself: {dtype!r}, {order!r}")
    if state.get("numpy_array_alignment_bytes") is not None:  # joblib >= 1.2 pads before the data
        pad = stream.read(1)
        if len(pad) != 1 or len(stream.read(pad[0])) != pad[0]:
            raise NotLean("truncated padding")
    count = int(np.prod(shape, dtype=np.int64))
    array = np.empty(count, dtype=dtype)
    if stream.readinto(array.view(np.uint8).data) != array.nbytes:
        raise NotLean("truncated array data")
    return array.reshape(shape[::-1]).transpose() if order == "F" else array.reshape(shape)
